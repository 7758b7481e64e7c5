"""Prometheus/OpenMetrics metrics for ``--metrics HOST:PORT`` (shared/CONTRACT.md "Metrics").

Nothing is counted on the hot path. The live loop runs each ``Monitor.step()`` through
``MetricsHub.step`` (a lock around the step, and a look at each source's event count), and
its output through ``MetricsHub.observe`` (action records, and ``hung_process`` findings,
which the action loop makes outside the monitor). At scrape time the collector takes the
lock, reads the monitor's current state into a frozen ``MetricsSnapshot`` and releases it;
the exposition is written from the snapshot by ``prometheus_client`` (``metrics_server``,
imported only when an exporter is started). A scrape that cannot get the lock within
``SCRAPE_WAIT_SECONDS`` (a step reading a large backlog) is answered from the previous
snapshot.

Per-session series (``clawwatch_session_*{session_key,agent}``) exist only for sessions
with an event within ``lookback_seconds`` that have not ended (state ``done``), at most
``max_sessions`` of them (the worst and most recent first); the rest are summed into one
series labelled ``session_key="_other"``. Label values come from data models wrote: they
are redacted (a scrape is stored by Prometheus, and the shipped alert rules forward
``session_key`` to Alertmanager), go through ``monitor.display.printable`` (no control or
bidi character survives) and are clipped to ``LABEL_CHARS``; two that redact or clip alike
get a ``~N`` suffix so no scrape ever holds a duplicate series, which each keeps while it has
its own series (``SessionLabels``).

Counters only go up while the process runs, as ``increase()`` and ``rate()`` need: an agent
keeps the ``agent`` label it was first given (``AgentLabels``), what a session counted stays
with the agent it had then (``Tally``; findings are counted by the monitor under the agent
of the moment), and a counter series, once exported, is never dropped.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from monitor.display import printable
from monitor.records import ActionRecord, FindingRecord, Record
from monitor.redaction import redacted_start
from monitor.snapshot import STATES
from monitor.snapshot_builder import SnapshotBuilder

LEVEL_VALUE = {"warning": 1, "critical": 2}
OTHER = "_other"
LABEL_CHARS = 128
MAX_AGENTS = 200                # distinct agent label values; the rest are summed as "_other"
SCRAPE_WAIT_SECONDS = 2.0
DEFAULT_MAX_SESSIONS = 500
DEFAULT_LOOKBACK_SECONDS = 900.0


def label(value: object) -> str:
    """A label value from data: redacted, printable, at most ``LABEL_CHARS`` characters."""
    text = printable(redacted_start("" if value is None else str(value), LABEL_CHARS))
    return text if len(text) <= LABEL_CHARS else text[:LABEL_CHARS - 1] + "…"


# ------------------------------------------------------------------ the snapshot


@dataclass(frozen=True, slots=True)
class SessionSample:
    session_key: str
    agent: str
    level: int                  # 0 ok, 1 warning, 2 critical
    tokens: int
    burn_per_minute: float
    budget: int | None
    tool_calls: int


@dataclass(frozen=True, slots=True)
class SourceSample:
    kind: str
    sources: int
    events: int
    errors: int
    backlog_bytes: int
    last_event: float | None


@dataclass(frozen=True)
class MetricsSnapshot:
    taken_at: float
    findings: dict[tuple[str, str, str], int] = field(default_factory=dict)
    actions: dict[tuple[str, str], int] = field(default_factory=dict)
    dry_run_actions: dict[str, int] = field(default_factory=dict)
    states: dict[str, int] = field(default_factory=dict)
    sessions: tuple[SessionSample, ...] = ()
    other: SessionSample | None = None
    other_count: int = 0
    active: int = 0
    tokens: dict[str, int] = field(default_factory=dict)
    tool_calls: dict[str, int] = field(default_factory=dict)
    sources: tuple[SourceSample, ...] = ()
    polls: int = 0
    last_poll: float | None = None
    build_seconds: float = 0.0


class MetricsHub:
    """Between the live loop (``step``, ``observe``) and the exporter (``snapshot``)."""

    def __init__(self, monitor, *, max_sessions: int = DEFAULT_MAX_SESSIONS,
                 lookback_seconds: float = DEFAULT_LOOKBACK_SECONDS,
                 clock: Callable[[], float] = time.time) -> None:
        self.monitor = monitor
        self.max_sessions = max_sessions
        self.lookback_seconds = lookback_seconds
        self.clock = clock
        self.lock = threading.Lock()
        self._counts_lock = threading.Lock()
        self._actions: Counter = Counter()
        self._dry_run: Counter = Counter()
        self._outside_findings: Counter = Counter()   # hung_process, from the action loop
        self._source_events: dict[int, int] = {}
        self._last_event: dict[str, float] = {}
        self._last_poll: float | None = None
        self._polls = 0
        self._current: dict[str, tuple[tuple, list, int]] = {}
        self._agents = AgentLabels()
        self._future = FutureStamps()
        self._session_labels = SessionLabels()
        self._tokens = Tally()
        self._tool_calls = Tally()
        self._outside_tally = Tally()
        self._last: MetricsSnapshot | None = None

    # ------------------------------------------------------------- the loop's side

    def step(self) -> list[Record]:
        """``monitor.step()`` under the lock; notes which sources produced events."""
        with self.lock:
            records = self.monitor.step()
            now = self.clock()
            for source in self.monitor.sources.sources:
                if source.events > self._source_events.get(id(source), 0):
                    self._source_events[id(source)] = source.events
                    self._last_event[source.kind] = now
            self._last_poll = now
            self._polls += 1
        return records

    def observe(self, records: Iterable[Record]) -> None:
        """Count action records and findings made outside the monitor."""
        with self._counts_lock:
            for record in records:
                if isinstance(record, ActionRecord):
                    if record.dry_run:
                        self._dry_run[record.action] += 1
                    else:
                        self._actions[(record.action, "true" if record.ok else "false")] += 1
                elif isinstance(record, FindingRecord) and record.detector == "hung_process":
                    self._outside_findings[(record.session_id or "", "hung_process",
                                            record.level)] += 1

    def wrap_emit(self, emit: Callable[[list[Record]], None]
                  ) -> Callable[[list[Record]], None]:
        def emit_observed(records: list[Record]) -> None:
            emit(records)
            if records:
                self.observe(records)
        return emit_observed

    # ------------------------------------------------------------- the scrape's side

    def snapshot(self, wait: float = SCRAPE_WAIT_SECONDS) -> MetricsSnapshot:
        """The current state (the previous snapshot when the loop holds the lock longer
        than ``wait``)."""
        if not self.lock.acquire(timeout=wait):
            return self._last or MetricsSnapshot(taken_at=self.clock())
        try:
            snap = self._build()
        finally:
            self.lock.release()
        self._last = snap
        return snap

    def _build(self) -> MetricsSnapshot:
        started = time.perf_counter()
        monitor = self.monitor
        now = self.clock()
        if monitor is None:         # the dashboard's ingest thread has not made it yet
            return MetricsSnapshot(taken_at=now)
        engine = monitor.engine
        states: Counter = Counter(dict.fromkeys(STATES, 0))
        sessions = monitor.sessions
        agents = self._agents.of(sessions.values(), monitor.finding_counts)
        tokens, tool_calls = self._tokens.begin(), self._tool_calls.begin()
        self._future.begin()
        candidates = []
        current_of = monitor.key_to_session
        for state in sessions.values():
            if not (state.key or state.tool_calls or state.assistant_messages):
                continue
            agent = agents.get(state.agent_id, OTHER)
            tokens.credit(state.session_id, state.tokens_total, agent)
            tool_calls.credit(state.session_id, state.tool_calls, agent)
            last = state.last_ts
            if last is not None and last > now:
                last = self._future.seen_at(state.session_id, last, now)
            idle = None if last is None else float(int(now - last))
            current, level = self._current_findings(state)
            name = SnapshotBuilder._state_of(state, current, idle)
            states[name] += 1
            if name == "done" or idle is None or idle > self.lookback_seconds:
                continue
            if state.key and current_of.get(state.key, state.session_id) != state.session_id:
                continue            # an older generation of a key that has moved on
            candidates.append((level, last, state, idle))
        self._future.end()
        candidates.sort(key=lambda c: (-c[0], -c[1], c[2].key or c[2].session_id))
        tokens.end()
        tool_calls.end()
        pairs = self._session_labels.of(
            [(c[2].key or c[2].session_id, agents.get(c[2].agent_id, OTHER))
             for c in candidates[:self.max_sessions]])
        kept, other = [], None
        for index, (level, _, state, idle) in enumerate(candidates):
            burn = engine.burn(state.session_id) if engine is not None else None
            rate = burn.tokens_per_minute if burn is not None and idle <= \
                burn.window_seconds else 0.0
            budget = burn.budget if burn is not None else None
            if index < self.max_sessions:
                pair = pairs[index]
                kept.append(SessionSample(pair[0], pair[1], level, state.tokens_total, rate,
                                          budget, state.tool_calls))
            elif other is None:
                other = SessionSample(OTHER, OTHER, level, state.tokens_total, rate, None,
                                      state.tool_calls)
            else:
                other = SessionSample(OTHER, OTHER, max(other.level, level),
                                      other.tokens + state.tokens_total,
                                      other.burn_per_minute + rate, None,
                                      other.tool_calls + state.tool_calls)
        findings: Counter = Counter()
        for (agent_id, detector, level_name), count in monitor.finding_counts.items():
            findings[(label(detector), label(level_name), agents.get(agent_id, OTHER))] += count
        with self._counts_lock:
            outside = list(self._outside_findings.items())
            actions = dict(self._actions)
            dry_run = dict(self._dry_run)
        outside_tally = self._outside_tally.begin()
        for (session_id, detector, level_name), count in outside:
            state = sessions.get(session_id)
            agent = agents.get(state.agent_id if state is not None else "", OTHER)
            outside_tally.credit((session_id, detector, level_name), count,
                                 (detector, label(level_name), agent))
        outside_tally.end()
        for key, count in outside_tally.totals.items():
            findings[key] += count
        return MetricsSnapshot(
            taken_at=now, findings=dict(findings), actions=actions, dry_run_actions=dry_run,
            states=dict(states), sessions=tuple(kept), other=other,
            other_count=max(0, len(candidates) - self.max_sessions), active=len(candidates),
            tokens=dict(tokens.totals), tool_calls=dict(tool_calls.totals),
            sources=self._sources(), polls=self._polls, last_poll=self._last_poll,
            build_seconds=time.perf_counter() - started)

    def _current_findings(self, state) -> tuple[list, int]:
        """The session's current findings and worst level, cached until it changes."""
        version = (state.findings_total, state.tool_calls, state.last_ts)
        cached = self._current.get(state.session_id)
        if cached is not None and cached[0] == version:
            return cached[1], cached[2]
        current = state.current_findings()
        level = max((LEVEL_VALUE.get(f.level, 0) for f in current), default=0)
        self._current[state.session_id] = (version, current, level)
        return current, level

    def _sources(self) -> tuple[SourceSample, ...]:
        by_kind: dict[str, list] = {}
        for source in self.monitor.sources.sources:
            row = by_kind.setdefault(source.kind, [0, 0, 0, 0])
            row[0] += 1
            row[1] += source.events
            row[2] += source.errors
            row[3] += int(getattr(source, "backlog_bytes", 0) or 0)
        return tuple(SourceSample(label(kind), *row, self._last_event.get(kind))
                     for kind, row in sorted(by_kind.items()))


class AgentLabels:
    """The label value of each agent id, fixed once given: agents take their own label in the
    order they are first seen (the heaviest by tokens first among those seen together) until
    ``MAX_AGENTS`` have one; every later agent is summed as ``_other``. An agent never moves in
    or out of ``_other``, so no counter series loses what it counted to another."""

    def __init__(self) -> None:
        self._of: dict[str, str] = {}
        self._taken: set[tuple[str, ...]] = set()

    def of(self, sessions: Iterable, finding_counts: Iterable[tuple[str, str, str]]
           ) -> dict[str, str]:
        """The labels, after giving one to each agent of ``sessions`` and ``finding_counts``
        seen for the first time, while some are left."""
        given = self._of
        if len(given) >= MAX_AGENTS:
            return given
        tokens: Counter = Counter()
        for state in sessions:
            if state.agent_id not in given:
                tokens[state.agent_id] += state.tokens_total
        for agent_id, _, _ in finding_counts:
            if agent_id not in given:
                tokens[agent_id] += 0
        for agent in sorted(tokens, key=lambda agent: (-tokens[agent], agent)):
            if len(given) >= MAX_AGENTS:
                break
            given[agent] = _unique((label(agent),), self._taken)[0]
        return given


class SessionLabels:
    """The ``(session_key, agent)`` label values of each session with its own series, kept
    while it has one: of two sessions whose keys redact or clip alike, each keeps its ``~N``
    suffix whichever ranks first, so a series never passes from one to the other between
    scrapes. Remembers only the sessions of the last scrape (at most ``max_sessions``)."""

    def __init__(self) -> None:
        self._given: dict[tuple[str, str], tuple[str, str]] = {}

    def of(self, sessions: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """The label pair of each ``(session key or id, agent label)``: the one it had at
        the previous scrape when still free, else a new unique one."""
        given, kept, seen = self._given, {}, set()
        pairs: list = [None] * len(sessions)
        for index, session in enumerate(sessions):
            pair = given.get(session)
            if pair is not None and pair not in seen:
                seen.add(pair)
                pairs[index] = kept[session] = pair
        for index, session in enumerate(sessions):
            if pairs[index] is None:
                pairs[index] = kept[session] = _unique((label(session[0]), session[1]), seen)
        self._given = kept
        return pairs


class FutureStamps:
    """When each session whose last event is stamped ahead of the clock (a host clock set
    ahead, or data that lies) was last seen to change: its last event is taken to be from
    then, so it ages out of the per-session series ``lookback_seconds`` after it went quiet
    instead of never. Remembers only the sessions of the last scrape that were ahead."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[float, float]] = {}
        self._next: dict[str, tuple[float, float]] = {}

    def begin(self) -> None:
        self._next = {}

    def seen_at(self, session_id: str, last_ts: float, now: float) -> float:
        """The time ``session_id``'s future ``last_ts`` stands for: when it was first seen."""
        seen = self._seen.get(session_id)
        since = seen[1] if seen is not None and seen[0] == last_ts else now
        self._next[session_id] = (last_ts, since)
        return since

    def end(self) -> None:
        self._seen, self._next = self._next, {}


class Tally:
    """Counter series that only go up while what they sum moves between them: each source
    (a session) adds its growth since the previous scrape to the series it belongs to now, so
    a session changing agent, or dropped, never takes back what was counted. One scrape:
    ``begin``, ``credit`` each source, ``end`` (sources not credited are forgotten)."""

    def __init__(self) -> None:
        self.totals: Counter = Counter()
        self._counted: dict = {}
        self._next: dict = {}

    def begin(self) -> Tally:
        self._next = {}
        return self

    def credit(self, source, value: int, series) -> None:
        counted = self._counted.get(source, 0)
        if value > counted:
            self.totals[series] += value - counted
            counted = value
        self._next[source] = counted

    def end(self) -> None:
        self._counted, self._next = self._next, {}


def _unique(labels: tuple[str, ...], seen: set) -> tuple[str, ...]:
    """``labels``, its first value suffixed ``~2``, ``~3``… until unseen (and not the
    aggregate's own ``_other``); then marked seen."""
    candidate, n = labels, 1
    while candidate in seen or candidate[0] == OTHER:
        n += 1
        suffix = f"~{n}"
        candidate = (labels[0][:LABEL_CHARS - len(suffix)] + suffix, *labels[1:])
    seen.add(candidate)
    return candidate

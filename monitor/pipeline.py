"""The headless core: sources → per-session state → detectors → output records.

``Monitor.step()`` polls every source once, folds the events into per-session
state, runs the detectors and returns output records (plain dicts in the
shape of shared/CONTRACT.md's watch lines). ``replay`` and ``watch`` and the
dashboard all drive this same object.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime

from monitor.detect.findings import Finding
from monitor.events import (
    COUNTED_TYPES,
    TRANSCRIPT_EVENT_TYPES,
    AssistantMessage,
    CountedHistory,
    GatewayNotice,
    SessionInfo,
    SourceError,
    SourceNotice,
    ToolCall,
    UserMessage,
    count_tool,
)
from monitor.records import (
    ErrorRecord,
    FindingRecord,
    NoticeRecord,
    Record,
    SessionRecord,
    ToolCallRecord,
)
from monitor.redaction import bounded, redacted_cut
from monitor.run_index import RunIndex
from monitor.session_state import SessionState
from monitor.sources.base import ERROR_SAMPLES_KEPT, sample_order
from monitor.sources.sourceset import SourceSet
from monitor.sources.transcript_light import CountOnly

# Runs whose session is remembered, to place gateway lines that name only their run.
RUNS_KEPT = 4096
# Seconds between two sweeps of the engine for idle sessions to hibernate (``step``).
HIBERNATE_EVERY = 60.0


def _first_samples(samples: list[dict]) -> list[dict]:
    """The first ``ERROR_SAMPLES_KEPT`` samples by place (``sample_order``), as a source
    keeps its own: the same whichever shards of a replay found them."""
    return sorted(samples, key=lambda sample: (sample_order(sample["path"], sample["where"]),
                                               sample["message"]))[:ERROR_SAMPLES_KEPT]


def history_cutoff(config, now: float | None = None) -> float | None:
    """``Monitor.detect_since`` for a live monitor: ``now`` less ``history.active_within``."""
    within = config.history.active_within
    return None if within is None else (time.time() if now is None else now) - within


def iso(ts: float | None) -> str:
    moment = datetime.fromtimestamp(ts, UTC) if ts else datetime.now(UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Monitor:
    """Folds source events into sessions and findings.

    ``engine`` is anything with ``observe(session_key, agent_id, event) ->
    list[Finding]`` (the detection engine); ``None`` runs without detection.
    While ``quiet`` is set, tool calls and findings update state without
    producing output records (used to catch up on history before going live).
    """

    def __init__(self, sources: SourceSet, engine=None, *, runs_kept: int | None = None,
                 detect_since: float | None = None) -> None:
        self.sources = sources
        self.engine = engine
        #: Transcript events older than this (epoch seconds) are counted, not run through
        #: the detectors, unless their session's index says it is running: the history of a
        #: board or ``watch`` is its tokens and counts, and its loops are long over. None:
        #: every event is detected on (``replay``).
        self.detect_since = detect_since
        self.sessions: dict[str, SessionState] = {}
        set_count_only = getattr(sources, "set_count_only", None)
        if detect_since is not None and set_count_only is not None:
            set_count_only(CountOnly(detect_since, self._session_is_history))
        self.key_to_session: dict[str, str] = {}
        self.run_to_session = RunIndex(runs_kept or RUNS_KEPT)
        self._quiet = False
        #: ``reported_before(event)``: a resumed ``watch`` reported it before it stopped
        #: (``monitor.restart``); folded like the rest, without output records.
        self.reported_before: Callable[[object], bool] | None = None
        self._quiet_event = False
        self.polls = 0
        self.internal_errors = 0        # records skipped because folding one raised
        self.internal_error_samples: list[dict] = []    # ``_first_samples``, for the document
        #: Every finding ever added, by ``(agent_id, detector, level)`` of its session when it
        #: was added (for ``--metrics``: a count never moves to another agent when its session
        #: is adopted, changes agent or is dropped).
        self.finding_counts: Counter[tuple[str, str, str]] = Counter()
        #: Sessions known only from the log by their key (``log:<key>``), to be taken over
        #: by the session an index names under that key.
        self._log_only_keys = 0
        self._swept_at = float("-inf")

    # ------------------------------------------------------------------ public

    @property
    def quiet(self) -> bool:
        """Fold without output records (a catch-up). The sources are told: history read
        while quiet may come summed (``CountedHistory``)."""
        return self._quiet

    @quiet.setter
    def quiet(self, quiet: bool) -> None:
        self._quiet = quiet
        note_quiet = getattr(self.sources, "note_quiet", None)
        if note_quiet is not None:
            note_quiet(quiet)

    def step(self) -> list[Record]:
        """Poll every source once; return the output records it produced."""
        self.polls += 1
        records = self.fold(self.sources.poll())
        self.hibernate_idle()
        return records

    def hibernate_idle(self, now: float | None = None, *, force: bool = False) -> int:
        """At most once every ``HIBERNATE_EVERY`` seconds (or when ``force``d), let the
        engine reduce its idle sessions to summaries; sessions the index says are running
        stay awake. The number hibernated."""
        sweep = getattr(self.engine, "hibernate_idle", None)
        now = time.time() if now is None else now
        if sweep is None or (not force and now - self._swept_at < HIBERNATE_EVERY):
            return 0
        self._swept_at = now
        sessions = self.sessions
        return sweep(now, lambda sid: getattr(sessions.get(sid), "status", None) == "running")

    def fold(self, events: list) -> list[Record]:
        """Fold ``events`` (what a poll of the sources returned); the output records."""
        records: list[Record] = []
        quiet, reported_before = self.quiet, self.reported_before
        fold_transcript = self._fold_transcript
        for event in events:
            self._quiet_event = quiet or (reported_before is not None
                                          and reported_before(event))
            try:
                if type(event) in TRANSCRIPT_EVENT_TYPES:
                    fold_transcript(event, records)
                else:
                    self._fold(event, records)
            except Exception as exc:    # one record the code cannot take loses only itself
                self.internal_errors += 1
                error = ErrorRecord(
                    ts=iso(None), source="internal",
                    path=getattr(event, "origin", "") or type(event).__name__, where="",
                    message=f"this record was skipped: {type(exc).__name__}: "
                            f"{redacted_cut(str(exc), 200)}")
                self.internal_error_samples = _first_samples(
                    [*self.internal_error_samples,
                     {"path": error.path, "where": "", "message": error.message}])
                records.append(error)
        return records

    def still_current(self, now: float) -> list[FindingRecord]:
        """The findings that a quiet catch-up raised without output and that still hold at
        ``now``: of each session still under way (``SessionState.under_way_at``), its
        current findings (``SessionState.current_findings``), the newest of each detector
        and pattern, oldest first, marked ``caught_up``. What a loop under way when a watch
        started would have reported had the watch been running, so it is neither missed
        nor left to a policy that never sees it."""
        records = []
        for state in self.sessions.values():
            if not state.findings or not state.under_way_at(now):
                continue
            newest = {(f.detector, f.pattern): f for f in state.current_findings()}
            records += [FindingRecord.of(finding, ts=iso(finding.ts), key=state.key,
                                         session_id=state.session_id, caught_up=True)
                        for finding in newest.values()]
        records.sort(key=lambda record: (record.ts or "", record.key or ""))
        return records

    def internal_summary(self) -> dict | None:
        """The records skipped because folding them raised, as a source entry of the replay
        document (``kind`` ``internal``); None when there were none."""
        if not self.internal_errors:
            return None
        return {"kind": "internal", "path": "", "events": 0, "errors": self.internal_errors,
                "error_samples": _first_samples(self.internal_error_samples)}

    def report(self) -> dict:
        """The replay document of shared/CONTRACT.md."""
        sessions = sorted(self.sessions.values(), key=lambda s: (s.key or s.session_id,
                                                                 s.first_ts or 0))
        internal = self.internal_summary()
        return {
            "sources": self.sources.summaries() + ([internal] if internal else []),
            "sessions": [s.as_json() for s in sessions if s.key or s.tool_calls
                         or s.assistant_messages],
        }

    # ----------------------------------------------------------------- folding

    def _session(self, session_id: str, agent_id: str = "") -> SessionState:
        state = self.sessions.get(session_id)
        if state is None:
            state = SessionState(session_id, agent_id=agent_id)
            self.sessions[session_id] = state
        return state

    def _transcript_session(self, session_id: str, origin: str) -> SessionState:
        """A session no index named (yet), first read in a transcript: of the agent whose
        dir holds it."""
        agent_of = getattr(self.sources, "agent_of", None)
        return self._session(session_id, agent_of(origin) if agent_of is not None else "")

    def _fold(self, event, records: list[Record]) -> None:
        if isinstance(event, SessionInfo):
            self._fold_session(event, records)
        elif isinstance(event, (SourceError, SourceNotice)):
            records.append(self._source_record(event))
        elif isinstance(event, GatewayNotice):
            self._fold_notice(event, records)
        elif isinstance(event, CountedHistory):
            self._fold_counted(event)
        else:
            self._fold_transcript(event, records)

    def _fold_session(self, info: SessionInfo, records: list[Record]) -> None:
        state = self._session(info.session_id, info.agent_id)
        before = (state.key, state.status)
        is_current = self.key_to_session.get(info.key) in (None, info.session_id) \
            or info.origin.find("#node:") >= 0
        state.key = info.key
        if state.known_from or self._log_only_keys:
            self._adopt_log_only(state)
        state.agent_id = info.agent_id or state.agent_id
        state.source = info.source or state.source
        state.model = bounded(info.model) or state.model
        state.label = bounded(info.label) or state.label
        if info.status and (is_current or state.status is None):
            state.status = info.status
        state.aborted_last_run = info.aborted_last_run or state.aborted_last_run
        counts = (info.input_tokens, info.output_tokens, info.total_tokens)
        if any(count is not None for count in counts):
            given_in, given_out = info.input_tokens or 0, info.output_tokens or 0
            state.index_tokens = (given_in, given_out, info.total_tokens
                                  if info.total_tokens is not None else given_in + given_out)
        if info.run_id:
            state.run_id = info.run_id
            self.run_to_session.note(info.run_id, info.session_id)
        if "#node:" in info.origin or info.key not in self.key_to_session:
            self.key_to_session[info.key] = info.session_id
        if (state.key, state.status) != before:
            records.append(SessionRecord(
                ts=iso(info.updated_at), key=state.key, session_id=state.session_id,
                agent_id=state.agent_id, status=state.status, model=state.model,
                label=state.label, aborted_last_run=state.aborted_last_run))

    def _fold_transcript(self, event, records: list[Record]) -> None:
        state = self.sessions.get(event.session_id)
        if state is None:
            state = self._transcript_session(event.session_id, event.origin)
        state.touch(getattr(event, "ts", None))
        state.from_transcript = True
        if state.known_from:
            state.known_from = None
        run_id = getattr(event, "run_id", None)
        if run_id:
            self.run_to_session.note(run_id, event.session_id, replace=False)
        kind = type(event)
        if kind is ToolCall:
            state.tool_calls += 1
            count_tool(state.tools, event.name)
            if not self._quiet_event:
                records.append(ToolCallRecord(
                    ts=iso(event.ts), key=state.key, session_id=state.session_id,
                    agent_id=state.agent_id, call_id=event.call_id, name=event.name,
                    at_call=state.tool_calls, run_id=event.run_id))
        elif kind is AssistantMessage:
            state.assistant_messages += 1
            state.tokens_input += event.usage.input
            state.tokens_output += event.usage.output
            state.tokens_total += event.usage.total
            state.cost += event.usage.cost
            state.model = bounded(event.model) or state.model
            if event.is_error:
                state.errors += 1
        elif kind is UserMessage and run_id:
            state.run_id = run_id
        if kind in COUNTED_TYPES and event.counted_only:
            return
        if self.detect_since is not None and self.only_counts(event):
            return
        self._detect(state, event, records)

    def _fold_counted(self, counted: CountedHistory) -> None:
        """Fold ``counted`` as its events would be folded quietly, one by one."""
        sid = counted.session_id
        state = self.sessions.get(sid)
        if state is None:
            state = self._transcript_session(sid, counted.origin)
        state.touch(counted.first_ts)
        state.touch(counted.last_ts)
        state.from_transcript = True
        state.known_from = None
        for run_id in counted.run_ids:
            self.run_to_session.note(run_id, sid, replace=False)
        state.tool_calls += counted.tool_calls
        for name, calls in counted.tools.items():
            count_tool(state.tools, name, calls)
        state.assistant_messages += counted.assistant_messages
        state.tokens_input += counted.tokens_input
        state.tokens_output += counted.tokens_output
        state.tokens_total += counted.tokens_total
        for cost in counted.costs:
            state.cost += cost
        state.model = counted.model or state.model
        state.errors += counted.errors
        if counted.user_run_id:
            state.run_id = counted.user_run_id

    def only_counts(self, event) -> bool:
        """``event`` is counted, not run through the detectors: it was read only to be
        counted, or it is older than ``detect_since`` and its session is not running."""
        if getattr(event, "counted_only", False):
            return True
        ts = getattr(event, "ts", None)
        if self.detect_since is None or ts is None or ts >= self.detect_since:
            return False
        state = self.sessions.get(event.session_id)
        return state is None or state.status != "running"

    def _session_is_history(self, session_id: str) -> bool:
        """The session's entries before ``detect_since`` are only counted, and none of its
        entries since then has been read (``transcript_light``)."""
        state = self.sessions.get(session_id)
        return state is None or (state.status != "running" and (
            state.last_ts is None or state.last_ts < self.detect_since))

    def _fold_notice(self, notice: GatewayNotice, records: list[Record]) -> None:
        sid = notice.session_id if notice.session_id in self.sessions else None
        if sid is None and notice.run_id:
            sid = self.run_to_session.get(notice.run_id)
        if sid is None and notice.session_key:
            sid = self.key_to_session.get(notice.session_key)
        if sid is None:
            self._fold_unindexed_notice(notice, records)
            return
        self._detect(self.sessions[sid], notice, records)

    def _fold_unindexed_notice(self, notice: GatewayNotice, records: list[Record]) -> None:
        """A line naming a session no index or transcript has shown: what the engine finds
        in it (only OpenClaw's own loop lines count) is raised on the session the line
        names, in a session state known only from the log (``known_from == "log"``), keyed
        by the line's sessionId or, without one, ``log:<sessionKey>``."""
        if self.engine is None:
            return
        for finding in self.engine.observe(notice.session_key or "", notice.agent_id or "",
                                           notice):
            sid = finding.session_id or f"log:{finding.session_key}"
            state = self.sessions.get(sid)
            if state is None:
                state = SessionState(sid, key=finding.session_key,
                                     agent_id=notice.agent_id or "", known_from="log")
                self.sessions[sid] = state
                if not finding.session_id:
                    self._log_only_keys += 1
                records.append(SessionRecord(
                    ts=iso(notice.ts), key=state.key, session_id=state.session_id,
                    agent_id=state.agent_id, status=None, model=None, label=None,
                    aborted_last_run=False, known_from="log"))
            state.touch(notice.ts)
            self._add_finding(state, finding, records)

    def _adopt_log_only(self, state: SessionState) -> None:
        """``state`` is now known from an index or a transcript: it takes over the findings
        of the session known only from the log under its key."""
        state.known_from = None
        orphan = self.sessions.get(f"log:{state.key}") if state.key else None
        if orphan is not None and orphan is not state and orphan.known_from == "log":
            del self.sessions[orphan.session_id]
            self._log_only_keys -= 1
            for finding in orphan.findings:
                state.add_finding(finding)
            state.touch(orphan.first_ts)
            state.touch(orphan.last_ts)

    def _detect(self, state: SessionState, event, records: list[Record]) -> None:
        if self.engine is None:
            return
        for finding in self.engine.observe(state.key or state.session_id, state.agent_id, event):
            self._add_finding(state, finding, records)

    def _add_finding(self, state: SessionState, finding: Finding, records: list[Record]
                     ) -> None:
        state.add_finding(finding)
        self.finding_counts[(state.agent_id, finding.detector, finding.level)] += 1
        if not self._quiet_event:
            records.append(FindingRecord.of(finding, ts=iso(finding.ts), key=state.key,
                                            session_id=state.session_id))

    @staticmethod
    def _source_record(event) -> ErrorRecord | NoticeRecord:
        if isinstance(event, SourceError):
            return ErrorRecord(ts=iso(None), source=event.source, path=event.path,
                               where=event.where, message=event.message)
        return NoticeRecord(ts=iso(None), source=event.source, path=event.path,
                            message=event.message)

"""Builds the dashboard's ``Snapshot`` (``monitor.snapshot``) from a ``Monitor``.

Headless (no textual, no rich): the dashboard's ingest thread owns a
``SnapshotBuilder``, folds each ``Monitor.step()`` into it and hands the
frozen ``Snapshot`` to the UI, which only renders it. Time comes from an
injected clock, so the same data and clock give the same snapshot.

``SnapshotFeed`` (``monitor.snapshot_feed``) sits between the ``SourceSet`` and the
``Monitor`` and keeps the gateway-log tail and the tool-call timelines.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import replace

from monitor.detect.findings import LEVEL_RANK, LOOP_DETECTORS, Finding
from monitor.detect.status import BurnStatus, PingPongPair, StreakStatus
from monitor.display import printable
from monitor.records import (
    ActionRecord,
    ErrorRecord,
    FindingRecord,
    NoticeRecord,
    Record,
    redacted,
)
from monitor.redaction import bounded_output, clip, known_secrets
from monitor.shown import shown_redacted, shown_repeated
from monitor.snapshot import (
    AlertEntry,
    BoardRow,
    BurnLine,
    FocusDetail,
    Snapshot,
    SourceLine,
)
from monitor.snapshot_feed import SnapshotFeed

IDLE_AFTER_SECONDS = 30.0       # no event for this long: idle (or stalled while a run is active)
STALL_AFTER_SECONDS = 120.0     # a run the index calls active, silent this long: stalled
ALERTS_KEPT = 1000
TOP_BURNERS = 3
#: The records the builder folds.
ABSORBED = (FindingRecord, ActionRecord, ErrorRecord, NoticeRecord)


def shown_idle(seconds: float | None) -> float | None:
    """Whole ``seconds`` idle as a row keeps them: exact under three minutes (past every
    idle time a state depends on), then cut to the minute, and past a day to the hour,
    which is all a board shows of them. So an unchanged session's row is made again when
    its idle time shows differently, not every second: most rows of a large state dir are
    days old."""
    if seconds is None or seconds < STALL_AFTER_SECONDS + 60:
        return seconds
    return seconds - seconds % (60 if seconds < 86400 else 3600)


def _with_idle(row: BoardRow, idle: float | None, state: str) -> BoardRow:
    """``replace(row, idle_seconds=idle, state=state)``, about twice as fast: every row of an
    unchanged session gets it once a second, 10,000 rows a build on a large state dir."""
    return BoardRow(row.session_id, row.key, row.label, row.agent, row.model, state,
                    row.tool_calls, row.tokens_in, row.tokens_out, row.burn_per_minute,
                    row.budget_percent, row.worst_detector, row.worst_level, row.worst_count,
                    row.last_ts, idle, row.alerts, row.tokens_from, row.source)


def _shown_streak(status: StreakStatus) -> StreakStatus:
    """``status`` with its tool name (the model's choice: it can hold a token) redacted,
    for the streaks pane, which cuts it to a column."""
    return status if status.tool is None else replace(status, tool=shown_redacted(status.tool))


def _shown_pair(pair: PingPongPair) -> PingPongPair:
    """``pair`` with both tool names redacted, for the ping-pong pane."""
    return replace(pair, tool_a=shown_redacted(pair.tool_a), tool_b=shown_redacted(pair.tool_b))


def _shown_finding(finding: Finding) -> Finding:
    """``finding`` with its message and tool redacted (messages name the tool), for the
    detail view's latest finding."""
    return replace(finding, message=bounded_output(finding.message),
                   tool=None if finding.tool is None else shown_redacted(finding.tool))


def _worst(findings: Iterable[Finding]) -> Finding | None:
    return max(findings, key=lambda f: (LEVEL_RANK.get(f.level, 0), f.ts or 0, f.count),
               default=None)


class SnapshotBuilder:
    """Folds monitor output records into alerts and builds ``Snapshot``s on demand.

    ``expected`` names the inputs the dashboard was pointed at as ``(label, path,
    hint)``; one that is missing shows in the status line with its hint.
    """

    def __init__(self, monitor, clock: Callable[[], float], *,
                 expected: Iterable[tuple[str, str | None, str]] = ()) -> None:
        self.monitor = monitor
        self.clock = clock
        self.expected = tuple(expected)
        engine = monitor.engine
        self.feed = SnapshotFeed(monitor.sources, keyed_by_engine=engine is not None)
        self.feed.is_history = monitor.only_counts
        if engine is not None:
            engine.outcome_listener = self.feed.outcome_known
        monitor.sources = self.feed
        self.alerts: deque[AlertEntry] = deque(maxlen=ALERTS_KEPT)
        self.focus: str | None = None
        #: How long a build reads the focused session's history for its timeline (None: to
        #: the end); the ingest loop reads the rest between its polls.
        self.history_step_seconds: float | None = None
        self.scanning = True
        self.watch_error: str | None = None
        self._alert_seq = 0
        self._seq = 0
        self._errors: dict[str, tuple[int, str]] = {}
        self._notices: dict[str, str] = {}
        self._rows: dict[str, tuple[tuple, BoardRow, list[Finding]]] = {}
        #: Each session's label as shown, with what it was shown from (``_label``).
        self._labels: dict[str, tuple[str, tuple[str, ...], str]] = {}

    # ------------------------------------------------------------- folding

    def absorb(self, records: Iterable[Record]) -> list[AlertEntry]:
        """Fold one step's output records; return the alerts they added."""
        added = []
        for record in records:
            if not isinstance(record, ABSORBED):
                continue                    # session and tool_call records: nothing to show
            key = getattr(record, "key", None) or ""
            record = redacted(record)       # the alerts pane and status line: secrets masked
            if isinstance(record, FindingRecord):
                added.append(self._alert("finding", record.level, key,
                                         record.session_id or "", record.detector,
                                         record.count, record.tool, record.message, None))
            elif isinstance(record, ActionRecord):
                added.append(self._alert("action", "action", key, "",
                                         record.action or "action", 0, None,
                                         f"{'ok' if record.ok else 'FAILED'}: {record.detail}",
                                         None))
            elif isinstance(record, ErrorRecord):
                path = record.path or ""
                count, _ = self._errors.get(path, (0, ""))
                self._errors[path] = (count + 1, f"{record.where or ''} {record.message}")
            else:
                self._notices[record.path or ""] = record.message
        return added

    def _alert(self, kind, level, key, session_id, detector, count, tool, message, ts,
               history=False) -> AlertEntry:
        self._alert_seq += 1
        entry = AlertEntry(self._alert_seq, ts if ts is not None else self.clock(), kind,
                           level, key, session_id, shown_redacted(detector), count,
                           None if tool is None else shown_redacted(tool),
                           printable(message), history)
        self.alerts.append(entry)
        return entry

    def finish_scan(self, still_current: list[FindingRecord] = ()) -> None:
        """The first scan is over: its findings become history alerts (they never ring),
        but for ``still_current`` (``Monitor.still_current``), which come after them as
        alerts that arrive now."""
        live = {(r.session_id, r.detector, r.level, r.at_call, r.count) for r in still_current}
        found = [(f, s) for s in self.monitor.sessions.values() for f in s.findings]
        found.sort(key=lambda pair: (pair[0].ts or 0, pair[1].key))
        history, current = [], []
        for finding, state in found:
            key = (state.session_id, finding.detector, finding.level, finding.at_call,
                   finding.count)
            (current if key in live else history).append((finding, state))
        for finding, state in history[-ALERTS_KEPT:]:
            self._finding_alert(finding, state, history=True)
        for finding, state in current:
            self._finding_alert(finding, state, history=False)
        self.scanning = False

    def _finding_alert(self, finding: Finding, state, *, history: bool) -> None:
        self._alert("finding", finding.level, state.key or finding.session_key,
                    state.session_id, finding.detector, finding.count, finding.tool,
                    bounded_output(finding.message), finding.ts, history)

    # ------------------------------------------------------------- building

    def build(self) -> Snapshot:
        self._seq += 1
        now = self.clock()
        rows = tuple(self._row(s, now) for s in self.monitor.sessions.values()
                     if s.key or s.tool_calls or s.assistant_messages)
        burners = sorted((r for r in rows if r.burn_per_minute > 0),
                         key=lambda r: (-r.burn_per_minute, r.key))[:TOP_BURNERS]
        feed = self.feed
        return Snapshot(
            seq=self._seq, taken_at=now, rows=rows, focus=self._focus(),
            top_burners=tuple(self._burn_line(r.session_id, r.label) for r in burners),
            alerts=tuple(self.alerts), log=tuple(feed.log), sources=self._sources(),
            scanning=self.scanning, scan_done=feed.released, scan_total=feed.read,
            scan_bytes_left=getattr(feed, "backlog_bytes", 0) if self.scanning else 0,
            events=feed.released)

    def _burn(self, session_id: str) -> BurnStatus | None:
        engine = self.monitor.engine
        return engine.burn(session_id) if engine is not None else None

    def _row(self, state, now: float) -> BoardRow:
        """The board row of ``state``; unchanged sessions reuse their previous row (only
        the idle time as shown (``shown_idle``) and the state that depends on it are
        refreshed)."""
        idle = None if state.last_ts is None else \
            shown_idle(float(int(max(0.0, now - state.last_ts))))
        version = (state.tool_calls, state.assistant_messages, state.findings_total,
                   state.last_ts, state.status, state.key, state.label, state.model,
                   state.aborted_last_run, state.agent_id, state.tokens_input,
                   state.index_tokens, state.source)
        cached = self._rows.get(state.session_id)
        if cached is not None and cached[0] == version:
            _, row, current = cached
            if row.idle_seconds != idle:
                row = _with_idle(row, idle, self._state_of(state, current, idle))
                self._rows[state.session_id] = (version, row, current)
            return row
        current = state.current_findings()
        worst = _worst(current)
        burn = self._burn(state.session_id)
        tokens_in, tokens_out, tokens_total = state.token_counts()
        budget_percent = burn.percent if burn else None
        if burn is not None and burn.budget and (state.tokens_from == "index"
                                                 or not burn.total_tokens):
            # the index's totals (no transcript), or history counted without detector state
            budget_percent = tokens_total * 100.0 / burn.budget
        row = BoardRow(
            session_id=state.session_id, key=state.key or state.session_id,
            label=self._label(state),
            agent=shown_repeated(state.agent_id or ""), model=shown_repeated(state.model or ""),
            state=self._state_of(state, current, idle),
            tool_calls=state.tool_calls, tokens_in=tokens_in, tokens_out=tokens_out,
            burn_per_minute=burn.tokens_per_minute if burn else 0.0,
            budget_percent=budget_percent, tokens_from=state.tokens_from,
            worst_detector=worst.detector if worst else None,
            worst_level=worst.level if worst else None, worst_count=worst.count if worst else 0,
            last_ts=state.last_ts, idle_seconds=idle, alerts=state.findings_total,
            source=shown_repeated(state.source or "openclaw", 20))
        self._rows[state.session_id] = (version, row, current)
        return row

    def _label(self, state) -> str:
        """``shown_redacted`` of the session's label, redacted again only when the label or the
        registered secrets changed: a session's row is rebuilt each time its history grows,
        and redacting its label is most of that."""
        label = state.label or state.key or state.session_id[:8]
        known = known_secrets()
        remembered = self._labels.get(state.session_id)
        if remembered is not None and remembered[0] == label and remembered[1] is known:
            return remembered[2]
        text = shown_redacted(label)
        self._labels[state.session_id] = (label, known, text)
        return text

    @staticmethod
    def _state_of(state, current: list[Finding], idle: float | None) -> str:
        ended = state.ended_state()
        if ended is not None:
            return ended
        if any(f.detector in LOOP_DETECTORS for f in current):
            return "looping"
        if idle is None or idle <= IDLE_AFTER_SECONDS:
            return "running"
        if state.status == "running":
            return "stalled" if idle > STALL_AFTER_SECONDS else "running"
        return "idle"

    def _burn_line(self, session_id: str, label: str) -> BurnLine:
        burn = self._burn(session_id)
        if burn is None:
            return BurnLine(session_id, label, 0.0, (), 0, None, None, None)
        return BurnLine(session_id, label, burn.tokens_per_minute,
                        tuple(rate for _, rate in burn.series), burn.total_tokens, burn.budget,
                        burn.percent, burn.eta_seconds)

    def _focus(self) -> FocusDetail | None:
        state = self.monitor.sessions.get(self.focus) if self.focus else None
        if state is None:
            return None
        self.feed.load_history(state.session_id, self.history_step_seconds)
        engine = self.monitor.engine
        sid = state.session_id
        marks: dict[int, list[tuple[str, str]]] = {}
        for finding in state.findings:
            if finding.at_call:
                marks.setdefault(finding.at_call, []).append((finding.detector, finding.level))
        line = self.feed.timelines.get(sid)
        timeline = tuple(c.freeze(tuple(marks.get(c.index, ()))) for c in line.calls) \
            if line else ()
        label = shown_redacted(state.label or state.key or sid[:8])
        return FocusDetail(
            session_id=sid, label=label,
            streaks=tuple(_shown_streak(s) for s in engine.streaks(sid)) if engine else (),
            pairs=tuple(_shown_pair(p) for p in engine.pingpong_pairs(sid)) if engine else (),
            burn=self._burn_line(sid, label), timeline=timeline,
            findings=tuple(_shown_finding(f) for f in state.findings),
            history_read=self.feed.reading_history)

    def _sources(self) -> tuple[SourceLine, ...]:
        lines: list[SourceLine] = []
        summaries = self.feed.summaries()
        for label, path, hint in self.expected:
            if not path:
                lines.append(SourceLine(label, False, f"{label}: not found — {hint}"))
            elif not os.path.exists(path):
                lines.append(SourceLine(label, False,
                                        printable(f"{label}: missing {path} — {hint}")))
        for summary in summaries:
            path = summary["path"]
            name = summary["kind"] if summary["kind"] != "gateway-log" else "gateway log"
            errors, last = self._errors.get(path, (summary["errors"], ""))
            text = f"{name} {os.path.basename(path)}: {summary['events']:,} events"
            notice = self._notices.get(path, "")
            if errors:
                text += f", {errors} unreadable ({clip(last, 80)})"
            elif notice and ("removed" in notice or "waiting" in notice):
                text += f" ({notice})"
            lines.append(SourceLine(name, not errors, printable(text)))
        if self.watch_error:
            lines.append(SourceLine("watch", False, printable(self.watch_error)))
        return tuple(lines)

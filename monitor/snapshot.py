"""An immutable picture of everything the dashboard shows: the ``Snapshot`` and its parts.

Headless (no textual, no rich): the dashboard's ingest thread builds one from a ``Monitor``
(``monitor.snapshot_builder``) and hands it to the UI, which only renders it.

Every string here that is only shown (labels, agent, model, tool names, arguments,
outcomes, messages, log lines, source lines) has been through ``display.printable``: it
holds no character a terminal acts on. Session keys and ids are identities the UI acts
on (stop, kill, acknowledge) and stay exactly as the data spelled them; the UI shows
them through ``printable`` too.
"""

from __future__ import annotations

from dataclasses import dataclass

from monitor.detect.findings import Finding
from monitor.detect.status import PingPongPair, StreakStatus
from monitor.snapshot_feed import LogLine, TimelineEntry

#: The states a board row can be in (``BoardRow.state``).
STATES = ("running", "idle", "stalled", "looping", "stopped", "done")


@dataclass(frozen=True, slots=True)
class BoardRow:
    session_id: str
    key: str
    label: str
    agent: str
    model: str
    state: str
    tool_calls: int
    tokens_in: int
    tokens_out: int
    burn_per_minute: float
    budget_percent: float | None
    worst_detector: str | None
    worst_level: str | None
    worst_count: int
    last_ts: float | None
    #: Since the last event (``shown_idle``: to the second under three minutes, then to the
    #: minute, past a day to the hour).
    idle_seconds: float | None
    alerts: int
    #: "index": the tokens are the session index's totals (no transcript usage read).
    tokens_from: str = "transcript"
    #: Which tool wrote the session: "openclaw", "claude-code" or "codex" (printable).
    source: str = "openclaw"


@dataclass(frozen=True, slots=True)
class AlertEntry:
    """A finding, an action or a source error, numbered in arrival order (``seq``)."""

    seq: int
    ts: float | None
    kind: str                   # finding | action
    level: str                  # warning | critical | action
    session_key: str
    session_id: str
    detector: str
    count: int
    tool: str | None
    message: str
    history: bool = False       # read during the first scan: never rings the bell


@dataclass(frozen=True, slots=True)
class BurnLine:
    session_id: str
    label: str
    rate: float
    series: tuple[float, ...]
    total: int
    budget: int | None
    percent: float | None
    eta_seconds: float | None


@dataclass(frozen=True, slots=True)
class FocusDetail:
    """What the side panes and the detail screen show for the selected session."""

    session_id: str
    label: str
    streaks: tuple[StreakStatus, ...]
    pairs: tuple[PingPongPair, ...]
    burn: BurnLine
    timeline: tuple[TimelineEntry, ...]
    findings: tuple[Finding, ...]
    #: Calls read so far while the session's history is read for its timeline (None: not
    #: reading).
    history_read: int | None = None


@dataclass(frozen=True, slots=True)
class SourceLine:
    label: str
    ok: bool
    text: str


@dataclass(frozen=True)
class Snapshot:
    seq: int
    taken_at: float
    rows: tuple[BoardRow, ...] = ()
    focus: FocusDetail | None = None
    top_burners: tuple[BurnLine, ...] = ()
    alerts: tuple[AlertEntry, ...] = ()
    log: tuple[LogLine, ...] = ()
    sources: tuple[SourceLine, ...] = ()
    scanning: bool = True
    scan_done: int = 0
    scan_total: int = 0
    scan_bytes_left: int = 0
    events: int = 0

    def row(self, session_id: str | None) -> BoardRow | None:
        return next((r for r in self.rows if r.session_id == session_id), None)

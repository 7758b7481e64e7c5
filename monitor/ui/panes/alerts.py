"""Alerts: findings and actions across sessions, newest first, filtered by level (and by
source when the view has a source filter).

The pane follows like ``tail -f``: while its cursor is on the first row, new alerts
arrive at the top under the cursor. Once the person moves down, the cursor and the
screen hold their row, and the title counts the new alerts above ("▲ 12 new");
back on the first row (Home, or up), it follows again.

Acknowledged alerts lose their dot, and the title says when the bell is muted: the
pane's ``marks`` reactive is bound to the app's ``alert_marks`` and shows them when set.
"""

from __future__ import annotations

from rich.cells import cell_len, get_character_cell_size
from textual.reactive import var

from monitor.display import printable
from monitor.redaction import redacted_tail
from monitor.snapshot import AlertEntry, Snapshot
from monitor.ui.alerting import AlertMarks
from monitor.ui.panes.base import FollowsOwnState, set_title
from monitor.ui.panes.rows import RowsView
from monitor.ui.style import LEVEL_GLYPH, Palette, clock_time, tokens
from monitor.ui.view import ViewState

SHOWN = 300
SHORT_LEVEL = {"critical": "crit", "warning": "warn", "action": "act"}
COLUMNS = (("ack", "", 1), ("time", "Time", 8), ("level", "Level", 6), ("session", "Session", 20),
           ("detector", "Detector", 24), ("message", "Message", 90))


def _tail(text: str, width: int) -> str:
    """The end of ``text`` (where session keys differ) that fits ``width`` cells, marked
    when cut: counted in cells, not characters, or a key of wide characters (CJK, emoji)
    would be cut again from the right by its column and lose the end that tells it apart."""
    if cell_len(text) <= width:
        return text
    start, used = len(text), 1
    while start > 0 and used + get_character_cell_size(text[start - 1]) <= width:
        start -= 1
        used += get_character_cell_size(text[start])
    return "…" + text[start:]


class AlertsPane(FollowsOwnState, RowsView):
    DEFAULT_CLASSES = "pane"

    following: var[bool] = var(True)
    """The cursor is on the newest alert and stays there as new ones arrive."""
    new_above: var[int] = var(0)
    """Alerts above the cursor that arrived since the person left the top."""
    marks: var[AlertMarks] = var(AlertMarks, init=False)
    """Which alerts the person acknowledged, and whether the bell is muted."""

    def __init__(self, **kw) -> None:
        super().__init__(COLUMNS, **kw)
        self.palette: Palette | None = None
        self.seen_seq = 0
        """The newest alert shown at the top when the person last was there."""
        self._title = "Alerts"

    def on_mount(self) -> None:
        self.border_title = "Alerts"

    def watch_marks(self) -> None:
        self.show_again_soon()

    def visible(self, snapshot: Snapshot, view: ViewState) -> list[AlertEntry]:
        sources = view.alert_sources(snapshot.rows)
        return [a for a in reversed(snapshot.alerts) if view.alert_visible(a, sources)][:SHOWN]

    def cells(self, payload: tuple[AlertEntry, bool]):
        alert, is_acked = payload
        palette = self.palette
        assert palette is not None
        style = palette.muted if is_acked else palette.level(
            alert.level, bold=alert.level == "critical")
        what = alert.detector + (f" ×{tokens(alert.count)}" if alert.count else "")
        return ((" " if is_acked else "●", style), (clock_time(alert.ts), palette.muted),
                (f"{LEVEL_GLYPH.get(alert.level, '')} {SHORT_LEVEL.get(alert.level, '')}",
                 style),
                (_tail(printable(redacted_tail(alert.session_key, 20)), 20), style), (what, style),
                (" ".join(alert.message.split()), style))

    def show(self, snapshot: Snapshot, view: ViewState, palette: Palette) -> None:
        self.shown_from = (snapshot, view, palette)
        if palette is not self.palette:
            self.palette = palette
            self.restyle()
        marks = self.marks
        unacked = sum(1 for a in snapshot.alerts if not marks.is_acked(a))
        muted = " · bell muted" if marks.muted else ""
        source = "" if view.source_filter == "all" else f" · source: {view.source_filter}"
        self._title = f"{view.alert_filter}{source} · {unacked} unacknowledged{muted}"
        rows = [(str(a.seq), (a, marks.is_acked(a))) for a in self.visible(snapshot, view)]
        if self.following:
            self.set_rows(rows, keep=rows[0][0] if rows else None)
        else:
            self.set_rows(rows, hold=True)
            self.following = self.cursor == 0
        self._count_new()

    def cursor_moved(self) -> None:
        following = self.cursor == 0
        if following or self.following:
            self.seen_seq = self._top_seq()
        self.following = following
        self._count_new()

    def _top_seq(self) -> int:
        return self.rows[0][1][0].seq if self.rows else 0

    def _count_new(self) -> None:
        if self.following:
            self.seen_seq = max(self.seen_seq, self._top_seq())
            self.new_above = 0
        else:
            self.new_above = sum(1 for _, (alert, _) in self.rows[:self.cursor]
                                 if alert.seq > self.seen_seq)
        self._retitle()

    def _retitle(self) -> None:
        new = f"▲ {self.new_above} new · " if self.new_above else ""
        set_title(self, f"Alerts · {new}{self._title}")

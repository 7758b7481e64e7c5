"""Alerts: findings and actions across sessions, newest first, filtered by level."""

from __future__ import annotations

from monitor.snapshot import AlertEntry, Snapshot
from monitor.ui.alerting import AlertBook
from monitor.ui.panes.base import set_title
from monitor.ui.panes.rows import RowsView
from monitor.ui.style import LEVEL_GLYPH, Palette, clock_time, tokens
from monitor.ui.view import ViewState

SHOWN = 300
SHORT_LEVEL = {"critical": "crit", "warning": "warn", "action": "act"}
COLUMNS = (("ack", "", 1), ("time", "Time", 8), ("level", "Level", 6), ("session", "Session", 20),
           ("detector", "Detector", 24), ("message", "Message", 90))


def _tail(text: str, width: int) -> str:
    """The end of ``text`` (where session keys differ), marked when cut."""
    return text if len(text) <= width else "…" + text[-(width - 1):]


class AlertsPane(RowsView):
    DEFAULT_CLASSES = "pane"

    def __init__(self, book: AlertBook, **kw) -> None:
        super().__init__(COLUMNS, **kw)
        self.book = book
        self.palette: Palette | None = None

    def on_mount(self) -> None:
        self.border_title = "Alerts"

    def visible(self, snapshot: Snapshot, view: ViewState) -> list[AlertEntry]:
        return [a for a in reversed(snapshot.alerts) if view.alert_visible(a)][:SHOWN]

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
                (_tail(alert.session_key, 20), style), (what, style),
                (" ".join(alert.message.split()), style))

    def show(self, snapshot: Snapshot, view: ViewState, palette: Palette) -> None:
        if palette is not self.palette:
            self.palette = palette
            self.restyle()
        unacked = sum(1 for a in snapshot.alerts if not self.book.is_acked(a))
        muted = " · bell muted" if self.book.muted else ""
        set_title(self, f"Alerts · {view.alert_filter} · {unacked} unacknowledged{muted}")
        self.set_rows([(str(a.seq), (a, self.book.is_acked(a)))
                       for a in self.visible(snapshot, view)])

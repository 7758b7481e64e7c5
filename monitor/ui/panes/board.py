"""The sessions board: one row per session, keyed by session id, sorted by the view."""

from __future__ import annotations

from rich.cells import cell_len, set_cell_size
from rich.style import Style

from monitor.display import printable
from monitor.snapshot import BoardRow, Snapshot
from monitor.ui.panes.base import set_title
from monitor.ui.panes.rows import RowsView
from monitor.ui.style import LEVEL_GLYPH, Palette, duration, percent, tokens
from monitor.ui.view import BoardOrder, ViewState

COLUMNS = (
    ("session", "Session", 28), ("source", "Src", 3), ("agent", "Agent", 7),
    ("model", "Model", 11), ("state", "State", 8), ("calls", "Calls", 6), ("in", "In", 7),
    ("out", "Out", 6), ("burn", "Tok/min", 7), ("budget", "Budget", 6),
    ("worst", "Worst finding", 26), ("idle", "Idle", 5),
)
COLUMN_SORT = {"session": "session", "source": "session", "state": "severity",
               "worst": "severity", "calls": "calls", "in": "tokens", "out": "tokens",
               "burn": "burn", "budget": "burn", "idle": "recent"}

#: The source column's short names and the theme variable each is drawn in.
SOURCE_SHORT = {"openclaw": ("OC", "text-primary"), "claude-code": ("CC", "text-accent"),
                "codex": ("CX", "text-secondary")}


def _clip(text: str, width: int) -> str:
    """``text`` cut to ``width`` cells, ``…`` marking a cut: in cells, not characters, or a
    label of wide characters (CJK, emoji) would be cut by its column past the mark and
    read as whole. Measured as shown, every control made visible."""
    text = printable(text)
    if cell_len(text) <= width:
        return text
    return set_cell_size(text, width - 1) + "…"


def row_cells(row: BoardRow) -> tuple[tuple[str, str, str], ...]:
    """(text, style kind, style argument) per column."""
    worst = "-"
    if row.worst_detector:
        worst = f"{LEVEL_GLYPH.get(row.worst_level or '', '')} {row.worst_detector} " \
                f"×{tokens(row.worst_count)}"
    short, variable = SOURCE_SHORT.get(row.source, (_clip(row.source, 3), "foreground-muted"))
    return (
        (_clip(row.label, 28), "level", row.worst_level or ""),
        (short, "source", variable),
        (_clip(row.agent, 7), "muted", ""),
        (_clip(row.model or "-", 11), "muted", ""),
        (row.state, "state", row.state),
        (f"{row.tool_calls:>6}", "plain", ""),
        (f"{tokens(row.tokens_in):>7}", "plain", ""),
        (f"{tokens(row.tokens_out):>6}", "plain", ""),
        (f"{tokens(row.burn_per_minute):>7}", "plain", ""),
        (f"{percent(row.budget_percent):>6}", "budget",
         "critical" if (row.budget_percent or 0) >= 100 else
         "warning" if (row.budget_percent or 0) >= 90 else ""),
        (_clip(worst, 26), "level", row.worst_level or ""),
        (f"{duration(row.idle_seconds):>5}", "muted", ""),
    )


class SessionsBoard(RowsView):
    """Rows keyed by session id, in the view's order; the cursor follows its session."""

    DEFAULT_CLASSES = "pane"

    def __init__(self, **kw) -> None:
        super().__init__(COLUMNS, **kw)
        self.palette: Palette | None = None
        self.total = 0
        self.order = BoardOrder()

    def on_mount(self) -> None:
        self.border_title = "Sessions"

    def cells(self, row: BoardRow):
        return tuple((text, self._style(kind, arg)) for text, kind, arg in row_cells(row))

    def _style(self, kind: str, arg: str) -> Style:
        palette = self.palette
        assert palette is not None
        if kind == "level":
            return palette.level(arg, bold=arg == "critical") if arg else \
                palette.style("foreground")
        if kind == "state":
            return palette.state(arg)
        if kind == "budget":
            return palette.level(arg) if arg else palette.style("foreground")
        if kind == "muted":
            return palette.muted
        if kind == "source":
            return palette.style(arg)
        return palette.style("foreground")

    def show(self, snapshot: Snapshot, view: ViewState, palette: Palette, *,
             follow_top: bool = False) -> None:
        """Render ``snapshot``'s rows in the view's order, the cursor on the selected
        session, or with ``follow_top`` on the first row."""
        if palette is not self.palette:
            self.palette = palette
            self.restyle()
        rows = [(row.session_id, row) for row in self.order.rows(view, snapshot.rows)]
        self.total = len(snapshot.rows)
        count = f"{len(rows)}" if len(rows) == self.total else f"{len(rows)} of {self.total}"
        set_title(self, f"Sessions ({count}) · sort: {view.sort} · filter: {view.board_filter}"
                        f" · source: {view.source_filter}")
        self.set_rows(rows, keep=rows[0][0] if follow_top and rows else view.selected)

    def has(self, session_id: str) -> bool:
        return session_id in self.index

    def highlighted(self) -> str | None:
        """The session under the cursor, if any."""
        return self.cursor_key

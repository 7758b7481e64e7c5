"""``RowsView``: a keyed, cursor-driven table that renders only its visible lines.

Textual's DataTable re-renders every visible cell through Rich whenever any
cell changes, which costs hundreds of milliseconds per refresh at a thousand
live rows. Here a row is a key plus a hashable payload (e.g. a frozen
``BoardRow``); rows are replaced wholesale from the snapshot (cheap to
compare), ``cells(payload)`` turns a payload into ``(text, style)`` cells only
when the row is on screen (cached by payload), and the cursor follows its row
*key* through re-sorts. Cell text is drawn as plain segments (never markup), and
every cell goes through ``display.printable`` first, whatever the subclass put in it.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import ClassVar

from rich.cells import set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from monitor.display import printable

Cell = tuple[str, Style]
Row = tuple[str, Hashable]
CACHE_ROWS = 4096


class RowsView(ScrollView, can_focus=True):
    """Columns are ``(key, label, width)``; line 0 is a header that never scrolls away."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"rows-view--header", "rows-view--cursor"}
    DEFAULT_CSS = """
    RowsView { background: $surface; color: $foreground; }
    RowsView > .rows-view--header { text-style: bold; background: $panel; color: $foreground; }
    RowsView > .rows-view--cursor {
        background: $block-cursor-blurred-background;
        text-style: $block-cursor-blurred-text-style;
    }
    RowsView:focus > .rows-view--cursor {
        background: $block-cursor-background;
        text-style: $block-cursor-text-style;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor(-1)", "Up", show=False),
        Binding("down", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "edge(0)", "First", show=False),
        Binding("end", "edge(1)", "Last", show=False),
        Binding("enter", "select", "Open", show=False),
    ]

    class Highlighted(Message):
        def __init__(self, view: RowsView, key: str) -> None:
            super().__init__()
            self.view, self.key = view, key

        @property
        def control(self) -> RowsView:
            return self.view

    class Selected(Highlighted):
        pass

    class HeaderClicked(Message):
        def __init__(self, view: RowsView, column: str) -> None:
            super().__init__()
            self.view, self.column = view, column

        @property
        def control(self) -> RowsView:
            return self.view

    def __init__(self, columns: tuple[tuple[str, str, int], ...], **kw) -> None:
        super().__init__(**kw)
        self.columns = columns
        self.rows: list[Row] = []
        self.index: dict[str, int] = {}
        self.cursor = 0
        self._line_width = sum(width + 2 for _, _, width in columns)
        self._cells: dict[Hashable, tuple[Cell, ...]] = {}
        self._strips: dict[tuple, Strip] = {}
        self._line_styles: tuple[Style, Style, Style] | None = None

    def cells(self, payload) -> tuple[Cell, ...]:
        """The ``(text, style)`` cells of one row; subclasses format their payloads."""
        return payload

    def cells_of(self, payload) -> tuple[Cell, ...]:
        cached = self._cells.get(payload)
        if cached is None:
            if len(self._cells) >= CACHE_ROWS:
                self._cells.clear()
            cached = self._cells[payload] = tuple(
                (printable(text), style) for text, style in self.cells(payload))
        return cached

    def restyle(self) -> None:
        """Forget formatted rows (the palette changed) and draw again."""
        self._cells.clear()
        self._strips.clear()
        self.refresh()

    # ----------------------------------------------------------------- data

    @property
    def keys(self) -> list[str]:
        return [key for key, _ in self.rows]

    @property
    def cursor_key(self) -> str | None:
        return self.rows[self.cursor][0] if self.rows else None

    def cell(self, key: str, column: str) -> Cell:
        position = next(i for i, (name, _, _) in enumerate(self.columns) if name == column)
        return self.cells_of(self.rows[self.index[key]][1])[position]

    def set_rows(self, rows: list[Row], keep: str | None = None, *, hold: bool = False) -> None:
        """Replace every row; the cursor stays on ``keep`` (default: its current row).

        With ``hold`` the cursor's row also stays on its screen line: rows inserted above
        it scroll the view by as many lines. Only the visible lines whose row or cursor
        mark changed are repainted."""
        keep = keep if keep is not None else self.cursor_key
        if rows == self.rows and (keep is None or self.cursor_key == keep):
            return
        old_rows, old_cursor, old_top = self.rows, self.cursor, round(self.scroll_y)
        self.rows = rows
        self.index = {key: i for i, (key, _) in enumerate(rows)}
        target = self.index.get(keep) if keep is not None else None
        self.cursor = target if target is not None else min(self.cursor, max(0, len(rows) - 1))
        size = Size(self._line_width, len(rows) + 1)
        if size != self.virtual_size:
            self.virtual_size = size
        if hold and target is not None and target != old_cursor:
            self.scroll_to(y=max(0, old_top + target - old_cursor), animate=False,
                           immediate=True)
        self._show_cursor()
        top = round(self.scroll_y)
        if top != old_top:
            self.refresh()
            return
        for line in range(self.scrollable_content_region.height - 1):
            index = top + line
            before = old_rows[index] if index < len(old_rows) else None
            after = rows[index] if index < len(rows) else None
            if (before is not after and before != after) or \
                    ((index == old_cursor) != (index == self.cursor)):
                self._refresh_row(index)

    def _refresh_row(self, index: int) -> None:
        y = index - round(self.scroll_y) + 1
        if 1 <= y < self.scrollable_content_region.height:
            self.refresh(Region(0, y, max(self.virtual_size.width, self.size.width), 1))

    def _set_cursor(self, cursor: int) -> None:
        old, top = self.cursor, round(self.scroll_y)
        self.cursor = cursor
        self._show_cursor()
        if round(self.scroll_y) == top:
            self._refresh_row(old)
            self._refresh_row(cursor)
        else:
            self.refresh()

    # ----------------------------------------------------------------- keys and mouse

    def _move(self, cursor: int) -> None:
        if not self.rows:
            return
        cursor = max(0, min(len(self.rows) - 1, cursor))
        if cursor != self.cursor:
            self._set_cursor(cursor)
            self.post_message(self.Highlighted(self, self.rows[cursor][0]))
        self.cursor_moved()

    def cursor_moved(self) -> None:
        """The person moved the cursor (a key or a click, even onto the row it was on)."""

    def _show_cursor(self) -> None:
        visible = max(1, self.scrollable_content_region.height - 1)
        top = round(self.scroll_y)
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, immediate=True)
        elif self.cursor >= top + visible:
            self.scroll_to(y=self.cursor - visible + 1, animate=False, immediate=True)

    def action_cursor(self, step: int) -> None:
        self._move(self.cursor + step)

    def action_page(self, direction: int) -> None:
        self._move(self.cursor + direction * max(1, self.scrollable_content_region.height - 2))

    def action_edge(self, end: int) -> None:
        self._move(len(self.rows) - 1 if end else 0)

    def action_select(self) -> None:
        if self.rows:
            self.post_message(self.Selected(self, self.rows[self.cursor][0]))

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        if offset.y == 0:
            x = offset.x + round(self.scroll_x)
            for key, _, width in self.columns:
                if x < width + 2:
                    self.post_message(self.HeaderClicked(self, key))
                    return
                x -= width + 2
            return
        self._move(round(self.scroll_y) + offset.y - 1)
        if event.chain >= 2:
            self.action_select()

    # ----------------------------------------------------------------- rendering

    def _segments(self, cells, base: Style) -> list[Segment]:
        out = []
        for (_, _, width), (text, style) in zip(self.columns, cells, strict=False):
            out.append(Segment(" " + set_cell_size(text, width) + " ", base + style))
        return out

    def render_lines(self, crop: Region) -> list[Strip]:
        self._line_styles = (self.rich_style,
                             self.get_component_rich_style("rows-view--header"),
                             self.get_component_rich_style("rows-view--cursor"))
        if len(self._strips) > CACHE_ROWS:
            self._strips.clear()
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = round(self.scroll_x), round(self.scroll_y)
        width = self.scrollable_content_region.width
        base, header, cursor = self._line_styles or (self.rich_style, Style(), Style())
        if y == 0:
            cells = [(label, Style()) for _, label, _ in self.columns]
            strip = Strip(self._segments(cells, base + header))
            return strip.crop_extend(scroll_x, scroll_x + width, base + header)
        index = scroll_y + y - 1
        if index >= len(self.rows):
            return Strip.blank(width, base)
        payload = self.rows[index][1]
        on_cursor = index == self.cursor
        key = (payload, on_cursor, base, cursor)
        strip = self._strips.get(key)
        if strip is None:
            line = self._segments(self.cells_of(payload), base)
            if on_cursor:
                over = Style(bgcolor=cursor.bgcolor, bold=cursor.bold, reverse=cursor.reverse)
                line = [Segment(s.text, s.style + over) for s in line]
            strip = self._strips[key] = Strip(line)
        return strip.crop_extend(scroll_x, scroll_x + width, base + cursor if on_cursor
                                 else base)

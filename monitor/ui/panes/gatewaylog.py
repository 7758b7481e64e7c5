"""The gateway log tail: level filter, search with highlighted matches, n/N to jump.

``LogView`` renders only the visible lines (a line-API scroll view), so a
filter or search change over a thousand lines costs a refresh, not a rewrite.
It follows the end while scrolled to the bottom and stays put otherwise.
"""

from __future__ import annotations

import re
from typing import ClassVar

from rich.segment import Segment
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Input

from monitor.display import printable
from monitor.snapshot import LogLine, Snapshot
from monitor.ui.panes.base import set_title
from monitor.ui.style import Palette, clock_time
from monitor.ui.view import ViewState

LINE_WIDTH = 400                # cells of a line the pane can show (scrolled sideways)
LINE_CACHE = 500


def shown_matches(pattern: re.Pattern, plain: str, shown: int) -> list[tuple[int, int]]:
    """Where ``pattern`` matches ``plain``, within its first ``shown`` characters (the part
    of a line the pane can show), matches that touch joined into one span: a line of
    thousands of matches is restyled in a few spans, not thousands, on every key typed."""
    spans: list[tuple[int, int]] = []
    for found in pattern.finditer(plain, 0, shown + len(pattern.pattern)):
        start, end = found.start(), min(found.end(), shown)
        if start >= shown:
            break
        if spans and spans[-1][1] == start:
            spans[-1] = (spans[-1][0], end)
        else:
            spans.append((start, end))
    return spans


class LogView(ScrollView, can_focus=True):
    BINDINGS: ClassVar[list[BindingType]] = [("home", "scroll_home", "Top"),
                                             ("end", "scroll_end", "End")]

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.lines: list[LogLine] = []
        self.matches: list[int] = []
        self.current: int | None = None
        self.pattern: re.Pattern | None = None
        self.palette: Palette | None = None
        self._jumped: tuple | None = None
        self._strips: dict[tuple, Strip] = {}
        self._shown: tuple = ()

    def on_mount(self) -> None:
        self.anchor()

    def set_lines(self, lines: list[LogLine], matches: list[int], current: int | None,
                  search: str, palette: Palette) -> None:
        shown = (lines[-1].seq if lines else 0, len(lines), tuple(matches), current, search,
                 id(palette))
        if shown == self._shown:
            return
        self._shown = shown
        self.lines, self.matches, self.current, self.palette = lines, matches, current, palette
        self.pattern = re.compile(re.escape(search), re.IGNORECASE) if search else None
        self.virtual_size = Size(LINE_WIDTH, len(lines))
        jump = (search, current, matches[current]) if current is not None else None
        if jump is not None and jump != self._jumped:
            self.release_anchor()
            self.scroll_to(y=max(0, jump[2] - self.size.height // 2), animate=False)
        elif jump is None and self._jumped is not None:
            self.anchor()
        self._jumped = jump
        self.refresh()

    def line_text(self, index: int) -> Text:
        line = self.lines[index]
        palette = self.palette
        assert palette is not None
        text = Text(no_wrap=True, end="")
        text.append(clock_time(line.ts) + " ", style=palette.muted)
        text.append(f"{printable(line.level):<5} ", style=palette.log_level(line.level))
        if line.subsystem:
            text.append(f"{printable(line.subsystem)} ", style=palette.style("text-secondary"))
        message = printable(line.message, keep_newlines=True)
        text.append(message.replace("\n", " ⏎ ").replace("\t", " "),
                    style=palette.style("foreground"))
        plain = text.plain
        text.truncate(LINE_WIDTH)
        if self.pattern is not None:
            is_current = self.current is not None and self.matches[self.current] == index
            style = palette.current_match if is_current else palette.match
            for start, end in shown_matches(self.pattern, plain, len(text.plain)):
                text.stylize(style, start, end)
        return text

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.size.width
        if index >= len(self.lines) or self.palette is None:
            return Strip.blank(width, self.rich_style)
        is_current = self.current is not None and self.matches[self.current] == index
        key = (self.lines[index].seq, is_current, self.pattern, id(self.palette))
        strip = self._strips.get(key)
        if strip is None:
            if len(self._strips) > 4 * LINE_CACHE:
                self._strips.clear()
            segments = list(self.line_text(index).render(self.app.console))
            strip = Strip([s for s in segments if s.text != "\n"] or [Segment("")])
            self._strips[key] = strip
        return strip.crop_extend(scroll_x, scroll_x + width, self.rich_style)


class GatewayLogPane(Vertical):
    DEFAULT_CLASSES = "pane"

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.log_view = LogView(id="log-view")
        self.search_input = Input(placeholder="search the gateway log (Enter: jump, Esc: clear)",
                                  id="log-search")
        """Hidden until the person searches (``/``)."""

    def compose(self) -> ComposeResult:
        yield self.log_view
        yield self.search_input

    def on_mount(self) -> None:
        self.border_title = "Gateway log"
        self.search_input.display = False

    def show(self, snapshot: Snapshot, view: ViewState, palette: Palette) -> None:
        lines = view.log_lines(snapshot.log)
        matches = view.matches(lines)
        current = None
        if matches and view.search_index >= 0:
            current = view.search_index % len(matches)
        title = f"Gateway log · {view.log_filter}"
        if view.search:
            title += f" · /{view.search}: " + (
                f"{(current or 0) + 1} of {len(matches)}" if matches else "no match")
        set_title(self, title)
        self.log_view.set_lines(lines, matches, current, view.search, palette)

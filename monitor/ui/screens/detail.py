"""The session detail screen: the selected session's tool-call timeline."""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Footer, Header

from monitor.display import printable
from monitor.shown import shown_redacted
from monitor.snapshot import Snapshot, TimelineEntry
from monitor.ui.panes.base import PaneStatic, set_title
from monitor.ui.panes.rows import RowsView
from monitor.ui.panes.side import focus_of
from monitor.ui.screens.base import PanesScreen
from monitor.ui.style import LEVEL_GLYPH, Palette, clock_time, duration, tokens
from monitor.ui.view import ViewState

COLUMNS = (("n", "#", 4), ("time", "Time", 8), ("tool", "Tool", 9), ("args", "Arguments", 48),
           ("outcome", "Outcome", 28), ("exit", "Exit", 4), ("rep", "Rep", 3),
           ("marks", "Streak marks", 18), ("usage", "In/out", 11))


#: Characters of the session key the summary shows (a crafted key can be megabytes).
KEY_CHARS = 1000


class DetailSummary(PaneStatic):
    DEFAULT_CLASSES = "pane"

    def show(self, snapshot: Snapshot, view: ViewState, palette: Palette) -> None:
        row = snapshot.row(view.selected)
        focus = focus_of(snapshot, view)
        if row is None:
            self.put(Text("the session is no longer on the board", style=palette.muted))
            return
        text = Text()
        text.append(shown_redacted(row.key, KEY_CHARS),
                    style=palette.style("text-primary", bold=True))
        text.append(f"  {row.state}", style=palette.state(row.state))
        text.append(printable(
            f"  agent {row.agent} · model {row.model or '-'} · {row.tool_calls} calls · "
            f"in {tokens(row.tokens_in)} · out {tokens(row.tokens_out)} · "
            f"{tokens(row.burn_per_minute)}/min · idle {duration(row.idle_seconds)}"),
            style=palette.style("foreground"))
        if focus is not None and focus.findings:
            latest = focus.findings[-1]
            text.append("\n" + printable(
                f"latest finding: {LEVEL_GLYPH.get(latest.level, '')} "
                f"{latest.detector} ×{latest.count} at call {latest.at_call}: "
                f"{latest.message}"), style=palette.level(latest.level))
        self.put(text)


TIMELINE_TITLE = "Tool-call timeline (secrets redacted)"


class TimelineTable(RowsView):
    DEFAULT_CLASSES = "pane"

    def __init__(self, **kw) -> None:
        super().__init__(COLUMNS, **kw)
        self.palette: Palette | None = None

    def on_mount(self) -> None:
        set_title(self, TIMELINE_TITLE)

    def cells(self, call: TimelineEntry):
        palette = self.palette
        assert palette is not None
        worst = "critical" if any(lvl == "critical" for _, lvl in call.marks) else \
            "warning" if call.marks else None
        marks = " ".join(f"{LEVEL_GLYPH.get(lvl, '')}{det}" for det, lvl in call.marks)
        usage = "-" if call.tokens_in is None else \
            f"{tokens(call.tokens_in)}/{tokens(call.tokens_out)}"
        failed = call.is_error or call.exit_code not in (None, 0)
        exit_style = palette.level("error") if failed else palette.muted
        return ((str(call.index), palette.muted), (clock_time(call.ts), palette.muted),
                (call.tool, palette.style("text-primary")),
                (call.arguments, palette.style("foreground")),
                (call.outcome, exit_style if call.is_error else palette.style("foreground")),
                ("-" if call.exit_code is None else str(call.exit_code), exit_style),
                ("↻" if call.repeats else "", palette.level("warning")),
                (marks, palette.level(worst)), (usage, palette.muted))

    def show(self, snapshot: Snapshot, view: ViewState, palette: Palette) -> None:
        if palette is not self.palette:
            self.palette = palette
            self.restyle()
        focus = focus_of(snapshot, view)
        reading = focus.history_read if focus else None
        set_title(self, TIMELINE_TITLE if reading is None else
                  f"{TIMELINE_TITLE} · reading history: {reading:,} calls")
        rows = [(str(call.index), call) for call in (focus.timeline if focus else ())]
        at_end = not self.rows or self.cursor >= len(self.rows) - 1
        self.set_rows(rows, keep=rows[-1][0] if rows and at_end else None)


class CallDetail(PaneStatic):
    """The highlighted call in full: arguments and outcome, wrapped."""

    DEFAULT_CLASSES = "pane"

    def show(self, snapshot: Snapshot, view: ViewState, palette: Palette) -> None:
        focus = focus_of(snapshot, view)
        calls = focus.timeline if focus else ()
        call = next((c for c in calls if c.index == view.detail_call), calls[-1] if calls
                    else None)
        if call is None:
            self.put(Text("no tool calls yet", style=palette.muted))
            return
        set_title(self, f"Call {call.index} · {call.tool}")
        text = Text()
        text.append("arguments  ", style=palette.muted)
        text.append(printable(call.arguments) + "\n")
        text.append("outcome    ", style=palette.muted)
        text.append(printable(call.outcome), style=palette.level("error") if call.is_error or
                    call.exit_code not in (None, 0) else palette.style("foreground"))
        if call.marks:
            text.append("\nmarks      ", style=palette.muted)
            text.append(printable(", ".join(f"{det} ({lvl})" for det, lvl in call.marks)))
        self.put(text)


class DetailScreen(PanesScreen):
    """Rendered by the app like the main screen (``PanesScreen``), from the same view state."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "app.pop_screen", "Back"),
                Binding("backspace", "app.pop_screen", "Back", show=False)]

    def __init__(self) -> None:
        super().__init__()
        self.timeline = TimelineTable(id="timeline")

    def compose(self) -> ComposeResult:
        yield Header()
        yield DetailSummary(id="detail-summary")
        yield self.timeline
        yield CallDetail(id="call-detail")
        yield Footer()

    def on_mount(self) -> None:
        self.app.view = replace(self.app.view, detail_call=None)
        self.timeline.focus()

    @on(RowsView.Highlighted, "#timeline")
    def _call_highlighted(self, event: RowsView.Highlighted) -> None:
        index = int(event.key)
        if index != self.app.view.detail_call:
            self.app.view = replace(self.app.view, detail_call=index)

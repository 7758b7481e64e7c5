"""``ClawwatchApp``: the dashboard.

One rule for state: the ingest thread (``IngestLoop``) only posts
``SnapshotReady``; the handlers here own everything else (view state,
acknowledgements, the bell). Panes never talk to each other.

What the panes show is reactive state of the app: ``displayed`` (the snapshot on
display), ``view`` (selection, filters, sort, search, pause) and ``palette``; their
watchers ask for one render pass of the screen in view, right after the message
being handled, so a burst of changes renders once. ``alert_marks`` (acknowledgements,
mute) and ``status_notes`` are bound into the alerts pane and the status line, which
show them when they change. A screen coming into view asks for its panes to be
rendered (``PanesOnView``). Actions run the controller in ``@work`` thread workers
and come back as messages.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import ClassVar

from textual import on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.reactive import var
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Header, Input
from textual.worker import Worker, WorkerState

from monitor.act.api import ActionController, ActionResult
from monitor.config import Config
from monitor.display import printable
from monitor.records import Record
from monitor.redaction import clip_redacted, redacted_cut
from monitor.snapshot import Snapshot
from monitor.ui.actions import AlertsAndActions
from monitor.ui.alerting import AlertBook, AlertMarks, CriticalBurst
from monitor.ui.ingest import IngestLoop
from monitor.ui.messages import PanesOnView, SnapshotReady
from monitor.ui.panes.alerts import AlertsPane
from monitor.ui.panes.board import COLUMN_SORT, SessionsBoard
from monitor.ui.panes.gatewaylog import GatewayLogPane
from monitor.ui.panes.rows import RowsView
from monitor.ui.panes.side import BurnPane, PingPongPane, StreaksPane
from monitor.ui.panes.status import StatusLine
from monitor.ui.screens.base import PanesScreen
from monitor.ui.screens.detail import DetailScreen
from monitor.ui.screens.dialogs import HelpScreen
from monitor.ui.style import Palette
from monitor.ui.text import markup_literal
from monitor.ui.theme_handling import ThemeHandling
from monitor.ui.themes import DEFAULT_THEME
from monitor.ui.view import ALERT_FILTERS, BOARD_FILTERS, LOG_FILTERS, SORTS, ViewState, cycle

#: Characters of a toast shown (toasts carry session keys and messages from data).
TOAST_CHARS = 1000
MAIN_SCREEN_ACTIONS = frozenset({"search", "next_match", "previous_match", "clear_search",
                                 "filter", "source_filter", "sort", "detail"})


class ClawwatchApp(AlertsAndActions, ThemeHandling, App):
    CSS_PATH = "app.tcss"
    TITLE = "clawwatch"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help"),
        Binding("s", "stop", "Stop"),
        Binding("K", "kill", "Kill"),
        Binding("a", "ack", "Ack"),
        Binding("A", "ack_all", "Ack all", show=False),
        Binding("m", "mute", "Mute"),
        Binding("slash", "search", "Search"),
        Binding("n", "next_match", "Next match", show=False),
        Binding("N", "previous_match", "Previous match", show=False),
        Binding("escape", "clear_search", "Clear search", show=False),
        Binding("f", "filter", "Filter"),
        Binding("F", "source_filter", "Source"),
        Binding("o", "sort", "Sort", show=False),
        Binding("t", "next_theme", "Theme"),
        Binding("p", "pause", "Pause"),
    ]

    view: var[ViewState] = var(ViewState, init=False)
    """What the person chose to see; replaced (it is frozen), and the panes follow."""
    displayed: var[Snapshot] = var(lambda: Snapshot(seq=0, taken_at=0.0), init=False,
                                   always_update=True)
    """The snapshot on display: the latest one, unless paused."""
    palette: var[Palette] = var(lambda: Palette({}), init=False)
    """Rich styles of the current theme's variables."""
    alert_marks: var[AlertMarks] = var(AlertMarks, init=False)
    """The alert book's acknowledgements and mute (the alerts pane is bound to it)."""
    status_notes: var[tuple[str, ...]] = var((), init=False)
    """Problems the status line keeps in view: theme errors, a reader that stopped."""

    # The main screen's panes the app talks to, kept when composed: one typed accessor per
    # widget (the gateway log pane keeps its own log view and search input).
    sessions_board: SessionsBoard
    alerts_pane: AlertsPane
    gateway_log: GatewayLogPane
    status_line: StatusLine

    def __init__(self, monitor_factory: Callable[[], object], controller: ActionController,
                 config: Config, *, theme: str | None = None,
                 clock: Callable[[], float] = time.time, sub_title: str = "",
                 expected: Iterable[tuple[str, str | None, str]] = (),
                 poll_seconds: float = 0.5, themes_directory: Path | None = None,
                 on_close: Iterable[Callable[[], None]] = (),
                 after_step: Callable[[object, list[Record]], list[Record]] | None = None,
                 terminal_notifications: bool | None = None, metrics=None) -> None:
        super().__init__()
        self.controller = controller
        self.config = config
        self.clock = clock
        self.sub_title = printable(sub_title)
        self.requested_theme = theme or DEFAULT_THEME
        self.themes_directory = themes_directory
        self.on_close = list(on_close)
        self.terminal_notifications = terminal_notifications if terminal_notifications \
            is not None else config.alerts.desktop_notifications
        self.book = AlertBook(clock, bell=config.alerts.bell,
                              repeat_seconds=config.alerts.bell_repeat_seconds,
                              on_change=self._alert_marks_changed)
        self.burst = CriticalBurst(time.monotonic)
        self.ingest = IngestLoop(monitor_factory, clock,
                                 lambda snapshot: self.post_message(SnapshotReady(snapshot)),
                                 poll_seconds=poll_seconds, expected=expected,
                                 after_step=after_step, metrics=metrics)
        self.latest = Snapshot(seq=0, taken_at=clock())
        self.set_reactive(ClawwatchApp.displayed, self.latest)
        self.theme_names: list[str] = []
        self.theme_errors: list[str] = []
        self.actions: list[ActionResult] = []
        #: Set once the person moves the board's cursor; until then the selection is the
        #: board's top row, whichever session a new snapshot puts there.
        self.selection_chosen = False
        self._render_pending = False

    def notify(self, message: str, *, title: str = "", severity="information",
               timeout: float | None = None, markup: bool = False) -> None:
        """Every toast is redacted plain text with its controls made visible: toasts carry
        session keys, tool names and messages from data, which may hold secrets and must
        never be parsed as markup (``markup`` is accepted for Textual's signature and
        ignored)."""
        super().notify(printable(redacted_cut(message, TOAST_CHARS), keep_newlines=True),
                       title=printable(clip_redacted(title, TOAST_CHARS)), severity=severity,
                       timeout=timeout, markup=False)

    # ------------------------------------------------------------------ layout

    def get_default_screen(self) -> Screen:
        return PanesScreen(id="_default")

    def compose(self) -> ComposeResult:
        self.status_line = StatusLine(id="status").data_bind(notes=ClawwatchApp.status_notes)
        self.sessions_board = SessionsBoard(id="board")
        self.alerts_pane = AlertsPane(id="alerts").data_bind(marks=ClawwatchApp.alert_marks)
        self.gateway_log = GatewayLogPane(id="gateway-log")
        yield Header()
        yield self.status_line
        yield self.sessions_board
        with Horizontal(id="side"):
            yield StreaksPane(id="streaks")
            with Vertical(id="side-right"):
                yield BurnPane(id="burn")
                yield PingPongPane(id="pingpong")
        with Horizontal(id="bottom"):
            yield self.alerts_pane
            yield self.gateway_log
        yield Footer()

    def on_mount(self) -> None:
        self._load_themes()
        self.theme_changed_signal.subscribe(self, self._theme_changed)
        self.palette = Palette(self.get_css_variables())
        self.sessions_board.focus()
        self._read_sources()
        self.set_interval(1.0, self.repeat_bell)

    @work(thread=True, group="ingest", exit_on_error=False,
          description="poll sources, build snapshots")
    def _read_sources(self) -> None:
        """The ingest loop, until the app stops it; it posts ``SnapshotReady``."""
        self.ingest.run()

    def on_unmount(self) -> None:
        self.ingest.stop()
        self.ingest.finished.wait(5)
        for close in self.on_close:
            close()

    # ------------------------------------------------------------------ snapshots

    @on(SnapshotReady)
    def _snapshot_ready(self, message: SnapshotReady) -> None:
        snapshot = message.snapshot
        self.latest = snapshot
        self._announce(self.book.take_new(snapshot.alerts), snapshot)
        if not self.view.paused:
            self.displayed = snapshot

    @property
    def settled(self) -> bool:
        """First scan done and every pane shows the latest snapshot for the selection."""
        focus = self.latest.focus
        return (self.latest.seq > 0 and not self.latest.scanning
                and self.displayed is self.latest
                and (self.view.selected is None
                     or (focus is not None and focus.session_id == self.view.selected)))

    def _view_screen(self) -> Screen:
        for screen in reversed(self.screen_stack):
            if not isinstance(screen, ModalScreen):
                return screen
        return self.screen

    def _alert_marks_changed(self, marks: AlertMarks) -> None:
        self.alert_marks = marks

    def watch_view(self, old: ViewState, new: ViewState) -> None:
        if new.selected != old.selected:
            self.ingest.set_focus(new.selected)
        self._render_soon()

    def watch_displayed(self) -> None:
        self._render_soon()

    def watch_palette(self) -> None:
        self._render_soon()

    @on(PanesOnView)
    def _panes_on_view(self) -> None:
        self._render_soon()

    def _render_soon(self) -> None:
        """Ask for one render pass, right after the message being handled, however many
        changes that message makes (1,000 view changes in one handler render once)."""
        if not self._render_pending:
            self._render_pending = True
            self.call_next(self._render_panes)

    def _render_panes(self) -> None:
        """Render every pane of the screen in view from the displayed snapshot, the view
        and the palette. The board goes first: when the selection is not on it (filtered
        away, or none yet), the row under its cursor becomes the selection, which the
        other panes then show. Until the person moves the cursor it stays on the top row."""
        self._render_pending = False
        if not self.screen_stack:
            return
        screen = self._view_screen()
        snapshot, palette = self.displayed, self.palette
        for board in screen.query(SessionsBoard):
            board.show(snapshot, self.view, palette, follow_top=not self.selection_chosen)
            highlighted = board.highlighted()
            if highlighted is not None and highlighted != self.view.selected:
                self._adopt_selection(highlighted)
        for pane in screen.query(".pane"):
            if not isinstance(pane, SessionsBoard):
                pane.show(snapshot, self.view, palette)

    def _select(self, session_id: str | None) -> None:
        self.selection_chosen = True
        self.view = replace(self.view, selected=session_id)

    def _adopt_selection(self, session_id: str) -> None:
        """Select during a render pass: the panes rendered next show it already, so no
        second pass; only the ingest is told (for the detail of the new selection)."""
        self.set_reactive(ClawwatchApp.view, replace(self.view, selected=session_id))
        self.ingest.set_focus(session_id)

    @on(RowsView.Highlighted, "#board")
    def _board_highlighted(self, event: RowsView.Highlighted) -> None:
        if event.key != self.view.selected:
            self._select(event.key)

    @on(RowsView.Selected, "#board")
    def _board_selected(self, event: RowsView.Selected) -> None:
        self._select(event.key)
        self.action_detail()

    @on(RowsView.HeaderClicked, "#board")
    def _board_header(self, event: RowsView.HeaderClicked) -> None:
        self.view = replace(self.view, sort=COLUMN_SORT.get(event.column, self.view.sort))

    # ------------------------------------------------------------------ view

    def action_detail(self) -> None:
        if self.displayed.row(self.view.selected) is not None \
                and not isinstance(self.screen, DetailScreen):
            self.push_screen(DetailScreen())

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_pause(self) -> None:
        self.view = replace(self.view, paused=not self.view.paused)
        if not self.view.paused:
            self.displayed = self.latest

    def action_filter(self) -> None:
        chain = self.focused.ancestors_with_self if self.focused is not None else []
        view = self.view
        if any(isinstance(node, AlertsPane) for node in chain):
            self.view = replace(view, alert_filter=cycle(ALERT_FILTERS, view.alert_filter))
        elif any(isinstance(node, GatewayLogPane) for node in chain):
            self.view = replace(view, log_filter=cycle(LOG_FILTERS, view.log_filter))
        else:
            self.view = replace(view, board_filter=cycle(BOARD_FILTERS, view.board_filter))

    def action_source_filter(self) -> None:
        """Board and alerts: all sources → openclaw → claude-code → codex."""
        self.view = self.view.next_source()

    def action_sort(self) -> None:
        self.view = replace(self.view, sort=cycle(SORTS, self.view.sort))

    def action_search(self) -> None:
        search = self.gateway_log.search_input
        search.display = True
        search.value = self.view.search
        search.focus()

    @on(Input.Changed, "#log-search")
    def _search_changed(self, event: Input.Changed) -> None:
        self.view = replace(self.view, search=event.value, search_index=-1)

    @on(Input.Submitted, "#log-search")
    def _search_submitted(self, event: Input.Submitted) -> None:
        view = replace(self.view, search=event.value)
        self.view = replace(view, search_index=max(0, self._match_count(view) - 1))
        event.input.display = False
        self.gateway_log.log_view.focus()

    def _match_count(self, view: ViewState | None = None) -> int:
        view = view or self.view
        return len(view.matches(view.log_lines(self.displayed.log)))

    def action_next_match(self) -> None:
        self._step_match(+1)

    def action_previous_match(self) -> None:
        self._step_match(-1)

    def _step_match(self, step: int) -> None:
        count = self._match_count()
        if count:
            start = self.view.search_index if self.view.search_index >= 0 else count - 1
            self.view = replace(self.view, search_index=(start + step) % count)
        else:
            self.notify(f"no match for {self.view.search!r}", severity="warning", timeout=2)

    def action_clear_search(self) -> None:
        self.view = replace(self.view, search="", search_index=0)
        search = self.gateway_log.search_input
        search.value = ""
        search.display = False
        self.gateway_log.log_view.focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in MAIN_SCREEN_ACTIONS and self.screen is not self.screen_stack[0]:
            return False
        if action in ("next_match", "previous_match", "clear_search"):
            return bool(self.view.search) or (action == "clear_search" and self._search_open())
        return True

    def _search_open(self) -> bool:
        return self.screen is self.screen_stack[0] and self.gateway_log.search_input.display

    # ------------------------------------------------------------------ workers, palette

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group == "ingest" and event.state == WorkerState.ERROR:
            error = redacted_cut(f"reading stopped: {event.worker.error}", TOAST_CHARS)
            self.status_notes = (*self.status_notes, error)
            self.notify(error, severity="error", timeout=30)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        main = screen is self.screen_stack[0]
        commands = (
            ("Stop session", "Stop the selected session (asks first)", "stop"),
            ("Kill processes", "Kill the selected session's processes (asks first)", "kill"),
            ("Acknowledge session", "Acknowledge the selected session's alerts", "ack"),
            ("Acknowledge all", "Acknowledge every alert", "ack_all"),
            ("Mute / unmute bell", "Toggle the bell on critical findings", "mute"),
            ("Search gateway log", "Search the gateway log (n/N: next/previous)", "search"),
            ("Filter", "Cycle the focused pane's filter", "filter"),
            ("Filter by source", "Board and alerts: all, OpenClaw, Claude Code, Codex",
             "source_filter"),
            ("Sort board", "Cycle the board's sort order", "sort"),
            ("Pause / resume display", "Freeze the display; reading goes on", "pause"),
            ("Session detail", "Tool-call timeline of the selected session", "detail"),
            ("Help", "Keys and what they do", "help"),
            ("Next theme", "Switch to the next clawwatch theme", "next_theme"),
        )
        for title, help_text, action in commands:
            if main or action not in MAIN_SCREEN_ACTIONS:
                yield SystemCommand(title, help_text, getattr(self, f"action_{action}"))
        for name in self.theme_names:
            yield SystemCommand(markup_literal(f"Theme: {name}"),
                                markup_literal(f"Use the {name} theme"),
                                lambda name=name: self.use_theme(name))

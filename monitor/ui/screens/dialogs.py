"""Modal dialogs: confirm an action, and the key help."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from monitor.display import printable
from monitor.redaction import clip_redacted, redacted_cut
from monitor.ui.text import plain

HELP_KEYS = (
    ("↑ ↓  PgUp PgDn", "move in the focused table; the board's row drives the side panes"),
    ("Enter", "session detail: the tool-call timeline"),
    ("Tab  Shift+Tab", "focus the next / previous pane"),
    ("s", "stop the selected session (asks first)"),
    ("K", "kill the selected session's runaway processes (lists them, asks first)"),
    ("a  A", "acknowledge the selected session's alerts / all alerts (stops the bell)"),
    ("m", "mute or unmute the bell"),
    ("/  n  N", "search the gateway log; next / previous match"),
    ("f", "filter the focused pane: board, alerts (level) or log (level)"),
    ("F", "filter board and alerts by source: all, openclaw, claude-code, codex"),
    ("o", "sort the board: severity, burn, tokens, calls, recent, session"),
    ("t", "next theme"),
    ("p", "pause the display (reading goes on)"),
    ("Ctrl+P", "command palette: every action by name"),
    ("?", "this help"),
    ("q", "quit"),
)


#: Characters of a dialog's title and body shown (they carry session keys and commands).
TITLE_CHARS = 200
BODY_CHARS = 20_000


class ConfirmScreen(ModalScreen[bool]):
    """Yes/no for an action; ``y``/Enter confirm, ``n``/Esc cancel.

    ``title`` and a ``str`` ``body`` hold data (session keys, commands): they are shown
    redacted, as plain text, never parsed as markup, with every control character made
    visible."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes"), Binding("n", "answer(False)", "No"),
        Binding("escape", "answer(False)", "Cancel")]

    def __init__(self, title: str, body: str | Text, confirm_label: str = "Yes") -> None:
        super().__init__()
        self.title_text = plain(clip_redacted(title, TITLE_CHARS))
        self.body = body if isinstance(body, Text) else Text(
            printable(redacted_cut(body, BODY_CHARS), keep_newlines=True))
        self.confirm_label = confirm_label
        self.cancel_button = Button("Cancel (n)", variant="primary", id="no")
        """Focused when the dialog opens: Enter alone cancels."""

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(self.title_text, id="dialog-title")
            yield Static(self.body, id="dialog-body")
            with Horizontal(id="dialog-buttons"):
                yield Button(f"{self.confirm_label} (y)", variant="error", id="yes")
                yield self.cancel_button

    def on_mount(self) -> None:
        self.cancel_button.focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close"), Binding("question_mark", "close", "Close"),
        Binding("q", "close", "Close")]

    def compose(self) -> ComposeResult:
        table = Table.grid(padding=(0, 2))
        table.add_column(no_wrap=True, style="bold")
        table.add_column()
        for keys, what in HELP_KEYS:
            table.add_row(keys, what)
        with Vertical(id="dialog"):
            yield Static("clawwatch — keys", id="dialog-title")
            yield Static(table, id="dialog-body")
            yield Static("Esc or ? closes this help", id="dialog-hint")

    def action_close(self) -> None:
        self.dismiss(None)

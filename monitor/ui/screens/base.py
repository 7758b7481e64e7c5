"""``PanesScreen``: a screen whose panes the app renders (the main screen, the detail screen)."""

from __future__ import annotations

from textual.screen import Screen

from monitor.ui.messages import PanesOnView


class PanesScreen(Screen):
    """Asks the app to render its panes each time it comes into view (``PanesOnView``)."""

    def on_screen_resume(self) -> None:
        self.post_message(PanesOnView())

"""What the panes share: ``PaneStatic``, ``set_title`` and ``FollowsOwnState``.

Panes are re-rendered from every snapshot; an unchanged ``Static.update``
would still cost a layout pass over the whole screen, so ``PaneStatic`` and
``set_title`` skip updates that change nothing.
"""

from __future__ import annotations

from collections.abc import Hashable

from textual.visual import VisualType
from textual.widgets import Static

from monitor.ui.text import plain


class PaneStatic(Static):
    _shown: object = None

    def put(self, content: VisualType, key: Hashable | None = None, *,
            layout: bool = True) -> None:
        """Show ``content`` unless ``key`` (default: the content itself) is already shown.
        A ``str`` is shown as plain text, never parsed as markup."""
        key = content if key is None else key
        if key == self._shown:
            return
        self._shown = key
        if isinstance(content, str):
            content = plain(content, keep_newlines=True)
        self.update(content, layout=layout)


def set_title(widget, title: str) -> None:
    """Set ``border_title`` only when it changes (setting it always repaints the widget).
    The title is plain text: a ``str`` border title would be parsed as markup."""
    if getattr(widget, "_title_shown", None) != title:
        widget._title_shown = title
        widget.border_title = plain(title)


class FollowsOwnState:
    """Mixin of a pane whose content also follows reactives of its own (bound to the app's,
    e.g. the alert marks or the status notes), besides what the app renders it from.

    ``show`` records its inputs in ``shown_from``; those reactives' watchers call
    ``show_again_soon``, which shows the same inputs again once, right after the message
    being handled: a burst of changes renders once, and no render pass of the app is needed.
    """

    shown_from: tuple | None = None
    _show_again_pending = False

    def show_again_soon(self) -> None:
        if self.shown_from is not None and not self._show_again_pending:
            self._show_again_pending = True
            self.call_next(self._show_again)

    def _show_again(self) -> None:
        self._show_again_pending = False
        if self.shown_from is not None:
            self.show(*self.shown_from)

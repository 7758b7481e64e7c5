"""``PaneStatic``: a Static that skips updates whose content did not change.

Panes are re-rendered from every snapshot; an unchanged ``Static.update``
would still cost a layout pass over the whole screen.
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

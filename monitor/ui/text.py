"""The UI half of the display boundary: data becomes plain Rich ``Text`` or Textual
``Content``, never a markup string.

``display.printable`` has already made the characters a terminal acts on visible; these
helpers make sure nothing parses ``[…]`` or ``$variable`` in data either. Textual parses a
``str`` as content markup in ``Static``, ``border_title``, ``notify`` and ``DataTable``
cells, so a widget that shows data gets ``Text``/``Content`` from here instead.
"""

from __future__ import annotations

from rich.style import Style
from rich.text import Text
from textual.content import Content

from monitor.display import printable


def shown(text: object) -> str:
    """One line of data, printable (newlines and tabs shown as ␊ ␉)."""
    return printable(text)


def data_text(text: object, style: Style | str = "", *, keep_newlines: bool = False) -> Text:
    """``text`` as plain Rich Text (no markup), every control made visible."""
    return Text(printable(text, keep_newlines=keep_newlines), style=style)


def markup_literal(text: object) -> str:
    """``text`` printable, as Textual content markup that parses back to exactly that text:
    for a widget that only takes a markup ``str`` (the command palette's commands).
    Textual reads a ``[`` after a backslash as a literal ``[`` and drops that backslash, and
    only there is a backslash special, so escaping every ``[`` is exact."""
    return printable(text).replace("[", "\\[")


def plain(text: object, *, keep_newlines: bool = False) -> Content:
    """``text`` as plain Textual Content (no markup, no ``$variables``): titles, labels."""
    return Content(printable(text, keep_newlines=keep_newlines))

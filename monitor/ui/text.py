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
from monitor.redaction import REDACT_SLACK, redacted_start


def shown(text: object) -> str:
    """One line of data, printable (newlines and tabs shown as ␊ ␉)."""
    return printable(text)


def shown_redacted(text: str, limit: int) -> str:
    """``text`` redacted, cut to ``limit`` characters (``…`` marks a cut), then made
    printable. In this order, because ``printable`` shows a tab or newline as ``␉``/``␊``
    and the secret rules that need whitespace (``Bearer <token>``, ``--token <token>``)
    would no longer match after it; and with the whitespace kept, not collapsed, so a key
    with a tab or an ideographic space at its end does not read like the key without."""
    redacted = redacted_start(text, limit)
    if len(redacted) > limit or len(text) > limit + REDACT_SLACK:
        redacted = redacted[:limit - 1] + "…"
    return printable(redacted)


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

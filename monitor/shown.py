"""Data made fit for a pane, headless: redacted, cut to what a pane shows (``…`` marks a
cut) and made printable. The snapshot keeps only such text; the UI shows labels it makes
itself (the dialogs') through the same function."""

from __future__ import annotations

from monitor.detect.memo import BoundedMemo
from monitor.display import printable
from monitor.redaction import REDACT_SLACK, known_secrets, redacted_start

LABEL_CHARS = 200               # labels, models, agents: a pane never shows more


def shown_redacted(text: str, limit: int = LABEL_CHARS) -> str:
    """``text`` redacted, cut to ``limit`` characters (``…`` marks a cut), then made
    printable. In this order, because ``printable`` shows a tab or newline as ``␉``/``␊``
    and the secret rules that need whitespace (``Bearer <token>``, ``--token <token>``)
    would no longer match after it; and with the whitespace kept, not collapsed, so a key
    with a tab or an ideographic space at its end does not read like the key without. A
    text longer than the redacted view is marked cut even when its secrets shrank it."""
    redacted = redacted_start(text, limit)
    if len(redacted) > limit or len(text) > limit + REDACT_SLACK:
        redacted = redacted[:limit - 1] + "…"
    return printable(redacted)


#: Distinct values ``shown_repeated`` remembers; past it, it starts over.
REMEMBERED_SHOWN = 512
_SHOWN_REPEATED = BoundedMemo(REMEMBERED_SHOWN)


def shown_repeated(text: str, limit: int = LABEL_CHARS) -> str:
    """``shown_redacted`` of a value that many rows share (an agent id, a model, a source
    kind), remembered while the registered secrets stay the same: redacting those is most
    of the first board of a large state dir."""
    known = known_secrets()
    remembered = _SHOWN_REPEATED.get((text, limit))
    if remembered is not None and remembered[0] is known:
        return remembered[1]
    return _SHOWN_REPEATED.keep((text, limit), (known, shown_redacted(text, limit)))[1]

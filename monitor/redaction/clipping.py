"""Text cut to what a view shows: whitespace collapsed, clipped to a width, and redacted only
as far as it can be shown; names kept from data bounded; tool arguments as one line.

Only what can be shown is redacted for display: a long text is cut to its shown start (plus
``REDACT_SLACK``, so a secret that starts in view is masked whole) first. Cutting after
redacting would not do: a secret halved by the cut could keep a start too short for its rule.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from monitor.redaction.text import redact_text

# Characters redacted past what a pane shows, so a secret that starts in view is masked
# whole; the rest of a long text is never shown, so it is not redacted.
REDACT_SLACK = 2000
#: The longest text an output record keeps whole (``bounded_output``).
OUTPUT_TEXT_CHARS = 4000
#: The longest name or label kept from an index or a transcript (a model, a session's
#: label): a pane shows far less, and every output would redact all of it, every time.
KEPT_NAME_CHARS = 1000
#: A private key's end line with no start line before it: a tail cut inside the key.
_CUT_PRIVATE_KEY_END = re.compile(
    r"\A(?:(?!-----BEGIN)[\s\S])*?-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----")


def shown_start(text: str, limit: int) -> str:
    """The start of ``text`` with its whitespace collapsed, ``limit + REDACT_SLACK``
    characters of it when it has that many: all of it a pane clipped to ``limit`` can show,
    and enough past that for redaction to see a secret that starts in view whole."""
    want = limit + REDACT_SLACK
    size = want
    while True:
        collapsed = " ".join(text[:size].split())
        if len(collapsed) >= want or size >= len(text):
            return collapsed
        size *= 4


def redacted_start(text: str, limit: int) -> str:
    """``text`` redacted as far as a view of ``limit`` characters can show it: its first
    ``limit + REDACT_SLACK`` characters (a secret that starts in view is masked whole), its
    whitespace kept (unlike ``shown_start``)."""
    return redact_text(text[:limit + REDACT_SLACK])


def redacted_tail(text: str, limit: int) -> str:
    """``redacted_start`` from the other end: ``text``'s last ``limit + REDACT_SLACK``
    characters redacted (a view of its last ``limit`` shows where session keys differ).

    A secret's rule needs the secret's start, which a cut from the end can leave out: so
    a longer text is shown from after the first whitespace in its tail, and from after a
    private key's end line whose start line was cut off. A tail that is all one word shows
    as ``…#`` and a digest of it, so two such texts still look different."""
    window = limit + REDACT_SLACK
    if len(text) <= window:
        return redact_text(text)
    tail = text[-window:]
    if not text[-window - 1].isspace() and not tail[0].isspace():
        cut_word_and_rest = tail.split(None, 1)
        if len(cut_word_and_rest) < 2:
            digest = hashlib.blake2b(tail.encode("utf-8", "surrogatepass"), digest_size=6)
            return "…#" + digest.hexdigest()
        tail = cut_word_and_rest[1]
    key_end = _CUT_PRIVATE_KEY_END.search(tail) if "-----END" in tail else None
    if key_end is not None:
        tail = tail[key_end.end():]
    return "…" + redact_text(tail)


def redacted_cut(text: str, limit: int) -> str:
    """``text`` redacted, then cut to ``limit`` characters, its whitespace kept: for a
    message that holds data (cut first, a secret the cut halves could escape its rule)."""
    return redacted_start(text, limit)[:limit]


def clip(text: str, limit: int) -> str:
    """``text`` with its whitespace collapsed, cut to ``limit`` characters (… marks a cut)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def clip_redacted(text: str, limit: int) -> str:
    """``text`` redacted, then ``clip``-ped to ``limit`` characters: cut first, a secret
    halved by the cut could keep a start too short for its rule (``ghp_`` and 8 of its
    characters) and be shown."""
    return clip(redact_text(shown_start(text, limit)), limit)


def bounded(text: str | None, limit: int = KEPT_NAME_CHARS) -> str | None:
    """``text``, or when it is longer than ``limit``, ``clip_redacted`` of it."""
    if text is None or len(text) <= limit:
        return text
    return clip_redacted(text, limit)


def bounded_output(text: str) -> str:
    """``text`` as an output record keeps it: whole up to ``OUTPUT_TEXT_CHARS``, else its
    start ``clip_redacted`` and a digest of the whole (two long ids stay two). A record's
    texts are ids, names and messages, none near this long unless crafted, and redacting a
    crafted megabyte takes seconds in every record that carries it."""
    if len(text) <= OUTPUT_TEXT_CHARS:
        return redact_text(text)
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8)
    return clip_redacted(text, OUTPUT_TEXT_CHARS - 17) + digest.hexdigest()


def format_arguments(arguments: Any) -> str:
    """Tool arguments as ``key=value, …`` (strings bare, the rest as JSON)."""

    def value(item: Any) -> str:
        if isinstance(item, str):
            return item
        try:
            return json.dumps(item, ensure_ascii=False, sort_keys=True, default=str)
        except (TypeError, ValueError):
            return str(item)

    if isinstance(arguments, dict):
        return ", ".join(f"{k}={value(v)}" for k, v in arguments.items())
    return value(arguments)

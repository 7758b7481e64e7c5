"""``digestToolOutcome``: the digest of a tool result's value, with the ids of untrusted-content
markers canonicalised first (OpenClaw wraps fetched content in marker lines carrying a random
id, so the same page fetched twice would otherwise never digest the same).
"""

from __future__ import annotations

import re
from typing import Any

from monitor.detect.jsstable import stable_digest
from monitor.detect.remembered_digests import remembered_digest

# An untrusted-content block whose END marker repeats the start marker's id. The body runs
# to the first start or END marker; it is scanned in runs of non-``<`` characters and
# possessively (the body can only end at that first marker, so backtracking never helps),
# which keeps the match linear in the page length.
_MARKER = re.compile(
    r'(<<<EXTERNAL_UNTRUSTED_CONTENT id=(\\*+)")([a-f0-9]{16})(\2">>>'
    r'(?:[^<]++|<(?!<<(?:END_)?EXTERNAL_UNTRUSTED_CONTENT))*+'
    r'<<<END_EXTERNAL_UNTRUSTED_CONTENT id=\2")\3(\2">>>)'
)


def _canonical_markers(text: str) -> str:
    if "<<<EXTERNAL_UNTRUSTED_CONTENT" not in text:
        return text

    def replace(match: re.Match) -> str:
        start, escapes, _id, middle, end = match.groups()
        width = len(escapes)
        if (width & (width + 1)) != 0 or not _quotes_escaped_like_marker(middle, width):
            return match.group(0)
        return start + "0" * 16 + middle + "0" * 16 + end

    return _MARKER.sub(replace, text)


def _quotes_escaped_like_marker(middle: str, width: int) -> bool:
    """True when every ``"`` in ``middle``, with the backslashes right before it, is a
    multiple of ``width + 1`` characters long (OpenClaw's check that the block sits at the
    marker's own JSON-escaping depth). Always true for an unescaped marker (``width`` 0)."""
    if width == 0 or '"' not in middle:
        return True
    step = width + 1
    for before_quote in middle.split('"')[:-1]:
        backslashes = len(before_quote) - len(before_quote.rstrip("\\"))
        if (backslashes + 1) % step:
            return False
    return True


def digest_outcome(value: Any) -> str:
    """``digestToolOutcome``: untrusted-content marker ids are canonicalised first. The
    digest of a flat value is remembered (``remembered_digest``)."""
    return remembered_digest("digest", value, digest_outcome_afresh)


def digest_outcome_afresh(value: Any) -> str:
    """``digest_outcome``, made now whether or not it is remembered."""
    return stable_digest(value, _canonical_markers, "<<<EXTERNAL_UNTRUSTED_CONTENT")

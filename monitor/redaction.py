"""Text as the dashboard shows it: secrets masked, arguments formatted, whitespace clipped.

Everything shown of a tool call (arguments, outcome) or a gateway-log line passes through
here first. Secret-named keys are masked whatever their value; secret-looking text (bearer
and basic credentials, provider key shapes, JWTs, ``password=…``, ``--token …``, URL
credentials) is masked wherever it appears. Only what can be shown is redacted: a long text
is cut to its shown start (plus ``REDACT_SLACK``) first.
"""

from __future__ import annotations

import json
import re
from typing import Any

_SECRET_KEY = re.compile(r"(?i)(token|secret|passw|pwd|api[_-]?key|apikey|auth|cookie|"
                         r"credential|private[_-]?key|session[_-]?key)")
# (regex, replacement, markers): the regex runs only on a text whose casefolded form holds
# one of its markers, which every match contains (most texts hold none).
_SECRET_TEXT = [(re.compile(pattern), replacement, markers)
                for pattern, replacement, markers in (
    (r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}", r"\1 «redacted»", ("bearer", "basic")),
    (r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{10,}", "«redacted»", ("sk-", "pk-", "rk-")),
    (r"\bgh[pousr]_[A-Za-z0-9]{16,}", "«redacted»", ("gh",)),
    (r"\bxox[abprs]-[A-Za-z0-9-]{10,}", "«redacted»", ("xox",)),
    (r"\bAKIA[0-9A-Z]{16}\b", "«redacted»", ("akia",)),
    (r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", "«redacted»", ("eyj",)),
    (r"(?i)((?:api[_-]?key|token|secret|password|passwd|pwd)[\"']?\s*[=:]\s*[\"']?)"
     r"[^\s\"'&,;]+", r"\1«redacted»", ("api", "token", "secret", "passw", "pwd")),
    (r"(?i)(--(?:token|password|secret|api-key|apikey)[= ])\S+", r"\1«redacted»", ("--",)),
    (r"(://[^/\s:@]+:)[^@\s/]+@", r"\1«redacted»@", ("://",)),
)]
REDACTED = "«redacted»"
# Characters redacted past what a pane shows, so a secret that starts in view is masked
# whole; the rest of a long text is never shown, so it is not redacted.
REDACT_SLACK = 2000


def redact_text(text: str) -> str:
    """``text`` with bearer tokens, API keys, passwords and URL credentials masked."""
    folded = text.casefold()
    if not folded.isascii():  # the two letters ``(?i)i`` matches that casefold elsewhere
        folded = folded.replace("\u0131", "i").replace("\u0307", "")
    for pattern, replacement, markers in _SECRET_TEXT:
        if any(marker in folded for marker in markers):
            text = pattern.sub(replacement, text)
    return text


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


def redact(value: Any, limit: int | None = None) -> Any:
    """A copy of ``value`` (JSON-like) with secret-named keys and secret-looking text masked.
    With ``limit``, each text is cut to its ``shown_start`` first (for display only)."""
    if isinstance(value, dict):
        return {k: REDACTED if isinstance(k, str) and _SECRET_KEY.search(k)
                and not isinstance(v, (dict, list)) else redact(v, limit)
                for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v, limit) for v in value]
    if isinstance(value, str):
        return redact_text(value if limit is None else shown_start(value, limit))
    return value


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


def clip(text: str, limit: int) -> str:
    """``text`` with its whitespace collapsed, cut to ``limit`` characters (… marks a cut)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"

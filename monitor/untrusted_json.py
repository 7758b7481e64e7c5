"""JSON decoding for text that models, tools and web pages wrote.

Two depths matter. ``json.loads`` recurses once per nesting level, so ``[[[[…]]]]`` a
thousand levels deep raises ``RecursionError``, which no reader expects and which ends the
process: ``loads`` turns that into ``UntrustedJSONError``, a ``ValueError`` like every other
malformed line, so such a line is counted and shown where it was found. A value a few
hundred levels deep decodes, but every recursive consumer after it (redaction, argument
formatting, stable hashing) would then run out of stack in turn, on whatever thread reads
it: so the parts of a value nested deeper than ``MAX_DEPTH`` are replaced by a marker
string, and the record itself (a tool call, say) is kept.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pyjson5

MAX_DEPTH = 64                  # far beyond any real tool argument or transcript entry
TOO_DEEP = f"«nested deeper than {MAX_DEPTH} levels»"
#: msgspec decodes what ``json.loads`` decodes, to the same values, about twice as fast; what
#: it refuses (``NaN``, ``1e400``, lone surrogates, nesting past its limit) ``json.loads``
#: decides, so the result never differs.
_FAST = msgspec.json.Decoder()
#: Up to this length a text's bracket count (``may_nest_too_deep``) is the cheaper test of
#: its depth; past it, walking the decoded containers is: counting runs over every byte,
#: while most of a long line is the bytes of a few strings (a tool's output).
COUNT_BRACKETS_UP_TO = 4096


class UntrustedJSONError(ValueError):
    """JSON nested deeper than the decoder can follow."""


def loads(text: str | bytes) -> Any:
    """``json.loads(text)`` with containers below ``MAX_DEPTH`` levels replaced by
    ``TOO_DEEP``; nesting too deep to decode raises ``UntrustedJSONError`` (a ValueError)."""
    try:
        value = _FAST.decode(text)
    except (msgspec.MsgspecError, ValueError, RecursionError):
        try:       # bytes are UTF-8, as for the fast decoder (json.loads would guess UTF-16)
            value = json.loads(text if isinstance(text, str) else text.decode())
        except RecursionError:
            raise UntrustedJSONError("JSON nested too deeply") from None
    if may_nest_too_deep(text) if len(text) <= COUNT_BRACKETS_UP_TO else nests_deeper(value):
        value = clip_depth(value)
    return value


def may_nest_too_deep(text: str | bytes) -> bool:
    """Whether a value in ``text`` could nest past ``MAX_DEPTH``: a value cannot be deeper
    than its count of opening brackets (a C-speed count), so almost every line says no."""
    if isinstance(text, str):
        return text.count("[") + text.count("{") > MAX_DEPTH
    return text.count(b"[") + text.count(b"{") > MAX_DEPTH


def nests_deeper(value: Any, max_depth: int = MAX_DEPTH) -> bool:
    """Whether ``value`` holds a list or dict at a depth past ``max_depth`` (the top being
    depth 1): a walk over the containers a level at a time, whose cost is the number of
    items in them, not the length of the strings."""
    level = [value] if type(value) is dict or type(value) is list else []
    depth = 1
    while level:
        if depth > max_depth:
            return True
        nested = []
        for container in level:
            for item in container.values() if type(container) is dict else container:
                if type(item) is dict or type(item) is list:
                    nested.append(item)
        level = nested
        depth += 1
    return False


def load(handle) -> Any:
    """``loads`` of what an open file holds."""
    return loads(handle.read())


def clip_depth(value: Any, max_depth: int = MAX_DEPTH) -> Any:
    """``value`` with every list or dict at depth ``max_depth`` (the top being depth 1)
    replaced by ``TOO_DEEP``, in place; iterative, so any depth is walked safely."""
    if not isinstance(value, (list, dict)):
        return value
    if max_depth < 1:
        return TOO_DEEP
    pending: list[tuple[list | dict, int]] = [(value, 1)]
    while pending:
        container, depth = pending.pop()
        slots = container.items() if isinstance(container, dict) else enumerate(container)
        for slot, item in list(slots):
            if isinstance(item, (list, dict)):
                if depth + 1 > max_depth:
                    container[slot] = TOO_DEEP
                else:
                    pending.append((item, depth + 1))
    return value


def loads_json5(raw: bytes) -> Any:
    """A JSON5 document (OpenClaw's ``openclaw.json``: comments, trailing commas, unquoted
    keys, single quotes): as ``loads`` when it is plain JSON, else decoded by ``pyjson5``,
    whose own nesting limit (32 levels) keeps it off the stack. Raises ``UnicodeError`` for
    bytes that are not UTF-8 and ``ValueError`` for anything else it cannot decode."""
    try:
        return loads(raw)
    except UnicodeError:
        raise
    except ValueError:
        text = raw.decode()
    try:
        return pyjson5.decode(text)
    except pyjson5.Json5Exception as exc:
        raise ValueError(f"not JSON5: {str(exc.args[0] if exc.args else exc)[:200]}") from None

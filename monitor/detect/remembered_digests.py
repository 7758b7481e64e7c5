"""Digests of small flat values, remembered: a looping agent gets the same outcome (and
makes the same call) again and again, and a digest is most of what comparing two outcomes
costs. The table is bounded (``BoundedMemo``) and starts over when full.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from monitor.detect.jsstable import UNDEFINED
from monitor.detect.memo import BoundedMemo

#: Up to this many digests of flat values of at most this many entries and characters are
#: remembered (then it starts over; a few MB at most).
REMEMBERED_DIGESTS = 512
REMEMBERED_ENTRIES = 16
REMEMBERED_CHARS = 2048
_REMEMBERED = BoundedMemo(REMEMBERED_DIGESTS)
#: Floats, rare in outcomes, are left out (their JSON text is JavaScript's number text).
_FLAT_TYPES = frozenset((str, int, bool, type(None), type(UNDEFINED)))


def remembered_digest(kind: str, value: Any, make: Callable[[Any], str]) -> str:
    """``make(value)`` remembered under ``kind`` when ``value`` is a short string or a
    small flat dict of short strings and scalars. Each scalar is keyed with its type: ``1``
    and ``True`` are equal keys in Python, not in JSON."""
    if type(value) is str:
        if len(value) > REMEMBERED_CHARS:
            return make(value)
        key: tuple = (kind, value)
    elif type(value) is dict and len(value) <= REMEMBERED_ENTRIES:
        parts: list = [kind]
        chars = 0
        for name, item in value.items():
            item_type = type(item)
            if item_type is str:
                chars += len(item)
            elif item_type not in _FLAT_TYPES:
                return make(value)
            chars += len(name) if type(name) is str else REMEMBERED_CHARS
            parts += (name, item_type, item)
        if chars > REMEMBERED_CHARS:
            return make(value)
        key = tuple(parts)
    else:
        return make(value)
    digest = _REMEMBERED.get(key)
    if digest is None:
        digest = _REMEMBERED.keep(key, make(value))
    return digest

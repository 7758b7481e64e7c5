"""Outcome keys whose digest is made only when something compares it.

``session_no_progress`` and ``post_compaction_repeat`` ask one thing of an outcome key: is it
among the recent ones. A key is ``outcome_prefix`` (``ok:<arguments' hash>`` or
``fail:<tool>``) and a digest of the masked result, and two keys are equal only when their
prefixes are; most results (a command run once, a file read once) share their prefix with
nothing in the window, and masking and hashing their bodies is most of a replay's time.
An ``OutcomeKey`` hashes as its prefix, so a set or a counter compares it only with keys of
the same prefix, and makes its digest then (or when it is shown or pickled).

The bodies still waiting are held in ``DeferredBodies`` up to a budget: past it, the oldest
keys still alive are made and let go of their bodies. Only a replay gives a budget: a live
engine makes each key at once (a result costs little there, and its body would be held for
hours).
"""

from __future__ import annotations

import weakref
from typing import Any

from monitor.detect.normalise import Normaliser, outcome_digest, outcome_prefix

#: Bytes of result bodies the keys of a replay's engine may hold unmade: a giant session's
#: window of 30 large results must fit (with 1 MiB a replay gains nothing).
REPLAY_BUDGET_BYTES = 16 << 20
#: What one held key costs besides its body's strings (the key, its tuple, the details dict).
ENTRY_BYTES = 512
#: Details with more entries than this are not held (their size is not cheap to tell).
FLAT_DETAILS_MAX = 32


class OutcomeKey:
    """An outcome key; ``make()`` gives its text (``normalise.outcome_key``)."""

    __slots__ = ("__weakref__", "_body", "_hash", "_text", "prefix")

    def __init__(self, prefix: str, body: tuple | None, text: str | None = None) -> None:
        self.prefix = prefix
        self._hash = hash(prefix)
        #: ``(normaliser, tool, is_error, details, text)`` until the digest is made.
        self._body = body
        self._text = text

    @property
    def made(self) -> bool:
        return self._text is not None

    def make(self) -> str:
        text = self._text
        if text is None:
            normaliser, tool, is_error, details, result_text = self._body  # type: ignore[misc]
            digest = outcome_digest(normaliser, tool, is_error=is_error, details=details,
                                    text=result_text)
            text = self._text = f"{self.prefix}:{digest}"
            self._body = None
        return text

    __str__ = make

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, OutcomeKey):
            return NotImplemented
        return self.prefix == other.prefix and self.make() == other.make()

    def __reduce__(self):
        return (made_key, (self.prefix, self.make()))

    def __repr__(self) -> str:
        return f"OutcomeKey({self._text or self.prefix + ':…'!r})"


def made_key(prefix: str, text: str) -> OutcomeKey:
    """A key as ``pickle`` gives it back: made."""
    return OutcomeKey(prefix, None, text)


def held_size(details: Any, text: str) -> int | None:
    """About how many bytes a result's body holds: its text and the strings of flat details;
    None for details that nest (such a key is made at once)."""
    size = len(text)
    if details is None:
        return size
    if not isinstance(details, dict) or len(details) > FLAT_DETAILS_MAX:
        return None
    for value in details.values():
        if type(value) is str:
            size += len(value)
        elif value is not None and type(value) not in (int, float, bool):
            return None
    return size


class DeferredBodies:
    """Makes the outcome keys of one engine, holding their bodies up to ``budget_bytes``.

    ``_held`` maps each key still alive that was given a body to hold, oldest first, to its
    weak reference and size; a key that dies leaves it, one made by a comparison leaves it
    at the next shed."""

    def __init__(self, budget_bytes: int = 0) -> None:
        self.budget_bytes = budget_bytes
        self.held_bytes = 0
        self._held: dict[int, tuple[weakref.ref[OutcomeKey], int]] = {}

    def key(self, normaliser: Normaliser, tool: str, args_hash: str, *, is_error: bool,
            details: Any, text: str) -> OutcomeKey:
        prefix = outcome_prefix(tool, args_hash, is_error=is_error, details=details, text=text)
        key = OutcomeKey(prefix, (normaliser, tool, is_error, details, text))
        size = held_size(details, text) if self.budget_bytes > 0 else None
        if size is None:
            key.make()
            return key
        size += ENTRY_BYTES
        ref = weakref.ref(key, self._gone)
        self._held[id(ref)] = (ref, size)
        self.held_bytes += size
        if self.held_bytes > self.budget_bytes:
            self._shed()
        return key

    def _gone(self, ref: weakref.ref) -> None:
        entry = self._held.pop(id(ref), None)
        if entry is not None:
            self.held_bytes -= entry[1]

    def _shed(self) -> None:
        """Forget the keys made since, then make the oldest until half the budget is held
        (each shed is paid for by half a budget of new bodies)."""
        for ident, (ref, size) in list(self._held.items()):
            key = ref()
            if key is None or key.made or self.held_bytes > self.budget_bytes // 2:
                if self._held.pop(ident, None) is not None:    # not gone meanwhile
                    self.held_bytes -= size
                if key is not None:
                    key.make()

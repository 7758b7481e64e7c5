"""Outcome keys and hashes made only when something compares them.

``session_no_progress`` and ``post_compaction_repeat`` ask one thing of an outcome key: is it
among the recent ones. A key is ``outcome_prefix`` (``ok:<arguments' hash>`` or
``fail:<tool>``) and a digest of the masked result, and two keys are equal only when their
prefixes are; most results (a command run once, a file read once) share their prefix with
nothing in the window, and masking and hashing their bodies is most of a replay's time.
A ``LazyDigest`` key hashes as its prefix, so a set or a counter compares it only with keys
of the same prefix, and makes its digest then (or when it is shown or pickled).

OpenClaw's own outcome hashes (``outcomes.outcome_of``: a result's hash, an exec failure's
identity) are compared only between records of one tool (``loopcore``), and mostly between
calls with the same arguments: such a ``LazyDigest`` hashes as its tool and is made when
compared with another of that tool, or shown.

The bodies still waiting are held in ``DeferredBodies`` up to a budget: past it, the oldest
still alive are made and let go of their bodies. Only a replay gives a budget: a live
engine makes each at once (a result costs little there, and its body would be held for
hours).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from monitor.detect.normalise import Normaliser, outcome_prefix, prefixed_key
from monitor.detect.outcome_record import made_now

#: Bytes of result bodies the keys and hashes of a replay's engine may hold unmade: a giant
#: session's window of 30 large results must fit (with 1 MiB a replay gains nothing).
REPLAY_BUDGET_BYTES = 16 << 20
#: What one held key or hash costs besides its body's strings (itself, its tuple, the dict).
ENTRY_BYTES = 512
#: Details with more entries than this are not held (their size is not cheap to tell).
FLAT_DETAILS_MAX = 32


class LazyDigest:
    """An outcome key or hash: ``make()`` gives its text, ``make(*args)`` of the ``make``
    given, once. Equal to another of the same ``group`` (a key's prefix, a hash's tool)
    with the same text; it hashes as its group."""

    __slots__ = ("__weakref__", "_args", "_make", "_text", "group")

    def __init__(self, group: str, make: Callable[..., str] | None, *args: Any,
                 text: str | None = None) -> None:
        self.group = group
        self._make = make
        self._args = args
        self._text = text

    @property
    def made(self) -> bool:
        return self._text is not None

    def make(self) -> str:
        text = self._text
        if text is None:
            text = self._text = self._make(*self._args)  # type: ignore[misc]
            self._make, self._args = None, ()
        return text

    __str__ = make

    def __format__(self, spec: str) -> str:
        return format(self.make(), spec)

    def __hash__(self) -> int:
        return hash(self.group)

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if type(other) is not LazyDigest:
            return NotImplemented
        if self.group != other.group:
            return False
        return (self._text or self.make()) == (other._text or other.make())

    def __reduce__(self):
        return (made_digest, (self.group, self.make()))

    def reduce_unmade(self):
        """``__reduce__`` that leaves a digest not yet made unmade: it pickles its maker and
        body instead (``frozen``: most frozen sessions are never thawed)."""
        if self._text is not None:
            return self.__reduce__()
        return (LazyDigest, (self.group, self._make, *self._args))

    def __repr__(self) -> str:
        return f"LazyDigest({self.group!r}, {self._text or '…'!r})"


def made_digest(group: str, text: str) -> LazyDigest:
    """A key or hash as ``pickle`` gives it back: made."""
    return LazyDigest(group, None, text=text)


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
    """Makes the outcome keys and hashes of one engine, holding their bodies up to
    ``budget_bytes`` (0: each made at once).

    ``_held`` maps each key or hash still alive that was given a body to hold, oldest first,
    to its weak reference and size; one that dies leaves it, one made by a comparison leaves
    it at the next shed."""

    def __init__(self, budget_bytes: int = 0) -> None:
        self.budget_bytes = budget_bytes
        self.held_bytes = 0
        self._held: dict[int, tuple[weakref.ref, int]] = {}

    def held(self, details: Any, text: str) -> int | None:
        """The bytes a result's body would be held for here (None: its keys and hashes are
        made at once), for ``key`` and ``deferring``."""
        return held_size(details, text) if self.budget_bytes > 0 else None

    def key(self, normaliser: Normaliser, tool: str, args_hash: str, *, is_error: bool,
            details: Any, text: str, held: int | None) -> LazyDigest:
        """The outcome key of a result: its prefix now, its digest when compared."""
        prefix = outcome_prefix(tool, args_hash, is_error=is_error, details=details, text=text)
        key = LazyDigest(prefix, prefixed_key, prefix, normaliser, tool, is_error, details, text)
        if held is None:
            key.make()
        else:
            self._hold(key, held)
        return key

    def deferring(self, tool: str, held: int | None) -> Callable:
        """``outcome_of``'s ``defer`` for a result of ``tool``: ``LazyDigest``s held here,
        or digests made now when the body is not held."""
        if held is None:
            return made_now

        def defer(make: Callable[..., str], *args: Any) -> LazyDigest:
            digest = LazyDigest(tool, make, *args)
            self._hold(digest, held)
            return digest
        return defer

    def _hold(self, value: LazyDigest, size: int) -> None:
        size += ENTRY_BYTES
        ref = weakref.ref(value, self._gone)
        self._held[id(ref)] = (ref, size)
        self.held_bytes += size
        if self.held_bytes > self.budget_bytes:
            self._shed()

    def _gone(self, ref: weakref.ref) -> None:
        entry = self._held.pop(id(ref), None)
        if entry is not None:
            self.held_bytes -= entry[1]

    def _shed(self) -> None:
        """Forget what was made since, then make the oldest until half the budget is held
        (each shed is paid for by half a budget of new bodies)."""
        for ident, (ref, size) in list(self._held.items()):
            value = ref()
            if value is None or value.made or self.held_bytes > self.budget_bytes // 2:
                if self._held.pop(ident, None) is not None:    # not gone meanwhile
                    self.held_bytes -= size
                if value is not None:
                    value.make()

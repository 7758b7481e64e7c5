"""Detector states set aside whole while a replay reads other sessions.

A replay reads a session's transcripts one after another, so most sessions are done once
the next one starts; each may still get another event (an archive, another source), and
must then thaw to exactly the state it had. Their states are pickled, compressed and
written to an unnamed temporary file, which the process would otherwise hold to its end.
An outcome key or hash not yet made is pickled with the result it would be made from, not
made: few frozen sessions are ever thawed, and making their windows' keys was a seventh
of a replay's time. A replay of 10,003 sessions writes some 120 MB this way (22 MB with the
keys made). A thawed key holds its body outside the engine's budget (``DeferredBodies``)
until it is compared: at most one session's window of them.
"""

from __future__ import annotations

import copyreg
import io
import os
import pickle
import tempfile
from collections import OrderedDict, deque
from typing import IO

import zstandard

from monitor.detect.outcome_keys import LazyDigest
from monitor.detect.session_state import SessionState


def _unmade_stay_unmade() -> dict:
    """How a frozen state pickles: an outcome key or hash not yet made keeps its result
    body rather than being made (``LazyDigest.reduce_unmade``). A plain dict, made for each
    state: the pickler looks up the type of every object it reduces in it, and a lookup in
    a mapping that is not a dict is a Python call. A deque or an ``OrderedDict`` pickles
    as its items: their own ``__reduce__`` asks ``copyreg`` for slot names on every object,
    in Python, since a builtin type cannot keep the answer."""
    return {**copyreg.dispatch_table, LazyDigest: LazyDigest.reduce_unmade,
            deque: _reduce_deque, OrderedDict: _reduce_ordered_dict}


def _reduce_deque(items: deque) -> tuple:
    return deque, (list(items), items.maxlen)


def _reduce_ordered_dict(mapping: OrderedDict) -> tuple:
    return OrderedDict, (list(mapping.items()),)


class FrozenStates:
    """Pickled, compressed ``SessionState``s by session id, in a temporary file opened on
    first need (so a forked worker opens its own) and closed with this object."""

    def __init__(self) -> None:
        self._places: dict[str, tuple[int, int]] = {}   # session id -> (offset, length)
        self._file: IO[bytes] | None = None
        self._end = 0
        self._compress = zstandard.ZstdCompressor(level=1).compress
        self._decompress = zstandard.ZstdDecompressor().decompress

    def __contains__(self, session_id: object) -> bool:
        return session_id in self._places

    def __len__(self) -> int:
        return len(self._places)

    def put(self, session_id: str, state: SessionState) -> bool:
        """Set ``state`` aside; False (and nothing kept) when pickle cannot take it or the
        file cannot be written."""
        pickled = io.BytesIO()
        pickler = pickle.Pickler(pickled, pickle.HIGHEST_PROTOCOL)
        pickler.dispatch_table = _unmade_stay_unmade()
        try:
            pickler.dump(state)
            frozen = self._compress(pickled.getbuffer())
        except (pickle.PicklingError, AttributeError, TypeError, ValueError, RecursionError):
            return False
        try:
            if self._file is None:
                self._file = tempfile.TemporaryFile(prefix="clawwatch-frozen-")
            written = os.pwrite(self._file.fileno(), frozen, self._end)
        except OSError:
            return False
        if written != len(frozen):
            return False
        self._places[session_id] = (self._end, len(frozen))
        self._end += len(frozen)
        return True

    def take(self, session_id: str) -> SessionState | None:
        """The state set aside for ``session_id``, no longer kept here; None if none."""
        place = self._places.pop(session_id, None)
        if place is None or self._file is None:
            return None
        offset, length = place
        return pickle.loads(self._decompress(os.pread(self._file.fileno(), length, offset)))

"""Gateway log lines parsed ahead of their fold, while the log is held behind transcripts.

A source set gives out the log only once no transcript source is behind, so that each line
finds the runs it names (``SourceSet._poll_step``). In a dashboard's first scan that left
the log, most of it parsing, for the end, with the history reader idle. Parsed a step at a
time while the transcripts are still read, only its fold is left for the end.

What is parsed ahead is kept packed (msgpack: under half the memory of the notices) and
given out in the order it was read, one step's worth per poll. Until then it counts as not
read: the source's event and error counts and its checkpoint stay where its fold is.
"""

from __future__ import annotations

from collections import deque

import msgspec

from monitor.events import GatewayNotice

#: What a held log reads per step, and at most in all (packed bytes), ahead of its fold.
AHEAD_STEP_BYTES = 512 << 10
AHEAD_KEPT_BYTES = 32 << 20

_PACK = msgspec.msgpack.Encoder()
_UNPACK = msgspec.msgpack.Decoder(list[GatewayNotice])


class Batch(msgspec.Struct):
    """One step's events: packed when all are notices (an error or a notice of a file
    rotated is rare, and such a step is kept as it is)."""

    events: bytes | list
    events_counted: int
    errors_counted: int
    #: Log bytes read for it (for the backlog).
    log_bytes: int
    #: The source's checkpoint from before it was read.
    checkpoint_before: dict


class ParsedAhead:
    """The batches a source parsed ahead, oldest first."""

    def __init__(self) -> None:
        self._batches: deque[Batch] = deque()
        self.kept_bytes = 0
        self.log_bytes = 0

    def __bool__(self) -> bool:
        return bool(self._batches)

    @property
    def checkpoint(self) -> dict | None:
        """The source's checkpoint from before the oldest batch (None with none kept)."""
        return self._batches[0].checkpoint_before if self._batches else None

    @property
    def full(self) -> bool:
        return self.kept_bytes >= AHEAD_KEPT_BYTES

    def add(self, events: list, events_counted: int, errors_counted: int, log_bytes: int,
            checkpoint_before: dict) -> None:
        if not events:
            return
        packed = _packed(events)
        self._batches.append(Batch(packed, events_counted, errors_counted, log_bytes,
                                   checkpoint_before))
        self.kept_bytes += _size(packed)
        self.log_bytes += log_bytes

    def take(self) -> Batch:
        """The oldest batch, its events unpacked."""
        batch = self._batches.popleft()
        self.kept_bytes -= _size(batch.events)
        self.log_bytes -= batch.log_bytes
        if isinstance(batch.events, bytes):
            batch.events = _UNPACK.decode(batch.events)
        return batch

    def clear(self) -> None:
        self._batches.clear()
        self.kept_bytes = self.log_bytes = 0


def _packed(events: list) -> bytes | list:
    """``events`` packed when all are notices and each can be: a message may hold a lone
    surrogate (OpenClaw's JSON writes one as ``\\ud800``, and the model chooses a tool's
    output), which msgpack's UTF-8 cannot hold; such a step is kept as it is."""
    if not all(type(e) is GatewayNotice for e in events):
        return events
    try:
        return _PACK.encode(events)
    except UnicodeEncodeError:
        return events


def _size(events: bytes | list) -> int:
    return len(events) if isinstance(events, bytes) else 1024 * len(events)

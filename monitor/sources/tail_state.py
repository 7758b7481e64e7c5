"""What a ``FileFollower`` (``sources.tail``) gives, keeps and checkpoints: the lines and
notices it reads, the position it saves across a restart, the read state of each file it
holds open, and whether the files read are complete (``complete_files``: ``replay``).

A position is checked on resume by a fingerprint of the ``FINGERPRINT_BYTES`` bytes before
it: the window spans several lines, since the last ~100 bytes of many log lines never change.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import msgspec

from monitor.sources.saved import is_saved_int

FINGERPRINT_BYTES = 1024

#: Set while the files read are complete (``replay``): a last line without a newline is
#: read at once, not after ``partial_line_grace``.
_FILES_COMPLETE: ContextVar[bool] = ContextVar("clawwatch_files_complete", default=False)


@contextlib.contextmanager
def complete_files(complete: bool = True):
    """Within this block (in this thread or task), the followers polled read files that no
    writer adds to: a partial last line is read at once."""
    token = _FILES_COMPLETE.set(complete)
    try:
        yield
    finally:
        _FILES_COMPLETE.reset(token)


def files_complete() -> bool:
    """Whether the followers polled now read complete files (``complete_files``)."""
    return _FILES_COMPLETE.get()


class Line(msgspec.Struct, frozen=True):
    """A complete line (without its newline) and where it started."""

    path: str
    offset: int
    data: bytes


@dataclass(slots=True)
class TailNotice:
    """Something the follower noticed; ``error`` marks data that could not be read."""

    path: str
    message: str
    error: bool = False
    where: str = ""


@dataclass(slots=True)
class FollowerState:
    """What a checkpoint keeps of a follower. ``mid_line``: ``offset`` is inside a line
    already read (a last line read without its newline, or an overlong line being
    skipped); what follows up to the next newline is not a line of its own."""

    dev: int
    ino: int
    offset: int
    fingerprint: str
    mid_line: bool = False

    def as_json(self) -> dict:
        data = {"dev": self.dev, "ino": self.ino, "offset": self.offset, "fp": self.fingerprint}
        if self.mid_line:
            data["mid"] = True
        return data

    @classmethod
    def from_json(cls, data: Any) -> FollowerState:
        """The state ``as_json`` gave; ``ValueError`` for anything else (a checkpoint on disk
        is not trusted: a string, a float, a negative or a 2**70 position is refused)."""
        if type(data) is not dict:
            raise ValueError("not a saved position")
        dev, ino, offset, fp = (data.get(key) for key in ("dev", "ino", "offset", "fp"))
        if not (is_saved_int(dev) and is_saved_int(ino) and is_saved_int(offset)
                and type(fp) is str):
            raise ValueError("not a saved position")
        return cls(dev, ino, offset, fp, data.get("mid") is True)


def saved_positions(value: Any) -> dict[str, FollowerState]:
    """``path -> FollowerState`` of a checkpoint's ``files``: the entries that are one (a
    file without a position is saved as null, and a hand-edited or damaged entry is left out,
    so that file is read as one the checkpoint does not name)."""
    positions = {}
    for path, state in (value.items() if type(value) is dict else ()):
        try:
            positions[path] = FollowerState.from_json(state)
        except ValueError:
            continue
    return positions


@dataclass(slots=True)
class OpenFile:
    """One file a follower holds open, and how far it has read it."""

    path: str
    fd: int
    dev: int
    ino: int
    offset: int = 0
    pending_partial_line: bytes = b""
    skipping_long_line: bool = False
    last_growth: float = field(default_factory=time.monotonic)
    fingerprint_at_offset: str | None = None
    #: The last FINGERPRINT_BYTES bytes before ``offset`` as they were read. The fingerprint is
    #: taken from these, not from the disk after the read: a copytruncate in between would
    #: give the new file's fingerprint, and its copy would not be recognised.
    bytes_before_offset: bytes = b""
    #: The size last seen by stat, fstat or reading to the end; for the backlog estimate.
    size_seen: int = 0
    #: Whether the last read reached the end of the file (False when a budget stopped it).
    at_eof: bool = False
    #: No writer will add to this file (a copytruncate copy): its last partial line is
    #: emitted as soon as it is reached.
    final: bool = False
    #: The largest read position reached in this file; reading up to it again (after a
    #: suspend) is not growth. ``last_growth`` is when it last increased.
    grown_to: int = 0
    #: Where the partial last line read without its newline started, while its rest (if a
    #: writer completes it) is being skipped.
    completed_early_at: int | None = None

    @property
    def read_position(self) -> int:
        return self.offset + len(self.pending_partial_line)

    @property
    def unread_bytes(self) -> int:
        return max(0, self.size_seen - self.read_position)


def digest(data: bytes) -> str:
    """The fingerprint of the bytes before a position."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def bytes_on_disk_before_offset(handle: OpenFile) -> bytes:
    """The ``FINGERPRINT_BYTES`` bytes before the handle's offset as they are on disk now."""
    return bytes_before(handle.fd, handle.offset)


def bytes_before(fd: int, offset: int) -> bytes:
    """The ``FINGERPRINT_BYTES`` bytes before ``offset`` of the file open as ``fd``, as
    they are on disk now: fewer when it is shorter now, none when it cannot be read."""
    start = max(0, offset - FINGERPRINT_BYTES)
    try:
        return os.pread(fd, offset - start, start)
    except OSError:
        return b""

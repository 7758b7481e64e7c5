"""Follow one file by name, emitting each complete line exactly once.

The follower keeps the inode it has open, the offset just past the last
complete line, and the bytes of a pending partial line. On each ``poll`` it

* drains files that were rotated away (renamed or deleted while open) before
  reading the file that now has the name, so order within a file holds and
  nothing written to the old inode is lost;
* notices truncation (the file got shorter, or the bytes just before our
  offset changed: truncated and rewritten past our offset) and restarts at 0,
  first recovering the unread tail from a ``copytruncate`` copy beside it when
  one with matching bytes exists;
* reads complete lines; a line longer than ``max_line_bytes`` is skipped
  and reported rather than buffered without bound;
* reads a last line that has no newline once it has stood still for
  ``partial_line_grace`` seconds (no growth seen, or a file mtime that old), or at once
  where the files are complete (``complete_files()``: ``replay``). It is read once: the
  position moves past it and the follower is "mid-line" (``FollowerState.mid_line``,
  kept across a suspend and a restart) until the next newline, so a writer that later
  completes the line does not have it read twice (its rest is skipped, with a notice);
* reads at most ``max_bytes`` per poll when asked to, so a caller catching up
  on a huge file takes it in bounded steps; ``behind`` says more is readable;
* opens only regular files (``sources.regular``): a FIFO, device, socket or
  directory at the path (or behind a symlink) is reported once, as an error
  naming what it is, and never read; a regular file that later takes its place is.

``changed()`` tells a caller with thousands of idle followers, for one ``stat``,
whether a poll could find anything.

``suspend()`` closes the descriptor of an idle follower (a process may not keep
one open per transcript of a large state dir) and keeps only its position; the
next ``poll`` after the file changed (size, mtime or inode) reopens it and goes
on exactly where it stopped, including a rotation or truncation that happened
while it was closed.

``state()`` and the ``resume`` argument carry inode, offset, a fingerprint
of the bytes before the offset and whether the offset is inside a line already read
across restarts, so a restarted monitor neither re-reads nor skips anything (a file
rotated while the monitor was down is found by its inode among its siblings and drained
first). A partial line not read yet is not covered by the offset: it is read again after
a restart, once.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import time
from contextvars import ContextVar
from dataclasses import dataclass, field

from monitor.sources.regular import NotRegularFile, open_regular, open_regular_file, refusal

READ_CHUNK_BYTES = 1 << 20
#: Bytes one source reads per poll: large enough that catching up is fast, small enough that
#: one step never holds the lines of a whole large history in memory at once.
POLL_BUDGET_BYTES = 32 << 20
#: What a source reads of one file at a time within its budget, checking its step's deadline
#: in between: reading and folding 32 MB of transcript takes seconds, and a stop signal or a
#: quit key must not wait for that.
READ_STEP_BYTES = 2 << 20
UNLIMITED = 1 << 62
FINGERPRINT_BYTES = 1024
DEFAULT_MAX_LINE_BYTES = 32 << 20
ROTATED_GRACE_SECONDS = 2.0
#: How long a last line without a newline must stand still before it is read as it is.
PARTIAL_LINE_GRACE_SECONDS = 2.0

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
    return _FILES_COMPLETE.get()


@dataclass(frozen=True, slots=True)
class Line:
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
    def from_json(cls, data: dict) -> FollowerState:
        return cls(int(data["dev"]), int(data["ino"]), int(data["offset"]), str(data["fp"]),
                   data.get("mid") is True)


@dataclass(slots=True)
class _OpenFile:
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


class FileFollower:
    """Follows ``path`` across rotation, truncation, deletion and re-creation."""

    def __init__(
        self,
        path: str,
        *,
        resume: FollowerState | None = None,
        start_at_end: bool = False,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        rotated_grace_seconds: float = ROTATED_GRACE_SECONDS,
        partial_line_grace: float | None = PARTIAL_LINE_GRACE_SECONDS,
    ) -> None:
        self.path = path
        self.max_line_bytes = max_line_bytes
        self.rotated_grace_seconds = rotated_grace_seconds
        #: Seconds a last line without a newline stands still before it is read as it is
        #: (None: never, only when completed).
        self.partial_line_grace = partial_line_grace
        self.rotated_quiet_seconds = min(0.2, rotated_grace_seconds)
        self._current: _OpenFile | None = None
        self._draining: list[_OpenFile] = []
        self._resume = resume
        #: ``(dev, ino) -> size`` of the rotated files this follower read to their end.
        self._drained_sizes: dict[tuple[int, int], int] = {}
        #: ``(dev, ino, size, mtime_ns)`` of the file when ``suspend`` closed it.
        self._suspended_as: tuple[int, int, int, int] | None = None
        #: ``(last_growth, grown_to)`` of a file suspended with a partial last line unread,
        #: so that line is still read after its grace time (and that time is not restarted).
        self._suspended_partial: tuple[float, int] | None = None
        self._start_at_end = start_at_end
        self._budget = UNLIMITED
        self.notices: list[TailNotice] = []
        self._last_error: str | None = None
        #: ``(dev, ino, mode)`` of the non-regular file (FIFO, device...) at ``path`` that was
        #: refused, so it is reported once, not on every poll.
        self._refused_as: tuple[int, int, int] | None = None
        #: What the last poll's ``stat`` of ``path`` saw (``_view``), for ``changed``.
        self._last_view: object = _NEVER_SEEN
        #: Bytes read by the last ``poll``.
        self.bytes_read = 0
        #: True when the last ``poll`` stopped at its ``max_bytes`` with more readable.
        self.behind = False

    # ------------------------------------------------------------------ public

    def poll(self, max_bytes: int | None = None) -> list[Line]:
        """Return the complete lines that appeared since the last poll, reading at most
        ``max_bytes`` (everything readable when None)."""
        lines: list[Line] = []
        self._budget = UNLIMITED if max_bytes is None else max(0, max_bytes)
        self.bytes_read = 0
        try:
            self._poll(lines)
        finally:
            self.behind = any(not handle.at_eof for handle in self._handles())
        return lines

    def state(self) -> FollowerState | None:
        """Position to checkpoint: the end of the last emitted line of the live file (or the
        saved position of a suspended follower, or of one not polled since its resume)."""
        current = self._current
        if current is None:
            return self._resume
        return FollowerState(current.dev, current.ino, current.offset,
                             _digest(current.bytes_before_offset), current.skipping_long_line)

    def suspend(self) -> bool:
        """Close the descriptor of a follower that has read its file to the end, keeping only
        its position; the next ``poll`` after the file changed reopens it there.

        Returns False, leaving it open, when that could not resume exactly: a rotated file
        still draining, or bytes not read yet. A partial last line is dropped from memory
        and read again after the resume (``changed`` says so when its grace time is over);
        being inside a line (``mid_line``) is kept.
        """
        current = self._current
        if current is None or self._draining or not current.at_eof:
            return False
        try:
            st = os.fstat(current.fd)
        except OSError:
            return False
        if st.st_size != current.read_position:
            return False
        self._resume = FollowerState(current.dev, current.ino, current.offset,
                                     _digest(current.bytes_before_offset),
                                     current.skipping_long_line)
        self._suspended_as = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        self._suspended_partial = (current.last_growth, current.grown_to) \
            if current.pending_partial_line else None
        os.close(current.fd)
        self._current = None
        return True

    @property
    def suspended(self) -> bool:
        return self._suspended_as is not None

    def changed(self) -> bool:
        """Whether a ``poll`` could find anything to do: True while a descriptor is open or a
        resume is pending; otherwise one ``stat`` of the path compared with what the last poll
        saw of it (a suspended file, a missing one, a refused FIFO or device). A caller with
        thousands of idle followers polls only those that changed."""
        if self._current is not None or self._draining:
            return True
        if self._suspended_as is not None:
            return not self._unchanged_since_suspend() or self._suspended_partial_due()
        if self._resume is not None:
            return True
        return _view(self.path) != self._last_view

    @property
    def open_descriptors(self) -> int:
        return len(self._draining) + (1 if self._current is not None else 0)

    @property
    def backlog_bytes(self) -> int:
        """Bytes known to be in the followed files past what was read (0 while suspended:
        a suspended file had been read to its end when it was closed)."""
        return sum(handle.unread_bytes for handle in self._handles())

    @property
    def pending_bytes(self) -> int:
        """Bytes read but not yet emitted (partial lines), across live and rotated files."""
        return sum(len(f.pending_partial_line) for f in self._handles())

    def identities(self) -> set[tuple[int, int]]:
        """``(dev, ino)`` of the files this follower reads, will resume, or has drained."""
        return self._reading() | self._drained_sizes.keys()

    def reads(self, st: os.stat_result) -> bool:
        """Whether this follower reads (or has read to its end) the file ``st`` describes: a
        rotated file is drained through its follower, so it must not be opened again under
        its new name. A closed file counts only at the size it was read to, so a reused
        inode number is not mistaken for it."""
        identity = (st.st_dev, st.st_ino)
        return identity in self._reading() or self._drained_sizes.get(identity) == st.st_size

    def _reading(self) -> set[tuple[int, int]]:
        """``(dev, ino)`` of the open files and of the one a resume will reopen."""
        found = {(handle.dev, handle.ino) for handle in self._handles()}
        if self._resume is not None:
            found.add((self._resume.dev, self._resume.ino))
        return found

    def take_notices(self) -> list[TailNotice]:
        notices, self.notices = self.notices, []
        return notices

    def close(self) -> None:
        for handle in self._handles():
            os.close(handle.fd)
        self._draining.clear()
        self._current = None

    def _handles(self) -> list[_OpenFile]:
        return [*self._draining, *([self._current] if self._current else [])]

    # ----------------------------------------------------------------- polling

    def _poll(self, lines: list[Line]) -> None:
        if self._resume is not None:
            if self._suspended_as is not None and self._unchanged_since_suspend() \
                    and not self._suspended_partial_due():
                return
            saved, self._resume = self._resume, None
            after_suspend, self._suspended_as = self._suspended_as is not None, None
            self._apply_resume(saved, lines, after_suspend=after_suspend)
        self._drain_rotated(lines)
        # While a rotated file is still draining, the file now at the path is opened all the
        # same (and read only once the drain is done): a generation that is renamed away
        # again before the drain ends is then held by its descriptor instead of lost.
        draining = self._draining_unfinished()
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            self._last_view = None
            if self._current is not None:
                self._retire_current("file deleted; draining what is left", lines)
            return
        except OSError as exc:
            self._last_view = ("error", exc.errno)
            self._note(f"cannot stat: {exc.strerror or exc}", error=True)
            if self._current is not None and not draining:
                self._read_available(self._current, lines)
            return
        self._last_view = _view_of(st)
        current = self._current
        if current is not None and (current.dev, current.ino) != (st.st_dev, st.st_ino):
            self._retire_current("file rotated; draining the old file first", lines)
            current = None
        if not stat.S_ISREG(st.st_mode):
            self._refuse(st.st_dev, st.st_ino, st.st_mode)
            return
        if current is None:
            current = self._open(st, announce=True)
            if current is None:
                return
        elif draining:
            return
        elif self._was_truncated(current, st.st_size):
            self._handle_truncation(current, lines)
            self._drain_rotated(lines)
        if self._draining_unfinished():
            return
        current.size_seen = max(current.size_seen, st.st_size)
        self._read_available(current, lines)
        self._read_partial_last_line(current, lines)

    def _draining_unfinished(self) -> bool:
        """A rotated file (or copy) stopped short by the budget: the live file waits for it,
        so lines stay in the order they were written."""
        return any(not handle.at_eof for handle in self._draining)

    def _suspended_partial_due(self) -> bool:
        """A file suspended with a partial last line unread, whose grace time is over."""
        if self._suspended_partial is None or self.partial_line_grace is None \
                or self._suspended_as is None:
            return False
        since = self._suspended_partial[0]
        return files_complete() or time.monotonic() - since >= self.partial_line_grace \
            or time.time() - self._suspended_as[3] / 1e9 >= self.partial_line_grace

    def _unchanged_since_suspend(self) -> bool:
        try:
            st = os.stat(self.path)
        except OSError:
            return False
        return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns) == self._suspended_as

    # ----------------------------------------------------------------- opening

    def _refuse(self, dev: int, ino: int, mode: int) -> None:
        """``path`` names a FIFO, device, socket or directory: never opened nor read, and
        reported once per such file (again only when another one takes its place)."""
        if self._refused_as != (dev, ino, mode):
            self._refused_as = (dev, ino, mode)
            self._note(refusal(self.path, mode), error=True)

    @property
    def refused(self) -> bool:
        """The path named something not a regular file when last looked at."""
        return self._refused_as is not None and self._current is None

    def _open(self, st: os.stat_result | None, *, announce: bool) -> _OpenFile | None:
        try:
            fd = open_regular(self.path)
        except FileNotFoundError:
            return None
        except NotRegularFile:
            try:
                now = os.stat(self.path)
                self._refuse(now.st_dev, now.st_ino, now.st_mode)
            except OSError:
                pass
            return None
        except OSError as exc:
            self._note(f"cannot open: {exc.strerror or exc}", error=True)
            return None
        self._refused_as = None
        fst = os.fstat(fd)
        handle = _OpenFile(self.path, fd, fst.st_dev, fst.st_ino, size_seen=fst.st_size)
        if self._start_at_end:
            handle.offset = fst.st_size
            handle.bytes_before_offset = self._bytes_on_disk_before_offset(handle)
            self._start_at_end = False
        elif announce and st is not None:
            self._note("following from the start")
        self._current = handle
        return handle

    def _apply_resume(self, saved: FollowerState, lines: list[Line], *,
                      after_suspend: bool = False) -> None:
        """Reattach to a saved position (a checkpoint, or a follower closed by ``suspend``),
        finding a rotated file by inode."""
        self._start_at_end = False
        while_closed = "while closed for being idle" if after_suspend \
            else "while the monitor was stopped"
        try:
            st = os.stat(self.path)
        except OSError:
            st = None
        if st is not None and (st.st_dev, st.st_ino) == (saved.dev, saved.ino):
            handle = self._open(st, announce=False)
            if handle is None:
                self._resume = saved  # kept, to try again on the next poll
                return
            if (handle.dev, handle.ino) == (saved.dev, saved.ino):
                handle.offset = saved.offset
                handle.skipping_long_line = saved.mid_line
                if after_suspend and self._suspended_partial is not None:
                    handle.last_growth, handle.grown_to = self._suspended_partial
                self._suspended_partial = None
                handle.bytes_before_offset = self._bytes_on_disk_before_offset(handle)
                if handle.size_seen < saved.offset \
                        or _digest(handle.bytes_before_offset) != saved.fingerprint:
                    self._note(f"file was truncated {while_closed}")
                    handle.fingerprint_at_offset = saved.fingerprint
                    self._handle_truncation(handle, lines)
                return
            os.close(handle.fd)
            self._current = None
        rotated = self._find_sibling_by_inode(saved.dev, saved.ino)
        if rotated is None:
            if after_suspend:
                self._note(
                    f"file deleted {while_closed}; lines appended after offset {saved.offset} "
                    "just before the deletion, if any, were not read",
                    where=f"offset {saved.offset}",
                )
                return
            self._note(
                "the file read before the restart is gone; lines written to it after the "
                f"checkpoint (offset {saved.offset}) cannot be recovered",
                error=True,
                where=f"offset {saved.offset}",
            )
            return
        try:
            fd = open_regular(rotated)
        except OSError as exc:
            self._note(f"cannot open the rotated file {rotated}: {exc.strerror or exc}",
                       error=True, where=f"offset {saved.offset}")
            return
        fst = os.fstat(fd)
        handle = _OpenFile(rotated, fd, fst.st_dev, fst.st_ino, offset=saved.offset,
                           size_seen=fst.st_size, skipping_long_line=saved.mid_line)
        self._note(f"file was rotated to {os.path.basename(rotated)} {while_closed}; "
                   "draining it")
        self._draining.append(handle)

    def _find_sibling_by_inode(self, dev: int, ino: int) -> str | None:
        directory = os.path.dirname(os.path.abspath(self.path))
        try:
            entries = list(os.scandir(directory))
        except OSError:
            return None
        for entry in entries:
            try:
                if entry.inode() != ino:
                    continue
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if (st.st_dev, st.st_ino) == (dev, ino):
                return entry.path
        return None

    # ---------------------------------------------------------------- rotation

    def _retire_current(self, message: str, lines: list[Line]) -> None:
        current = self._current
        assert current is not None
        self._current = None
        self._note(message)
        self._read_available(current, lines)
        self._draining.append(current)
        self._drain_rotated(lines)

    def _drain_rotated(self, lines: list[Line]) -> None:
        """Read retired files to their end (as far as the budget goes); close each once it
        ends on a complete line and has stopped growing, or after a grace period with a
        partial line left. A copy no writer holds is closed as soon as it is read."""
        still_open: list[_OpenFile] = []
        now = time.monotonic()
        for handle in self._draining:
            grew = self._read_available(handle, lines)
            quiet_for = now - handle.last_growth
            if not handle.at_eof:
                still_open.append(handle)
            elif handle.final:
                if handle.pending_partial_line:
                    lines.append(Line(handle.path, handle.offset, handle.pending_partial_line))
                os.close(handle.fd)
            elif grew:
                still_open.append(handle)
            elif not handle.pending_partial_line and quiet_for >= self.rotated_quiet_seconds:
                os.close(handle.fd)
            elif handle.pending_partial_line and (quiet_for >= self.rotated_grace_seconds
                                                  or files_complete()):
                self._note(
                    "rotated file ended without a newline; emitting its last line as is",
                    where=f"offset {handle.offset}",
                )
                lines.append(Line(handle.path, handle.offset, handle.pending_partial_line))
                os.close(handle.fd)
            else:
                still_open.append(handle)
        for handle in self._draining:
            if handle not in still_open:
                self._drained_sizes[(handle.dev, handle.ino)] = handle.read_position
        self._draining = still_open

    # -------------------------------------------------------------- truncation

    def _was_truncated(self, handle: _OpenFile, size: int) -> bool:
        if size < handle.read_position:
            return True
        if handle.offset == 0 or handle.fingerprint_at_offset is None:
            return False
        return self._fingerprint(handle) != handle.fingerprint_at_offset

    def _handle_truncation(self, handle: _OpenFile, lines: list[Line]) -> None:
        """Restart the handle at 0; the unread tail of a ``copytruncate`` copy, when one is
        found, is queued to be read first."""
        copy = self._find_copytruncate_copy(handle)
        fd = None
        if copy is not None:
            try:
                fd = open_regular(copy)
            except OSError:
                fd = None
        if copy is not None and fd is not None:
            self._note(f"file truncated; reading the unread tail from its copy {copy}")
            fst = os.fstat(fd)
            self._draining.append(_OpenFile(copy, fd, fst.st_dev, fst.st_ino,
                                            offset=handle.offset, size_seen=fst.st_size,
                                            final=True))
        else:
            unread = max(0, handle.read_position - handle.offset)
            self._note(
                "file truncated; restarting at offset 0"
                + (f" ({unread} bytes of a partial line dropped)" if unread else ""),
                where=f"offset {handle.offset}",
            )
        handle.offset = 0
        handle.bytes_before_offset = b""
        handle.pending_partial_line = b""
        handle.skipping_long_line = False
        handle.completed_early_at = None
        handle.grown_to = 0
        handle.fingerprint_at_offset = None

    def _find_copytruncate_copy(self, handle: _OpenFile) -> str | None:
        """A sibling that holds the bytes we had read up to our offset (logrotate copytruncate)."""
        expected = handle.fingerprint_at_offset
        if handle.offset == 0 or not expected:
            return None
        directory = os.path.dirname(os.path.abspath(self.path))
        base = os.path.basename(self.path)
        stem = os.path.splitext(base)[0]
        candidates = []
        try:
            for entry in os.scandir(directory):
                if entry.name == base or not entry.name.startswith(stem):
                    continue
                st = entry.stat(follow_symlinks=False)
                if stat.S_ISREG(st.st_mode) and st.st_size >= handle.offset:
                    candidates.append((st.st_mtime, entry.path))
        except OSError:
            return None
        for _, path in sorted(candidates, reverse=True):
            try:
                with open_regular_file(path) as copy:
                    start = max(0, handle.offset - FINGERPRINT_BYTES)
                    copy.seek(start)
                    if _digest(copy.read(handle.offset - start)) == expected:
                        return path
            except OSError:
                continue
        return None

    def _fingerprint(self, handle: _OpenFile) -> str:
        """Digest of the bytes just before the offset, as they are on disk now. The window
        spans several lines: the last ~100 bytes of many log lines never change."""
        return _digest(self._bytes_on_disk_before_offset(handle))

    @staticmethod
    def _bytes_on_disk_before_offset(handle: _OpenFile) -> bytes:
        start = max(0, handle.offset - FINGERPRINT_BYTES)
        try:
            return os.pread(handle.fd, handle.offset - start, start)
        except OSError:
            return b""

    # ----------------------------------------------------------------- reading

    def _read_available(self, handle: _OpenFile, lines: list[Line]) -> bool:
        """Read from the handle's read position to EOF, or until the poll's budget is spent;
        return whether anything was read. ``handle.at_eof`` tells which of the two ended it."""
        grew = False
        position = handle.read_position
        while True:
            if self._budget <= 0:
                handle.size_seen = self._size_of(handle, position)
                handle.at_eof = handle.size_seen <= position
                break
            wanted = min(READ_CHUNK_BYTES, self._budget)
            try:
                chunk = os.pread(handle.fd, wanted, position)
            except OSError as exc:
                self._note(f"read failed: {exc.strerror or exc}", error=True,
                           where=f"offset {position}")
                handle.at_eof = True
                break
            self._last_error = None
            if chunk:
                grew = True
                position += len(chunk)
                self._budget -= len(chunk)
                self.bytes_read += len(chunk)
                self._split_lines(handle, chunk, lines)
            if len(chunk) < wanted:
                handle.at_eof = True
                handle.size_seen = position
                break
        if grew or handle.fingerprint_at_offset is None:
            handle.fingerprint_at_offset = _digest(handle.bytes_before_offset)
        if position > handle.grown_to:
            handle.grown_to = position
            handle.last_growth = time.monotonic()
        return grew

    def _read_partial_last_line(self, handle: _OpenFile, lines: list[Line]) -> None:
        """Read the live file's last line without its newline, once it has stood still for
        ``partial_line_grace`` (or at once when the files are complete), and move past it:
        the rest, if a writer completes the line later, is skipped up to its newline."""
        partial = handle.pending_partial_line
        if not partial or not handle.at_eof or handle.skipping_long_line \
                or self.partial_line_grace is None:
            return
        if not (files_complete() or self._stood_still(handle)):
            return
        lines.append(Line(handle.path, handle.offset, partial))
        handle.completed_early_at = handle.offset
        handle.bytes_before_offset = (handle.bytes_before_offset
                                      + partial[-FINGERPRINT_BYTES:])[-FINGERPRINT_BYTES:]
        handle.offset += len(partial)
        handle.pending_partial_line = b""
        handle.skipping_long_line = True
        handle.fingerprint_at_offset = _digest(handle.bytes_before_offset)

    def _stood_still(self, handle: _OpenFile) -> bool:
        """No growth seen for the grace time, or the file's mtime is that old."""
        grace = self.partial_line_grace or 0.0
        if time.monotonic() - handle.last_growth >= grace:
            return True
        try:
            mtime = os.fstat(handle.fd).st_mtime
        except OSError:
            return False
        return time.time() - mtime >= grace

    @staticmethod
    def _size_of(handle: _OpenFile, fallback: int) -> int:
        try:
            return os.fstat(handle.fd).st_size
        except OSError:
            return fallback

    def _split_lines(self, handle: _OpenFile, chunk: bytes, lines: list[Line]) -> None:
        data = handle.pending_partial_line + chunk if handle.pending_partial_line else chunk
        line_start_offset = handle.offset
        start = 0
        while True:
            newline = data.find(b"\n", start)
            if newline < 0:
                break
            if handle.skipping_long_line:
                handle.skipping_long_line = False
                if handle.completed_early_at is not None:
                    self._note(
                        f"the last line at offset {handle.completed_early_at} was read "
                        "without its newline after standing still; its rest, written "
                        "later, was not read again",
                        where=f"offset {handle.completed_early_at}")
                    handle.completed_early_at = None
            else:
                lines.append(Line(handle.path, line_start_offset + start, data[start:newline]))
            start = newline + 1
        handle.offset = line_start_offset + start
        rest = data[start:]
        if len(rest) > self.max_line_bytes or (handle.skipping_long_line and rest):
            if not handle.skipping_long_line:
                self._note(
                    f"line longer than {self.max_line_bytes} bytes skipped",
                    error=True,
                    where=f"offset {handle.offset}",
                )
            handle.skipping_long_line = True
            handle.offset += len(rest)
            rest = b""
        handle.pending_partial_line = rest
        consumed = handle.offset - line_start_offset
        if consumed:
            kept = data[max(0, consumed - FINGERPRINT_BYTES):consumed]
            handle.bytes_before_offset = (handle.bytes_before_offset + kept)[-FINGERPRINT_BYTES:]

    def _note(self, message: str, *, error: bool = False, where: str = "") -> None:
        """Record a notice; an error that repeats the previous one, with no successful read
        in between (a path that stays unreadable), is reported once, not on every poll."""
        if error:
            if message == self._last_error:
                return
            self._last_error = message
        self.notices.append(TailNotice(self.path, message, error, where))


_NEVER_SEEN = object()


def _view_of(st: os.stat_result) -> tuple:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)


def _view(path: str) -> object:
    """What ``_poll`` records of a path's ``stat``: its identity, size, times and type, None
    when it is missing, the errno when it cannot be stat'ed."""
    try:
        return _view_of(os.stat(path))
    except FileNotFoundError:
        return None
    except OSError as exc:
        return ("error", exc.errno)


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()

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
whether a poll could find anything; ``suspend()`` closes the descriptor of an idle
follower and keeps only its position (``tail_idle``).

``state()`` and the ``resume`` argument carry inode, offset, a fingerprint
of the bytes before the offset and whether the offset is inside a line already read
across restarts, so a restarted monitor neither re-reads nor skips anything (a file
rotated while the monitor was down is found by its inode among its siblings and drained
first). A partial line not read yet is not covered by the offset: it is read again after
a restart, once.

``FileFollower`` keeps the follower's state and its poll; mixins sharing that state do the
rest: ``tail_identity`` (which file it holds: opening, resuming, rotation, truncation),
``tail_reading`` (lines from an open file) and ``tail_idle`` (suspension). ``tail_state``
holds what it gives, keeps and checkpoints.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable

from monitor.sources.tail_identity import NEVER_SEEN, FileIdentity, view_of
from monitor.sources.tail_idle import IdleFollowing
from monitor.sources.tail_reading import LineReading
from monitor.sources.tail_state import FollowerState, Line, OpenFile, TailNotice, digest

#: Bytes one source reads per poll: large enough that catching up is fast, small enough that
#: one step never holds the lines of a whole large history in memory at once.
POLL_BUDGET_BYTES = 32 << 20
#: What a source reads of one file at a time within its budget, checking its step's deadline
#: in between: reading and folding 32 MB of transcript takes seconds, and a stop signal or a
#: quit key must not wait for that.
READ_STEP_BYTES = 2 << 20
UNLIMITED = 1 << 62
DEFAULT_MAX_LINE_BYTES = 32 << 20
ROTATED_GRACE_SECONDS = 2.0
#: How long a last line without a newline must stand still before it is read as it is.
PARTIAL_LINE_GRACE_SECONDS = 2.0
#: What a follower says of a path holding a NUL or a lone surrogate, which every ``os`` call
#: refuses with a ``ValueError`` (a name from a config file can hold either).
UNNAMEABLE = "no file can have this name (it holds a NUL or a lone surrogate); not read"


class FileFollower(FileIdentity, LineReading, IdleFollowing):
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
        own_archives: Callable[[str], bool] | None = None,
        suspended: tuple | None = None,
    ) -> None:
        self.path = path
        #: Which names beside the path (``<name>.<suffix>``) are its own archives, where a
        #: rotation renames it: a generation renamed to one before it was read is read there
        #: (None: never looked for).
        self.own_archives = own_archives
        self.max_line_bytes = max_line_bytes
        self.rotated_grace_seconds = rotated_grace_seconds
        #: Seconds a last line without a newline stands still before it is read as it is
        #: (None: never, only when completed).
        self.partial_line_grace = partial_line_grace
        self.rotated_quiet_seconds = min(0.2, rotated_grace_seconds)
        self._current: OpenFile | None = None
        self._draining: list[OpenFile] = []
        self._resume = resume
        #: ``(dev, ino) -> size`` of the rotated files this follower read to their end.
        self._drained_sizes: dict[tuple[int, int], int] = {}
        #: ``(dev, ino, size, mtime_ns)`` of the file when ``suspend`` closed it.
        self._suspended_as: tuple[int, int, int, int] | None = None
        #: ``(last_growth, grown_to)`` of a file suspended with a partial last line unread,
        #: so that line is still read after its grace time (and that time is not restarted).
        self._suspended_partial: tuple[float, int] | None = None
        if suspended is not None:       # ``suspension()`` of a follower in another process
            self._suspended_as, self._suspended_partial = suspended
        self._start_at_end = start_at_end
        self._budget = UNLIMITED
        self.notices: list[TailNotice] = []
        self._last_error: str | None = None
        #: ``(dev, ino, mode)`` of the file at ``path`` that was refused (a FIFO, a device, a
        #: ``/proc`` file...), so it is reported once, not on every poll.
        self._refused_as: tuple[int, int, int] | None = None
        #: What the last poll's ``stat`` of ``path`` saw (``path_view``), for ``changed``.
        self._last_view: object = NEVER_SEEN
        #: Bytes read by the last ``poll``.
        self.bytes_read = 0
        #: True when the last ``poll`` stopped at its ``max_bytes`` with more readable.
        self.behind = False
        self._hold_rotated_resume()

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
                             digest(current.bytes_before_offset), current.skipping_long_line)

    def detached(self) -> bool:
        """Whether this follower holds a file that a later run could not find: a rotated file
        still draining, or the open file no longer at the path (renamed or deleted, which
        the next poll would notice). A stopping monitor reads these before it checkpoints."""
        current = self._current
        if self._draining:
            return True
        if current is None:
            return False
        try:
            st = os.stat(self.path)
        except OSError:
            return True
        return (st.st_dev, st.st_ino) != (current.dev, current.ino)

    @property
    def open_descriptors(self) -> int:
        return len(self._draining) + (1 if self._current is not None else 0)

    @property
    def resume_offset(self) -> int:
        """Where this follower's first read starts: its resumed offset, or 0."""
        return self._resume.offset if self._resume is not None else 0

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

    def _handles(self) -> list[OpenFile]:
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
        except ValueError:
            self._last_view = ("error", None)
            self._note(UNNAMEABLE, error=True)
            return
        self._last_view = view_of(st)
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

    def _note(self, message: str, *, error: bool = False, where: str = "") -> None:
        """Record a notice; an error that repeats the previous one, with no successful read
        in between (a path that stays unreadable), is reported once, not on every poll."""
        if error:
            if message == self._last_error:
                return
            self._last_error = message
        self.notices.append(TailNotice(self.path, message, error, where))


def put_detached_first(source) -> bool:
    """Move the paths of ``source`` (a transcript source with ``_order``, ``_cursor``,
    ``_followers`` and ``_open``, the paths holding descriptors) whose follower is
    ``detached`` to where its next poll starts; True when there were any."""
    detached = [path for path in source._open if source._followers[path].detached()]
    if not detached:
        return False
    moved = set(detached)
    source._order = detached + [path for path in source._order if path not in moved]
    source._cursor = 0
    return True

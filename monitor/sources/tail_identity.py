"""Which file a ``FileFollower`` (``sources.tail``) reads, and what became of it.

The follower holds files by descriptor and knows each by ``(dev, ino)``: this part opens the
file at the path (only a regular one whose size matches what it holds: a FIFO, device,
socket or directory, or a ``/proc`` file, is refused and reported once), reattaches to a
saved position after a restart or a suspend (finding a file rotated meanwhile by its inode
among its siblings), drains files that were rotated away before the live one is read, and
notices truncation by size or by the fingerprint of the bytes before the offset, recovering
the unread tail from a ``copytruncate`` copy when one holds matching bytes.

``FileIdentity`` is a mixin of ``FileFollower``: it shares the follower's state and uses its
``_note`` and ``_read_available``.
"""

from __future__ import annotations

import os
import stat
import time

from monitor.sources.regular import NotRegularFile, open_regular, open_regular_file, refusal
from monitor.sources.tail_state import (
    FollowerState,
    Line,
    OpenFile,
    bytes_before,
    bytes_on_disk_before_offset,
    digest,
    files_complete,
)

#: What a follower that never polled has seen of its path (``path_view``).
NEVER_SEEN = object()


def view_of(st: os.stat_result) -> tuple:
    """A file's identity, size, times and type, as ``stat`` gives them."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)


def path_view(path: str) -> object:
    """What a poll records of a path's ``stat``: its ``view_of``, None when it is missing,
    the errno when it cannot be stat'ed (None for a name no file can have)."""
    try:
        return view_of(os.stat(path))
    except FileNotFoundError:
        return None
    except OSError as exc:
        return ("error", exc.errno)
    except ValueError:
        return ("error", None)


class FileIdentity:
    """Opening, reattaching, rotation and truncation for ``FileFollower``."""

    def _refuse(self, dev: int, ino: int, mode: int, why: str | None = None) -> None:
        """``path`` names a FIFO, device, socket or directory, or a file whose size does not
        match what it holds (``why`` says so): never read, and reported once per such file
        (again only when another one takes its place)."""
        if self._refused_as != (dev, ino, mode):
            self._refused_as = (dev, ino, mode)
            self._note(why or refusal(self.path, mode), error=True)

    @property
    def refused(self) -> bool:
        """The path named something ``open_regular`` refuses when last looked at."""
        return self._refused_as is not None and self._current is None

    def _open(self, st: os.stat_result | None, *, announce: bool) -> OpenFile | None:
        try:
            fd = open_regular(self.path)
        except FileNotFoundError:
            return None
        except NotRegularFile as exc:
            try:
                now = os.stat(self.path)
                self._refuse(now.st_dev, now.st_ino, now.st_mode, exc.strerror)
            except OSError:
                pass
            return None
        except OSError as exc:
            self._note(f"cannot open: {exc.strerror or exc}", error=True)
            return None
        self._refused_as = None
        fst = os.fstat(fd)
        handle = OpenFile(self.path, fd, fst.st_dev, fst.st_ino, size_seen=fst.st_size)
        if self._start_at_end:
            handle.offset = fst.st_size
            handle.bytes_before_offset = bytes_on_disk_before_offset(handle)
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
                handle.bytes_before_offset = bytes_on_disk_before_offset(handle)
                if handle.size_seen < saved.offset \
                        or digest(handle.bytes_before_offset) != saved.fingerprint:
                    self._note(f"file was truncated {while_closed}")
                    handle.fingerprint_at_offset = saved.fingerprint
                    self._handle_truncation(handle, lines)
                return
            os.close(handle.fd)
            self._current = None
        self._open_rotated(saved, while_closed, after_suspend=after_suspend)

    def _hold_rotated_resume(self) -> None:
        """Open a checkpointed file that was rotated away while the monitor was stopped now,
        instead of at this follower's first poll: a source may poll it only after others
        have caught up, and the rotated file deleted meanwhile would take its unread tail
        with it. A file still at the path is left for the poll (it keeps no descriptor)."""
        saved = self._resume
        if saved is None or self._suspended_as is not None:
            return
        try:
            st = os.stat(self.path)
        except OSError:
            st = None
        if st is not None and (st.st_dev, st.st_ino) == (saved.dev, saved.ino):
            return
        self._resume = None
        self._start_at_end = False
        self._open_rotated(saved, "while the monitor was stopped", after_suspend=False)

    def _open_rotated(self, saved: FollowerState, while_closed: str, *,
                      after_suspend: bool) -> None:
        """Find the saved file among its siblings by inode and drain it from the saved
        offset; report it when it is gone."""
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
        handle = OpenFile(rotated, fd, fst.st_dev, fst.st_ino, offset=saved.offset,
                           size_seen=fst.st_size, skipping_long_line=saved.mid_line)
        self._note(f"file was rotated to {os.path.basename(rotated)} {while_closed}; "
                   "draining it")
        self._draining.append(handle)
        self._take_missed_generations(handle)

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
        self._take_missed_generations(current)
        self._drain_rotated(lines)

    def _take_missed_generations(self, retired: OpenFile) -> None:
        """Drain, from their start and oldest first, the generations of the path that were
        renamed to one of its archives (``own_archives``) before this follower saw them: the
        path rotated twice between two polls (or while the follower was suspended or the
        monitor stopped). Such a generation is newer than ``retired`` (a writer opens the next
        generation after it stops writing the one renamed away, so its mtime is later) and
        was never held here; older archives are the history before ``retired`` and stay
        unread, as archives are."""
        if self.own_archives is None:
            return
        try:
            newest_seen = os.fstat(retired.fd).st_mtime_ns
        except OSError:
            return
        held = {(handle.dev, handle.ino) for handle in self._handles()}
        held.update(self._drained_sizes)
        name = os.path.basename(self.path) + "."
        try:
            entries = list(os.scandir(os.path.dirname(os.path.abspath(self.path))))
        except OSError:
            return
        missed: list[tuple[int, str]] = []
        for entry in entries:
            if not entry.name.startswith(name) or not self.own_archives(entry.name):
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode) and st.st_mtime_ns > newest_seen \
                    and (st.st_dev, st.st_ino) not in held:
                missed.append((st.st_mtime_ns, entry.path))
        for _, path in sorted(missed):
            try:
                fd = open_regular(path)
            except OSError:
                continue
            fst = os.fstat(fd)
            self._note(f"a generation was renamed to {os.path.basename(path)} before it was "
                       "read; reading it from its start")
            self._draining.append(OpenFile(path, fd, fst.st_dev, fst.st_ino, offset=0,
                                           size_seen=fst.st_size))

    def _drain_rotated(self, lines: list[Line]) -> None:
        """Read retired files to their end (as far as the budget goes); close each once it
        ends on a complete line and has stopped growing, or after a grace period with a
        partial line left. A copy no writer holds is closed as soon as it is read."""
        still_open: list[OpenFile] = []
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

    def _was_truncated(self, handle: OpenFile, size: int) -> bool:
        if size < handle.read_position:
            return True
        if handle.offset == 0 or handle.fingerprint_at_offset is None:
            return False
        return self._fingerprint(handle) != handle.fingerprint_at_offset

    def _handle_truncation(self, handle: OpenFile, lines: list[Line]) -> None:
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
            self._draining.append(OpenFile(copy, fd, fst.st_dev, fst.st_ino,
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

    def _find_copytruncate_copy(self, handle: OpenFile) -> str | None:
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
                    if digest(bytes_before(copy.fileno(), handle.offset)) == expected:
                        return path
            except OSError:
                continue
        return None

    def _fingerprint(self, handle: OpenFile) -> str:
        """Digest of the bytes just before the offset, as they are on disk now. The window
        spans several lines: the last ~100 bytes of many log lines never change."""
        return digest(bytes_on_disk_before_offset(handle))

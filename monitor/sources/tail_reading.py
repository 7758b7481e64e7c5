"""How a ``FileFollower`` (``sources.tail``) reads lines from a file it holds open.

From the file's read position it reads chunks to EOF, or until the poll's byte budget is
spent, and splits them into complete lines (``line_split``): a line longer than
``max_line_bytes`` is skipped and reported rather than buffered without bound. A last line
without a newline is read as it is once it has stood still for ``partial_line_grace``
seconds, or at once where the files are complete (``complete_files``); the follower is then
"mid-line" until the next newline, so a writer that completes the line later does not have
it read twice. Each read moves the fingerprint of the bytes before the offset along, by which
truncation is noticed and a checkpoint checked.

``LineReading`` is a mixin of ``FileFollower``: it shares the follower's state (the budget,
``bytes_read``, the last error) and uses its ``_note``.
"""

from __future__ import annotations

import os
import time

from monitor.sources.line_split import split_lines
from monitor.sources.tail_state import FINGERPRINT_BYTES, Line, OpenFile, digest, files_complete

READ_CHUNK_BYTES = 1 << 20


class LineReading:
    """Reading complete lines, and a last line that stood still, for ``FileFollower``."""

    def _read_available(self, handle: OpenFile, lines: list[Line]) -> bool:
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
            handle.fingerprint_at_offset = digest(handle.bytes_before_offset)
        if position > handle.grown_to:
            handle.grown_to = position
            handle.last_growth = time.monotonic()
        return grew

    def _read_partial_last_line(self, handle: OpenFile, lines: list[Line]) -> None:
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
        handle.fingerprint_at_offset = digest(handle.bytes_before_offset)

    def _stood_still(self, handle: OpenFile) -> bool:
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
    def _size_of(handle: OpenFile, fallback: int) -> int:
        try:
            return os.fstat(handle.fd).st_size
        except OSError:
            return fallback

    def _split_lines(self, handle: OpenFile, chunk: bytes, lines: list[Line]) -> None:
        data = handle.pending_partial_line + chunk if handle.pending_partial_line else chunk
        line_start_offset = handle.offset
        path = handle.path
        split = split_lines(data, line_start_offset, handle.skipping_long_line,
                            self.max_line_bytes,
                            lambda at, line: lines.append(Line(path, at, line)))
        if split.ended_skip and handle.completed_early_at is not None:
            self._note(
                f"the last line at offset {handle.completed_early_at} was read "
                "without its newline after standing still; its rest, written "
                "later, was not read again",
                where=f"offset {handle.completed_early_at}")
            handle.completed_early_at = None
        if split.overlong_at is not None:
            self._note(
                f"line longer than {self.max_line_bytes} bytes skipped",
                error=True,
                where=f"offset {split.overlong_at}",
            )
        handle.offset = split.offset
        handle.pending_partial_line = split.rest
        handle.skipping_long_line = split.skipping
        consumed = handle.offset - line_start_offset
        if consumed:
            kept = data[max(0, consumed - FINGERPRINT_BYTES):consumed]
            handle.bytes_before_offset = (handle.bytes_before_offset + kept)[-FINGERPRINT_BYTES:]

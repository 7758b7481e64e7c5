"""Bytes into complete lines, for every reader of a growing byte stream (a followed file, a
pipe): one rule for where a line starts, when a partial line waits for its newline, and how
a line too long to hold, or one already read without its newline, is skipped to its end."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple


class Split(NamedTuple):
    """Where a stream stands after ``split_lines``."""

    #: Stream position just past what was consumed: complete lines and skipped bytes.
    offset: int
    #: The partial last line, held until its newline arrives.
    rest: bytes
    #: Inside a line that is not emitted (too long, or already read without its newline).
    skipping: bool
    #: A newline ended the line that was being skipped.
    ended_skip: bool
    #: Where a line that grew past ``max_line_bytes`` here starts (skipped from now on).
    overlong_at: int | None


def split_lines(data: bytes, offset: int, skipping: bool, max_line_bytes: int,
                emit: Callable[[int, bytes], None]) -> Split:
    """Call ``emit(start, line)`` for each complete line of ``data`` (the pending partial
    line followed by new bytes, starting at stream position ``offset``), without its
    newline. While ``skipping``, bytes up to the next newline are dropped unread."""
    start = 0
    ended_skip = False
    find = data.find
    while True:
        newline = find(b"\n", start)
        if newline < 0:
            break
        if skipping:
            skipping = False
            ended_skip = True
        else:
            emit(offset + start, data[start:newline])
        start = newline + 1
    offset += start
    rest = data[start:]
    overlong_at = None
    if skipping or len(rest) > max_line_bytes:
        if not skipping:
            overlong_at = offset
        skipping = True
        offset += len(rest)
        rest = b""
    return Split(offset, rest, skipping, ended_skip, overlong_at)

"""What a ``FileFollower`` (``sources.tail``) does while idle: ``suspend`` closes its
descriptor and keeps only its position (a process may not keep one open per transcript of a
large state dir), and ``changed`` tells, for one ``stat``, whether a poll could find anything,
so a caller with thousands of idle followers polls only those that changed.

A suspended follower's next ``poll`` after the file changed (size, mtime or inode) reopens it
and goes on exactly where it stopped (``tail_identity``), including a rotation or truncation
that happened while it was closed; a partial last line left unread is read after its grace
time, which the suspension does not restart.

``IdleFollowing`` is a mixin of ``FileFollower``: it shares the follower's state.
"""

from __future__ import annotations

import os
import time

from monitor.sources.tail_identity import path_view
from monitor.sources.tail_state import FollowerState, digest, files_complete


class IdleFollowing:
    """Suspending an idle ``FileFollower`` and telling whether it has anything to poll."""

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
                                     digest(current.bytes_before_offset),
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

    def suspension(self) -> tuple | None:
        """What a suspended follower keeps of its file besides ``state()``: given back as
        ``suspended``, a follower of the same path resumes as this one would (a history
        reader's, ``history_reader``). None when not suspended."""
        if self._suspended_as is None:
            return None
        return self._suspended_as, self._suspended_partial

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
        return path_view(self.path) != self._last_view

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
        except (OSError, ValueError):
            return False
        return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns) == self._suspended_as


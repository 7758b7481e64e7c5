"""Read-ahead of the transcripts a catch-up has not read yet.

While files are still to be read for the first time, the kernel is asked to read the first
``PREFETCH_BYTES`` of the next ``PREFETCH_FILES`` of them into the page cache (``prefetch``,
a hint), so on a cold page cache the disk reads the next files while this one is parsed.
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence

from monitor.sources.regular import prefetch

PREFETCH_FILES = 16
PREFETCH_BYTES = 4 << 20


class ReadAhead:
    """Which unstarted files the kernel was asked to read ahead: each is asked for once."""

    def __init__(self) -> None:
        self._asked: set[str] = set()

    def ahead_of(self, order: Sequence[str], position: int, unstarted: Container[str],
                 followers: Mapping) -> None:
        """Ask for the next ``PREFETCH_FILES`` paths after ``position`` in the (circular)
        poll ``order`` that are in ``unstarted``, each from where its follower
        (``followers[path]``, a ``FileFollower``) will start reading."""
        count = len(order)
        for ahead in range(1, min(PREFETCH_FILES, count - 1) + 1):
            path = order[(position + ahead) % count]
            if path in unstarted and path not in self._asked:
                self._asked.add(path)
                prefetch(path, followers[path].resume_offset, PREFETCH_BYTES)

    def started(self, path: str) -> None:
        """``path`` was read: it is no longer asked for."""
        self._asked.discard(path)

    def clear(self) -> None:
        self._asked.clear()

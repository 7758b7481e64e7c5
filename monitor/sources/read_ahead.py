"""Read-ahead of the transcripts a catch-up has not read yet.

While files are still to be read for the first time, the kernel is asked to read the first
``PREFETCH_BYTES`` of the next ``PREFETCH_FILES`` of them into the page cache (``prefetch``,
a hint), so on a cold page cache the disk reads the next files while this one is parsed.
On a warm one the hints only cost an open, an ``fadvise`` and a close per file, each a
system call that lets the dashboard's other thread take the interpreter: so every
``WINDOW_FILES`` files started, the storage reads of this process (``/proc/self/io``)
tell whether the window came from the disk, and hints are given only while it did.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping, Sequence

import psutil

from monitor.sources.regular import prefetch

PREFETCH_FILES = 16
PREFETCH_BYTES = 4 << 20
#: Files started between two looks at the storage reads.
WINDOW_FILES = 64
#: A window read from the disk had at least this share of its bytes read from storage.
COLD_SHARE = 1 / 8


def storage_read_bytes() -> int | None:
    """Bytes this process has had read from storage (None where the system cannot say)."""
    try:
        return psutil.Process().io_counters().read_bytes
    except (AttributeError, psutil.Error, OSError):
        return None


class ReadAhead:
    """Which unstarted files the kernel was asked to read ahead: each is asked for once,
    and none while the files started lately came from the page cache."""

    def __init__(self, storage_reads: Callable[[], int | None] = storage_read_bytes) -> None:
        self._asked: set[str] = set()
        self._storage_reads = storage_reads
        #: Whether the last window came from the disk (so it is assumed before the first).
        self.cold = True
        self._window_files = 0
        self._window_bytes = 0
        self._storage_at: int | None = None

    def ahead_of(self, order: Sequence[str], position: int, unstarted: Container[str],
                 followers: Mapping) -> None:
        """Ask for the next ``PREFETCH_FILES`` paths after ``position`` in the (circular)
        poll ``order`` that are in ``unstarted``, each from where its follower
        (``followers[path]``, a ``FileFollower``) will start reading."""
        if not self.cold:
            return
        count = len(order)
        for ahead in range(1, min(PREFETCH_FILES, count - 1) + 1):
            path = order[(position + ahead) % count]
            if path in unstarted and path not in self._asked:
                self._asked.add(path)
                prefetch(path, followers[path].resume_offset, PREFETCH_BYTES)

    def started(self, path: str, size: int = 0) -> None:
        """``path`` was read (``size`` bytes of it by this process): it is no longer asked
        for."""
        self._asked.discard(path)
        if self._storage_at is None:
            self._storage_at = self._storage_reads()
            if self._storage_at is None:
                return                  # no way to tell: hints stay on
        self._window_files += 1
        self._window_bytes += size
        if self._window_files < WINDOW_FILES:
            return
        now = self._storage_reads()
        if now is None:
            return
        if self._window_bytes:
            self.cold = now - self._storage_at >= self._window_bytes * COLD_SHARE
        self._storage_at = now
        self._window_files = self._window_bytes = 0

    def clear(self) -> None:
        self._asked.clear()

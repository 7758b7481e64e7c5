"""Wake the poll loop when watched files change, with a periodic poll as the safety net.

watchfiles runs in a daemon thread over the watched directories (debounced)
and sets an event; ``wait()`` returns on that event or after the poll
interval, whichever comes first. If watchfiles cannot watch (a missing
directory, an inotify limit), polling alone still finds everything.

The paths watchfiles reported are kept (up to ``CHANGED_PATHS_KEPT``) for
``take_changed``: a source that looks at its idle files only now and then (a dir of
100,000 quiet transcripts) looks at these at once.
"""

from __future__ import annotations

import os
import threading
import time

DEBOUNCE_MS = 50
POLL_SECONDS = 1.0
#: How often ``wait(stop=...)`` looks at its stop event.
STOP_CHECK_SECONDS = 0.2
#: Changed paths remembered between two ``take_changed``; past this, "something changed".
CHANGED_PATHS_KEPT = 4096


def _existing_ancestor(path: str) -> str | None:
    path = os.path.abspath(path)
    while path and not os.path.isdir(path):
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent
    return path or None


def _outermost(roots: set[str]) -> list[str]:
    """The roots not inside another root: watches are recursive, so a nested one would only
    duplicate inotify watches and events."""
    kept: list[str] = []
    for root in sorted(roots):
        if not any(root == k or root.startswith(k.rstrip(os.sep) + os.sep) for k in kept):
            kept.append(root)
    return kept


class Waker:
    def __init__(self, paths: list[str], *, poll_seconds: float = POLL_SECONDS,
                 debounce_ms: int = DEBOUNCE_MS) -> None:
        self.poll_seconds = poll_seconds
        self.debounce_ms = debounce_ms
        self.changed = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._changed_paths: set[str] | None = set()
        self.watch_error: str | None = None
        roots = {a for a in (_existing_ancestor(p) for p in paths) if a}
        self._roots = _outermost(roots)
        self._thread: threading.Thread | None = None
        if self._roots:
            self._thread = threading.Thread(target=self._run, name="clawwatch-wake", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        try:
            from watchfiles import watch

            for changes in watch(*self._roots, debounce=self.debounce_ms, step=10,
                           stop_event=self._stop, yield_on_timeout=False,
                           raise_interrupt=False, ignore_permission_denied=True):
                self._remember(changes)
                self.changed.set()
        except Exception as exc:
            self.watch_error = (
                f"file watching unavailable, polling every {self.poll_seconds}s: {exc}")

    def _remember(self, changes) -> None:
        with self._lock:
            if self._changed_paths is None:
                return
            self._changed_paths.update(path for _, path in changes)
            if len(self._changed_paths) > CHANGED_PATHS_KEPT:
                self._changed_paths = None

    def take_changed(self) -> set[str] | None:
        """The paths reported changed since the last call (None: too many to keep)."""
        with self._lock:
            paths, self._changed_paths = self._changed_paths, set()
        return paths

    def wait(self, timeout: float | None = None, *, stop: threading.Event | None = None
             ) -> bool:
        """Block until something changed or the poll interval passed; True if woken.

        With ``stop`` (set by a signal handler, which must not take the lock ``changed.set``
        takes), it returns within ``STOP_CHECK_SECONDS`` of ``stop`` being set."""
        timeout = self.poll_seconds if timeout is None else timeout
        if stop is None:
            woken = self.changed.wait(timeout)
        else:
            end = time.monotonic() + timeout
            woken = False
            while not stop.is_set():
                left = end - time.monotonic()
                if left <= 0:
                    break
                if self.changed.wait(min(left, STOP_CHECK_SECONDS)):
                    woken = True
                    break
        self.changed.clear()
        return woken

    def close(self) -> None:
        self._stop.set()
        self.changed.set()

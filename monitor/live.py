"""The live loop shared by ``watch --headless`` and ``demo --headless``."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable

from monitor.pipeline import Monitor
from monitor.sources.checkpoint import CheckpointStore
from monitor.sources.wake import Waker


def install_stop_signals() -> threading.Event:
    """SIGTERM, SIGINT and SIGHUP (terminal closed) end the loop cleanly (checkpoint saved,
    files closed)."""
    stop = threading.Event()

    def handler(signum, frame):
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGHUP, handler)
    return stop


def run_live(monitor: Monitor, emit: Callable[[list[dict]], None], *,
             seconds: float | None = None, poll_seconds: float = 1.0,
             store: CheckpointStore | None = None, catch_up_quietly: bool = True,
             stop: threading.Event | None = None,
             step: Callable[[], list[dict]] | None = None) -> None:
    """Poll, emit and checkpoint until ``seconds`` pass or ``stop`` is set.

    ``step`` replaces ``monitor.step`` (``--metrics`` runs each step under its lock).

    Output is written before the checkpoint that covers it is saved, so a
    crash can repeat the last batch but never lose it; a clean stop (signal,
    deadline) saves the checkpoint last and so repeats nothing on restart.
    """
    sources = monitor.sources
    monitor_step = step or monitor.step
    note_changed = getattr(sources, "note_changed", None)

    def step() -> list[dict]:
        # The waker's changed paths first: a source looks at those of its idle files now.
        if note_changed is not None:
            note_changed(waker.take_changed())
        return monitor_step()

    waker = Waker(sources.watch_paths(), poll_seconds=poll_seconds)
    stop = stop or install_stop_signals()
    deadline = time.monotonic() + seconds if seconds else None
    try:
        if catch_up_quietly:
            monitor.quiet = True
            emit(step())
            while sources.behind and not stop.is_set():
                emit(step())
            monitor.quiet = False
        while not stop.is_set():
            records = step()
            emit(records)
            if store and records:
                store.save(sources.checkpoint())
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                break
            if not sources.behind:
                waker.wait(None if remaining is None else min(remaining, poll_seconds),
                           stop=stop)
        if stop.is_set():
            # Read what arrived since the last poll, so the checkpoint saved below does not
            # name a file that a rotation is about to take away unread.
            emit(step())
    finally:
        waker.close()
        if store:
            store.save(sources.checkpoint())

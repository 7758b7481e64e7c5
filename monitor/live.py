"""The live loop shared by ``watch --headless`` and ``demo --headless``."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable

from monitor.heap import give_back_free_memory, relax_collector, restore_collector
from monitor.pipeline import Monitor, iso
from monitor.records import ErrorRecord, Record
from monitor.sources.checkpoint import CheckpointSaver, CheckpointStore
from monitor.sources.sqlite_guard import stop_queries
from monitor.sources.wake import Waker

#: How long a stopping loop goes on reading what is already there before it saves the
#: checkpoint (every command ends within 2 s of SIGTERM, also on a loaded machine).
FINAL_READ_SECONDS = 0.5


def install_stop_signals() -> threading.Event:
    """SIGTERM, SIGINT and SIGHUP (terminal closed) end the loop cleanly (checkpoint saved,
    files closed); a database query running then ends at once."""
    stop = threading.Event()

    def handler(signum, frame):
        stop.set()
        stop_queries()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGHUP, handler)
    return stop


def run_live(monitor: Monitor, emit: Callable[[list[Record]], None], *,
             seconds: float | None = None, poll_seconds: float = 1.0,
             store: CheckpointStore | None = None, catch_up_quietly: bool = True,
             stop: threading.Event | None = None,
             step: Callable[[], list[Record]] | None = None,
             caught_up: Callable[[float], None] | None = None) -> None:
    """Poll, emit and checkpoint until ``seconds`` pass or ``stop`` is set.

    ``step`` replaces ``monitor.step`` (``--metrics`` runs each step under its lock).
    ``caught_up(seconds)`` is called once a quiet catch-up has ended: what is written from
    then on is reported, after the findings the catch-up raised that still hold
    (``Monitor.still_current``: a loop under way when the watch started).

    When the log is a stream (``--log -``, ``--journal``), the loop also ends where the
    stream does.

    Output is written before the checkpoint that covers it is saved, so a
    crash can repeat the last batch but never lose it; a clean stop (signal,
    deadline) saves the checkpoint last and so repeats nothing on restart. Output that
    fails (its reader gone: a broken pipe) ends the loop without that last save, so the
    batch that was not written is reported again on restart. A save that fails is an
    ``error`` record (source ``checkpoint``), and watching goes on.
    """
    sources = monitor.sources
    saver = CheckpointSaver(store) if store else None
    output_failed = False
    write = emit

    def emit(records: list[Record]) -> None:
        nonlocal output_failed
        try:
            write(records)
        except BaseException:
            output_failed = True
            raise

    def save_checkpoint() -> None:
        failure = saver.save(sources.checkpoint())
        if failure:
            emit([ErrorRecord(ts=iso(None), source="checkpoint", path=store.path,
                              message=failure)])

    monitor_step = step or monitor.step
    note_changed = getattr(sources, "note_changed", None)

    def step() -> list[Record]:
        # The waker's changed paths first: a source looks at those of its idle files now.
        if note_changed is not None:
            note_changed(waker.take_changed())
        return monitor_step()

    waker = Waker(sources.watch_paths(), poll_seconds=poll_seconds)
    attach_waker = getattr(sources, "attach_waker", None)
    if attach_waker is not None:        # a stream (stdin, journalctl) wakes the loop itself
        attach_waker(waker.changed.set)
    stop = stop or install_stop_signals()
    deadline = time.monotonic() + seconds if seconds else None
    try:
        if catch_up_quietly:
            started = time.monotonic()
            monitor.quiet = True
            collector = relax_collector()
            try:
                emit(step())
                while sources.behind and not stop.is_set():
                    emit(step())
            finally:
                restore_collector(collector)
            monitor.quiet = False
            give_back_free_memory()
            if not stop.is_set():
                if caught_up is not None:
                    caught_up(time.monotonic() - started)
                emit(monitor.still_current(time.time()))
        while not stop.is_set():
            records = step()
            emit(records)
            if saver and records:
                save_checkpoint()
            if getattr(sources, "exhausted", False):
                break                   # the log was a stream, and it ended
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                break
            if not sources.behind:
                waker.wait(None if remaining is None else min(remaining, poll_seconds),
                           stop=stop)
        if stop.is_set():
            # Read what arrived since the last poll, files rotated away first, so the
            # checkpoint saved below does not name a file that a rotation took away unread.
            # A step reads for STEP_SECONDS at most, so this goes on while there is more,
            # within the time a stop may take.
            until = time.monotonic() + FINAL_READ_SECONDS
            note_stopping = getattr(sources, "note_stopping", None)
            if note_stopping is not None:
                note_stopping()
            emit(step())
            while sources.behind and time.monotonic() < until:
                emit(step())
    finally:
        waker.close()
        if saver and not output_failed:
            save_checkpoint()

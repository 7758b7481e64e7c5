"""The dashboard's ingest loop: poll, fold, publish snapshots. Runs in a worker thread.

It never touches widgets: everything leaves through ``publish(snapshot)``
(the app posts a coalescing message). The first scan reads history quietly
(its findings become history alerts that never ring), then the loop goes live.
The timeline of a session whose history was only counted is read from its transcripts
when it is looked at, ``HISTORY_STEP_SECONDS`` between two polls.
Snapshots are published at most every ``min_interval`` seconds while data
flows, at once when the UI asks (focus change, an action), and every
``heartbeat`` seconds otherwise so "time since last event" keeps moving.

While the first scan drains its backlog, snapshots are coalesced further: at most one per
``scan_cost_factor`` times the last build's duration (a 10,000-session board costs tens of
milliseconds to build and as much to render), so building and drawing stay a small part
of the scan. Nothing is lost: each snapshot is built from the whole state, and the one
published when the scan ends (forced) is exact.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterable

from monitor.heap import give_back_free_memory, relax_collector, restore_collector
from monitor.records import Record
from monitor.snapshot import Snapshot
from monitor.snapshot_builder import SnapshotBuilder
from monitor.sources.wake import Waker

MIN_INTERVAL = 0.2
HEARTBEAT = 1.0
SCAN_COST_FACTOR = 20.0     # while scanning: publish at most every 20× the last build time
#: How long a timeline load reads between two polls: a long history (a 200 MB transcript
#: takes seconds) is read in steps, live events going on between them.
HISTORY_STEP_SECONDS = 0.05


class IngestLoop:
    def __init__(self, monitor_factory: Callable[[], object], clock: Callable[[], float],
                 publish: Callable[[Snapshot], None], *, poll_seconds: float = 0.5,
                 expected: Iterable[tuple[str, str | None, str]] = (),
                 min_interval: float = MIN_INTERVAL, heartbeat: float = HEARTBEAT,
                 slice_events: int | None = None, scan_cost_factor: float = SCAN_COST_FACTOR,
                 after_step: Callable[[object, list[Record]], list[Record]] | None = None,
                 metrics=None) -> None:
        self.monitor_factory = monitor_factory
        self.metrics = metrics          # a monitor.metrics.MetricsHub, given the monitor here
        self.after_step = after_step
        self.clock = clock
        self.publish = publish
        self.poll_seconds = poll_seconds
        self.expected = tuple(expected)
        self.min_interval = min_interval
        self.heartbeat = heartbeat
        self.scan_cost_factor = scan_cost_factor
        self.build_seconds = 0.0        # the last snapshot build's duration
        self.slice_events = slice_events
        self.builder: SnapshotBuilder | None = None
        self.monitor = None
        self.stopped = threading.Event()
        self.finished = threading.Event()
        self._wake = threading.Event()
        self._waker: Waker | None = None
        self._inbox: queue.SimpleQueue[Record] = queue.SimpleQueue()
        self._focus: str | None = None
        self._forced = True

    # ----------------------------------------------------------- from the UI thread

    def set_focus(self, session_id: str | None) -> None:
        if session_id != self._focus:
            self._focus = session_id
            self.request()

    def inject(self, record: Record) -> None:
        """Add an output record (e.g. an action result) to the alert stream."""
        self._inbox.put(record)
        self.request()

    def request(self) -> None:
        """Publish a fresh snapshot as soon as possible."""
        self._forced = True
        self._wake.set()
        if self._waker is not None:
            self._waker.changed.set()

    def stop(self) -> None:
        self.stopped.set()
        self.request()

    # ----------------------------------------------------------- the thread

    def run(self) -> None:
        try:
            self._run()
        finally:
            if self._waker is not None:
                self._waker.close()
            sources = getattr(self.monitor, "sources", None)
            if sources is not None:
                sources.close()
            self.finished.set()

    def _run(self) -> None:
        collector = relax_collector()
        try:
            self._scan_and_follow(collector)
        finally:
            restore_collector(collector)

    def _scan_and_follow(self, collector: object) -> None:
        self.monitor = monitor = self.monitor_factory()
        step = monitor.step
        if self.metrics is not None:
            self.metrics.monitor = monitor
            step = self.metrics.step
        self.builder = builder = SnapshotBuilder(monitor, self.clock, expected=self.expected)
        feed = builder.feed
        feed.stop_requested = self.stopped
        if self.slice_events:
            feed.slice_events = self.slice_events
        builder.focus = self._focus
        builder.history_step_seconds = HISTORY_STEP_SECONDS
        self._publish(builder)
        if self.stopped.is_set():
            return
        self._waker = Waker(feed.watch_paths(), poll_seconds=self.poll_seconds)
        monitor.quiet = True
        note_changed = getattr(feed, "note_changed", None)
        last_publish = time.monotonic()
        dirty = False
        while not self.stopped.is_set():
            builder.focus = self._focus
            read_before = feed.read
            if note_changed is not None:
                note_changed(self._waker.take_changed())
            records = step()
            if self.after_step is not None and not builder.scanning:
                records += self.after_step(monitor, records)
            while not self._inbox.empty():
                records.append(self._inbox.get_nowait())
            if self.metrics is not None and records:
                self.metrics.observe(records)
            builder.absorb(records)
            dirty = dirty or bool(records) or builder.scanning
            if feed.reading_history is not None:
                dirty = True
                if feed.load_history(self._focus, HISTORY_STEP_SECONDS):
                    self._forced = True
            if builder.scanning and not feed.backlog and not feed.behind \
                    and feed.read - read_before < feed.slice_events:
                self._finish_scan(monitor, builder, collector)
            since = time.monotonic() - last_publish
            interval = self.min_interval if not builder.scanning else max(
                self.min_interval, self.scan_cost_factor * self.build_seconds)
            if self._forced or (dirty and since >= interval) or \
                    since >= max(self.heartbeat, interval):
                self._forced = False
                dirty = False
                builder.focus = self._focus
                self._publish(builder)
                last_publish = time.monotonic()
            if feed.backlog or feed.behind or feed.reading_history is not None:
                continue
            wait = self.poll_seconds if not dirty else max(
                0.0, self.min_interval - (time.monotonic() - last_publish))
            wait = min(wait, max(0.0, self.heartbeat - (time.monotonic() - last_publish)))
            if not self._forced:
                self._waker.wait(wait)

    def _finish_scan(self, monitor, builder: SnapshotBuilder, collector: object) -> None:
        """The first scan is over: its findings become history, but for those that still
        hold on a session under way (``Monitor.still_current``), which arrive as live
        alerts and go to the actions; what the actions give back is absorbed and counted
        as any step's records."""
        still_current = monitor.still_current(self.clock())
        builder.finish_scan(still_current)
        restore_collector(collector)
        give_back_free_memory()
        builder.watch_error = self._waker.watch_error
        monitor.quiet = False
        if still_current and self.after_step is not None:
            acted = self.after_step(monitor, still_current)
            if self.metrics is not None:
                self.metrics.observe(acted)
            builder.absorb(acted)
        self._forced = True

    def _publish(self, builder: SnapshotBuilder) -> None:
        started = time.perf_counter()
        snapshot = builder.build()
        self.build_seconds = time.perf_counter() - started
        self.publish(snapshot)

"""Counted history read by other processes during a first scan (``history_reader``).

The source lists what it may give away (``HistorySplit``'s keys: transcript paths or
session ids, in its poll order) and takes them in that order: one a reader was given is
folded from the reader's parts, any other is read by the source itself. So the monitor
folds the same events in the same order as if the source had read everything, whoever read
it.

Who reads what balances itself: a reader is given the next free key at least
``LOOKAHEAD_KEYS`` ahead of the source (near the end, half the keys left) each time it has
fewer than ``QUEUED_KEYS`` to read; the source reads what it reaches ungiven. A slow source
(folding) leaves the readers more; a slow reader (a large file) leaves the source more.
Each time the source catches up with a reader it waits for the reader's queued keys, then
reads the keys up to the next ones given: the longer that stretch, the less of the source's
time goes to waiting. A reader's frames are collected
by a thread into a bounded buffer (``BUFFERED_BYTES``; beyond it the pipe fills and the
reader waits). A key whose parts are not all taken (a reader that ended early, a session
that stopped being history) is read on by the source from the last part taken."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import threading
from collections import deque

from monitor.sources.history_reader import FRAME_HEADER, HistoryPart, HistoryRequest

#: Counted history below this is read by the source alone: a reader's start costs ~0.1 s.
MIN_SPLIT_BYTES = 32 << 20
#: Frames read from a reader and not taken yet, at most (then it waits on a full pipe).
BUFFERED_BYTES = 16 << 20
#: How far ahead of the source a reader's next key is, and how many it has to read at once:
#: a source that caught up waits for up to ``QUEUED_KEYS`` keys every ``LOOKAHEAD_KEYS``.
LOOKAHEAD_KEYS = 256
QUEUED_KEYS = 16
FREE, GIVEN, OWN = 0, 1, 2
_BOOT = ("import json, sys; sys.path[:] = json.loads(sys.argv[1]); "
         "from monitor.sources.history_reader import main; main()")


def reader_processes(configured: int | None) -> int:
    """Reader processes for a first scan: ``configured``, or one fewer than the cores this
    process may run on (at most 3)."""
    if configured is not None:
        return configured
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(0, min(3, cores - 1))


class HistoryReader:
    """One reader process; a thread collects its frames."""

    def __init__(self, split: HistorySplit, request: HistoryRequest) -> None:
        self._split = split
        #: Paths given and not read to their end yet; whether more may be given.
        self.queued = 0
        self.taking = True
        self._frames: deque[tuple[int, bytes]] = deque()
        self._buffered = 0
        self._ended = False
        self._closed = False
        self._ready = threading.Condition()
        self._process = subprocess.Popen(
            [sys.executable, "-P", "-c", _BOOT, json.dumps(sys.path)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            start_new_session=True, close_fds=True)
        self._give(request)
        self._thread = threading.Thread(target=self._collect, name="clawwatch-history-reader",
                                        daemon=True)
        self._thread.start()

    def _give(self, message) -> bool:
        try:
            pickle.dump(message, self._process.stdin, protocol=pickle.HIGHEST_PROTOCOL)
            self._process.stdin.flush()
        except (OSError, ValueError):
            return False
        return True

    def give(self, index: int, key: str, session_id: str) -> bool:
        """Read ``key`` next (False: the reader is gone)."""
        if self._give((index, key, session_id)):
            self.queued += 1
            return True
        self.taking = False
        return False

    def no_more(self) -> None:
        """Nothing more will be given: the reader ends after what it was given."""
        self.taking = False
        try:
            self._process.stdin.close()
        except OSError:
            pass

    def _collect(self) -> None:
        stdout = self._process.stdout
        try:
            while True:
                header = _read_exactly(stdout, FRAME_HEADER.size)
                if header is None:
                    break
                size, index, last = FRAME_HEADER.unpack(header)
                payload = _read_exactly(stdout, size)
                if payload is None:
                    break
                with self._ready:
                    self._frames.append((index, payload))
                    self._buffered += size
                    self._ready.notify_all()
                if last:
                    self._split.top_up(self, finished=1)
                with self._ready:
                    while self._buffered > BUFFERED_BYTES and not self._closed:
                        self._ready.wait()
                    if self._closed:
                        break
        except (OSError, ValueError):
            pass
        finally:
            with self._ready:
                self._ended = True
                self._ready.notify_all()

    def next_part(self, timeout: float | None) -> tuple[int, HistoryPart] | bool | None:
        """``(index, part)`` of the next part read, None when none came within
        ``timeout``, False when the reader ended and every part it sent was taken."""
        with self._ready:
            if not self._frames and not self._ended:
                self._ready.wait(timeout)
            if not self._frames:
                return False if self._ended else None
            index, payload = self._frames.popleft()
            self._buffered -= len(payload)
            self._ready.notify_all()
        return index, pickle.loads(payload)

    def close(self) -> None:
        with self._ready:
            self._closed = True
            self._frames.clear()
            self._ready.notify_all()
        if self._process.poll() is None:
            self._process.kill()
        self._process.wait()
        self.no_more()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=2.0)
        self._process.stdout.close()


def _read_exactly(stream, size: int) -> bytes | None:
    data = stream.read(size)
    return data if len(data) == size else None


class HistorySplit:
    """``keys`` (``(key, session_id)`` in the source's poll order), shared between the
    source and ``readers`` reader processes (see the module docstring)."""

    def __init__(self, request: HistoryRequest, keys: list[tuple[str, str]],
                 readers: int) -> None:
        self._keys = keys
        self._index = {key: index for index, (key, _) in enumerate(keys)}
        self._state = bytearray(len(keys))
        self._given_to: dict[int, HistoryReader] = {}
        #: Where the source is, and the last key given to a reader.
        self._source_at = 0
        self._frontier = -1
        self._lock = threading.Lock()
        #: A part a reader sent ahead of the key the source asked for: ``index -> part``.
        self._early: dict[int, HistoryPart] = {}
        self._open = len(keys)
        self._readers: list[HistoryReader] = []
        try:
            for _ in range(readers):
                self._readers.append(HistoryReader(self, request))
        except OSError:                 # no process could be started: the source reads all
            self.close()
            raise
        for reader in self._readers:
            self.top_up(reader)

    def __contains__(self, key: str) -> bool:
        index = self._index.get(key)
        return index is not None and self._state[index] != OWN

    def top_up(self, reader: HistoryReader, finished: int = 0) -> None:
        """Give ``reader`` free keys ahead of the source until it has ``QUEUED_KEYS``
        (``finished``: keys it has just read to their end)."""
        with self._lock:
            reader.queued -= finished
            while reader.taking and reader.queued < QUEUED_KEYS:
                ahead = min(LOOKAHEAD_KEYS, (len(self._keys) - self._source_at) // 2)
                start = max(self._frontier + 1, self._source_at + ahead)
                index = next((i for i in range(start, len(self._keys))
                              if self._state[i] == FREE), None)
                if index is None:
                    reader.no_more()
                    return
                self._frontier = index
                key, session_id = self._keys[index]
                if not reader.give(index, key, session_id):
                    return
                self._state[index] = GIVEN
                self._given_to[index] = reader

    def reader_of(self, key: str) -> bool:
        """Whether a reader reads ``key``; if none does yet, none will: the source does."""
        index = self._index[key]
        with self._lock:
            self._source_at = max(self._source_at, index)
            if self._state[index] == FREE:
                self._mark_own(index)
        for reader in self._readers:
            if reader.taking and reader.queued < QUEUED_KEYS:
                self.top_up(reader)
        return self._state[index] == GIVEN

    def take(self, key: str, timeout: float | None) -> HistoryPart | bool | None:
        """The next part of ``key`` (given to a reader): None when it is not read yet
        (within ``timeout``), False when no more will come (the file is done, or given
        back: the source reads on from the last part taken)."""
        index = self._index[key]
        reader = self._given_to.get(index)
        if reader is None or self._state[index] != GIVEN:
            return False
        part = self._early.pop(index, None)
        while part is None:
            got = reader.next_part(timeout)
            if got is None:
                return None
            if got is False:
                self.give_back(key)
                return False
            sent_for, part = got
            if sent_for != index:
                if sent_for > index and self._state[sent_for] == GIVEN:
                    self._early[sent_for] = part        # the parts of ``key`` are gone
                    self.give_back(key)
                    return False
                self.give_back(self._keys[sent_for][0])
                part = None
        if part.last:
            self.give_back(key)
        return part

    def give_back(self, key: str) -> None:
        """``key`` is read by the source from now on (what a reader sends of it is dropped)."""
        index = self._index[key]
        with self._lock:
            if self._state[index] != OWN:
                self._mark_own(index)

    def _mark_own(self, index: int) -> None:
        self._state[index] = OWN
        self._given_to.pop(index, None)
        self._open -= 1

    @property
    def done(self) -> bool:
        return self._open == 0

    def close(self) -> None:
        for reader in self._readers:
            reader.close()
        self._early.clear()

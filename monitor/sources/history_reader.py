"""A process that reads whole transcripts of counted history beside a first scan.

A board or ``watch`` starting on a state dir of thousands of old transcripts spends its first
scan decoding history it only counts (``transcript_light``). The legacy source gives some of
those transcripts to reader processes (``history_split``); this one reads each file as the
source would (``LegacySessionsSource.emit_line``) and sends it back in parts of at most
``part_bytes`` of the file: its events, with each run of counted-only events summed into one
``CountedHistory`` (the source folds them only while the monitor is quiet, when a sum folds
as its events would), the source's counts and notices, and the follower's position after the
part's last complete line. After the last part the follower is suspended, so the source
resumes the file as it resumes its own idle files, from that position, and reads what is
appended later once.

"Counted" is decided here as the monitor decides it: an entry before ``since`` of a session
with no entry at or after ``since`` read yet (the source gives only sessions the monitor
holds as history and its index does not call running).

Protocol: on standard input a pickled ``HistoryRequest``, then each file to read as a pickled
``(index, path, session_id)`` as the source gives it (its end: no more); on standard output a
frame per part: its length, the file's index and whether it is the file's last part
(``FRAME_HEADER``), then the pickled ``HistoryPart``. Standard error is not read."""

from __future__ import annotations

import os
import pickle
import signal
import struct
import sys
from dataclasses import dataclass, field

from monitor.events import (
    AssistantMessage,
    CountedHistory,
    SourceError,
    ToolCall,
    ToolResult,
    UserMessage,
)
from monitor.lifetime import end_with_parent
from monitor.sources.tail_state import FollowerState, TailNotice

#: File bytes one part covers at most: the events of a part are alive until it is folded.
PART_BYTES = 4 << 20
FRAME_HEADER = struct.Struct("<QI?")
COUNTED_TYPES = frozenset({AssistantMessage, ToolCall, ToolResult, UserMessage})


@dataclass(frozen=True)
class HistoryRequest:
    """What every file given to a reader shares."""

    parent_pid: int
    sessions_dir: str
    agent_id: str
    include_archives: bool
    since: float
    part_bytes: int = PART_BYTES


@dataclass
class HistoryPart:
    """What reading one part of ``path`` gave. ``last``: the file's end was reached (a last
    line without its newline is left for the source, as its own follower would)."""

    path: str
    state: FollowerState | None
    last: bool
    events: list = field(default_factory=list)
    event_count: int = 0
    error_count: int = 0
    error_samples: list[SourceError] = field(default_factory=list)
    notices: list[TailNotice] = field(default_factory=list)
    #: ``FileFollower.suspension()`` after the last part (None: the source polls the file).
    suspended: tuple | None = None


def read_parts(request: HistoryRequest, files, send) -> None:
    """Read each ``(index, path, session_id)`` of ``files`` and ``send(index, part)`` each
    ``HistoryPart`` of it."""
    from monitor.sources.legacy import LegacySessionsSource
    from monitor.sources.tail import FileFollower
    from monitor.sources.transcript_light import CountOnly
    from monitor.sources.transcript_names import is_archive

    since = request.since
    newest: dict[str, float] = {}
    source = LegacySessionsSource(request.sessions_dir, request.agent_id,
                                  include_archives=request.include_archives)
    source.count_only = CountOnly(
        since, lambda session_id: newest.get(session_id, float("-inf")) < since)
    for index, path, session_id in files:
        follower = FileFollower(path, own_archives=None if request.include_archives
                                else is_archive)
        while True:
            source.events = source.errors = 0
            source.error_samples = []
            events: list = []
            summed = _Sum(session_id)
            for line in follower.poll(max_bytes=request.part_bytes):
                read: list = []
                source.emit_line(session_id, line, read)
                if all(type(event) in COUNTED_TYPES and event.counted_only for event in read):
                    for event in read:
                        summed.add(event)
                    continue
                summed.flush_to(events)
                events += read
                for event in read:
                    ts = getattr(event, "ts", None)
                    if ts is not None and ts >= since:
                        newest[session_id] = ts
            summed.flush_to(events)
            last = not follower.behind
            if last:
                follower.suspend()
            send(index, HistoryPart(path, follower.state(), last, events, source.events,
                                    source.errors, source.error_samples,
                                    follower.take_notices(), follower.suspension()))
            if last:
                break
        follower.close()


class _Sum:
    """Counted-only events of one session summed into ``CountedHistory`` records."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self._clear()

    def _clear(self) -> None:
        self.origin = ""
        self.events = self.tool_calls = self.assistant_messages = self.errors = 0
        self.tokens_input = self.tokens_output = self.tokens_total = 0
        self.first_ts = self.last_ts = self.model = self.user_run_id = None
        self.tools: dict[str, int] = {}
        self.costs: list[float] = []
        self.run_ids: list[str] = []

    def add(self, event) -> None:
        if not self.events:
            self.origin = event.origin
        self.events += 1
        ts = event.ts
        if ts is not None:
            if self.first_ts is None or ts < self.first_ts:
                self.first_ts = ts
            if self.last_ts is None or ts > self.last_ts:
                self.last_ts = ts
        run_id = event.run_id
        if run_id and (not self.run_ids or self.run_ids[-1] != run_id):
            self.run_ids.append(run_id)
        kind = type(event)
        if kind is ToolCall:
            self.tool_calls += 1
            self.tools[event.name] = self.tools.get(event.name, 0) + 1
        elif kind is AssistantMessage:
            usage = event.usage
            self.assistant_messages += 1
            self.tokens_input += usage.input
            self.tokens_output += usage.output
            self.tokens_total += usage.total
            if usage.cost:
                self.costs.append(usage.cost)
            self.model = event.model or self.model
            self.errors += event.is_error
        elif kind is UserMessage and run_id:
            self.user_run_id = run_id

    def flush_to(self, out: list) -> None:
        """Append what was summed since the last flush to ``out`` (nothing if nothing)."""
        if not self.events:
            return
        out.append(CountedHistory(
            self.session_id, self.origin, self.first_ts, self.last_ts,
            self.tool_calls, self.tools, self.assistant_messages, self.tokens_input,
            self.tokens_output, self.tokens_total, tuple(self.costs), self.errors, self.model,
            self.user_run_id, tuple(self.run_ids)))
        self._clear()


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    given = sys.stdin.buffer
    request = pickle.load(given)
    end_with_parent(request.parent_pid)
    out = sys.stdout.buffer

    def files():
        while True:
            try:
                yield pickle.load(given)
            except EOFError:
                return

    def send(index: int, part: HistoryPart) -> None:
        payload = pickle.dumps(part, protocol=pickle.HIGHEST_PROTOCOL)
        out.write(FRAME_HEADER.pack(len(payload), index, part.last))
        out.write(payload)
        out.flush()

    try:
        read_parts(request, files(), send)
    except BrokenPipeError:         # the source stopped listening: nothing is left to do
        os._exit(0)

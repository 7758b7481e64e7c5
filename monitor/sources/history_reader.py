"""A process that reads counted history beside a first scan.

A board or ``watch`` starting on a state dir of thousands of old sessions spends its first
scan decoding history it only counts (``transcript_light``). The legacy and SQLite sources
give some of it to reader processes (``history_split``, ``split_source``); this one reads
each transcript file (``LegacySessionsSource.emit_line``) or each session's rows
(``SqliteAgentSource.read_row``) as the source would, and sends it back in parts of at most
``part_bytes``: its events, with each run of counted-only events summed into one
``CountedHistory`` (the source folds them only while the monitor is quiet, when a sum folds
as its events would), the source's counts and notices, and where to read on: the follower's
position after the part's last complete line, or the last seq read. After a file's last part
its follower is suspended, so the source resumes the file as it resumes its own idle files
and reads what is appended later once; a session's later rows are past its cursor.

"Counted" is decided here as the monitor decides it: an entry before ``since`` of a session
with no entry at or after ``since`` read yet (the source gives only sessions the monitor
holds as history and its index does not call running).

Protocol: on standard input a pickled ``HistoryRequest``, then each file or session to read as
a pickled ``(index, key, session_id)`` as the source gives it (its end: no more); on standard
output a frame per part: its length, the index and whether it is the last part
(``FRAME_HEADER``), then the pickled ``HistoryPart``. Standard error is not read."""

from __future__ import annotations

import os
import pickle
import signal
import sqlite3
import struct
import sys
from dataclasses import dataclass, field

from monitor.events import SourceError
from monitor.lifetime import end_with_parent
from monitor.sources.tail_state import FollowerState, TailNotice
from monitor.sources.transcript_light import SummedRun

#: File bytes one part covers at most: the events of a part are alive until it is folded.
PART_BYTES = 4 << 20
FRAME_HEADER = struct.Struct("<QI?")


@dataclass(frozen=True)
class HistoryRequest:
    """What every file or session given to a reader shares. ``kind``: "jsonl" (``path`` is a
    legacy sessions dir) or "sqlite" (``path`` is an agent database)."""

    parent_pid: int
    kind: str
    path: str
    agent_id: str
    include_archives: bool
    since: float
    part_bytes: int = PART_BYTES


@dataclass
class HistoryPart:
    """What reading one part of a transcript file or a session's rows gave: where to read on
    from (a ``FollowerState``, or the last seq read), ``last``: its end was reached (a last
    line without its newline is left for the source, as its own follower would), the bytes
    and rows read."""

    state: FollowerState | int | None
    last: bool
    size: int
    rows: int = 0
    events: list = field(default_factory=list)
    event_count: int = 0
    error_count: int = 0
    error_samples: list[SourceError] = field(default_factory=list)
    notices: list[TailNotice] = field(default_factory=list)
    #: ``FileFollower.suspension()`` after the last part (None: the source polls the file).
    suspended: tuple | None = None


def read_parts(request: HistoryRequest, given, send) -> None:
    """Read each ``(index, key, session_id)`` of ``given`` (a transcript path or a session
    id, by ``request.kind``) and ``send(index, part)`` each ``HistoryPart`` of it."""
    from monitor.sources.transcript_light import CountOnly

    since = request.since
    newest: dict[str, float] = {}
    count_only = CountOnly(since, lambda sid: newest.get(sid, float("-inf")) < since)
    read = _transcript_parts if request.kind == "jsonl" else _session_parts
    read(request, count_only, newest, given, send)


def _transcript_parts(request: HistoryRequest, count_only, newest: dict, given, send) -> None:
    from monitor.sources.legacy import LegacySessionsSource
    from monitor.sources.tail import FileFollower
    from monitor.sources.transcript_names import is_archive

    source = LegacySessionsSource(request.path, request.agent_id,
                                  include_archives=request.include_archives)
    source.count_only = count_only
    for index, path, sid in given:
        follower = FileFollower(path, own_archives=None if request.include_archives
                                else is_archive)
        while True:
            part = _Part(source, sid, count_only.since, newest)
            part.add_lines(source.emit_line, follower.poll(max_bytes=request.part_bytes))
            last = not follower.behind
            if last:
                follower.suspend()
            send(index, part.finish(follower.state(), last, follower.bytes_read,
                                    notices=follower.take_notices(),
                                    suspended=follower.suspension()))
            if last:
                break
        follower.close()


def _session_parts(request: HistoryRequest, count_only, newest: dict, given, send) -> None:
    from monitor.sources.sqlite_agent import SqliteAgentSource

    source = SqliteAgentSource(request.path, request.agent_id)
    source.count_only = count_only
    conn = source.connect()
    if conn is None:
        return
    sql = source.rows_sql()
    for index, sid, _ in given:
        while True:
            part = _Part(source, sid, count_only.since, newest)
            size = rows = 0
            last = True
            conn.execute("BEGIN")
            found = conn.cursor()
            try:
                for row in found.execute(sql, (sid, source.seq_cursor.get(sid, -1))):
                    if size >= request.part_bytes:
                        last = False
                        break
                    rows += 1
                    size += part.add_row(sid, row)
            except sqlite3.DataError as exc:     # a value past the row cap: passed
                source.pass_oversized_row_or_raise(exc, conn, sid, part.out, part)
                last = False
            finally:
                found.close()
                conn.execute("COMMIT")
            send(index, part.finish(source.seq_cursor.get(sid), last, size, rows=rows))
            if last:
                break
    source.close()


class _Part(SummedRun):
    """One part being read: each line's or row's events, each run of counted-only events
    summed, and the source's counts from zero."""

    def __init__(self, source, sid: str, since: float, newest: dict) -> None:
        source.events = source.errors = 0
        source.error_samples = []
        super().__init__(source, sid, [])
        self.since, self.newest = since, newest

    def add(self, read, item):
        """``SummedRun.add``, noting the newest time at or after ``since`` read in full."""
        events = self.out
        given_before = len(events)
        returned = super().add(read, item)
        for event in events[given_before:]:
            ts = getattr(event, "ts", None)
            if ts is not None and ts >= self.since:
                self.newest[self.sid] = ts
        return returned

    def add_lines(self, read, lines) -> None:
        """``add(read, line)`` of each transcript line, history counted at once."""
        super().add_lines(lines, lambda line: self.add(read, line))

    def add_row(self, sid: str, row: tuple) -> int:
        """``add(source.read_row, row)``, a row of history counted at once
        (``EventRows.add_row``)."""
        return self.source.add_row(sid, row, self.out, self)

    def finish(self, state, last: bool, size: int, *, rows: int = 0,
               notices: list | None = None, suspended: tuple | None = None) -> HistoryPart:
        self.close()
        source = self.source
        return HistoryPart(state, last, size, rows, self.out, source.events,
                           source.errors, source.error_samples, notices or [], suspended)


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    stdin = sys.stdin.buffer
    request = pickle.load(stdin)
    end_with_parent(request.parent_pid)
    out = sys.stdout.buffer

    def given():
        while True:
            try:
                yield pickle.load(stdin)
            except EOFError:
                return

    def send(index: int, part: HistoryPart) -> None:
        payload = pickle.dumps(part, protocol=pickle.HIGHEST_PROTOCOL)
        out.write(FRAME_HEADER.pack(len(payload), index, part.last))
        out.write(payload)
        out.flush()

    try:
        read_parts(request, given(), send)
    except BrokenPipeError:         # the source stopped listening: nothing is left to do
        os._exit(0)

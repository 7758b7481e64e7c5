"""The SQLite era: one per-agent ``openclaw-agent.sqlite``, read-only, incrementally.

The database is opened with a ``mode=ro`` URI and never written, and nothing is
created beside it: a WAL database without its ``-wal``/``-shm`` is opened ``immutable=1``
and opened again normally once they appear or the file changes (``sqlite_ro``,
``sqlite_open``). A database without transcript tables (schema v1 held auth profiles only)
is a notice, not an error. Each poll runs in one read transaction (a consistent WAL
snapshot):

* ``session_nodes`` / ``session_windows`` rows updated since the last poll
  become ``SessionInfo`` records (the first poll emits the whole index; ``sqlite_index``);
* transcript rows are read per session by ``(session_id, seq)`` keyset, for the
  sessions in a pending set of those that may have rows past their cursor, fed by
  a rowid range search and, on the first poll after an open and every
  ``sweep_seconds``, by a sweep of every session's ``MAX(seq)`` (``sqlite_unread``).
  Pending sessions are read most recently written first (highest rowid), so a
  dashboard catching up shows live sessions first, and each row becomes events
  (``sqlite_event_rows``).

One poll reads at most ``poll_budget_bytes`` of decoded event JSON or ``step_rows``
rows; when it stops there with a row already readable it sets ``behind``, and
the next poll carries on from the per-session cursors. ``backlog_bytes``
estimates what is left from the pending sessions' unread seq range times the
average decoded row size read so far (``sqlite_unread``).

``event_zstd`` rows are decoded with ``zstandard``. Busy or locked databases,
a database that appears after start, one replaced underneath, and a newer
schema are reported and survived.

Sessions OpenClaw moved to cold storage (``session_transcript_cold_archives``) are read from
their archives by ``sqlite_cold.ColdReader``, checked as OpenClaw checks them, on each sweep:
only events past the session's seq cursor, so a session archived while it is followed is
never read twice.

Tables that are not STRICT hold values of any type, so every row is checked
(``sqlite_ro.check_row``) before it is used: a row whose session id is not text, whose
``seq`` or ``updated_at`` is not an integer in range, or whose ``entry_json`` is not text is
reported once, naming the table and rowid (or ``session_id:seq``), and skipped; the rest
flows. A row holding a value past ``MAX_ROW_BYTES`` is reported by its rowid and passed,
its neighbours read (``sqlite_event_rows``). A row that still fails to read is reported as
``internal`` and skipped, and a poll that fails anyway is reported and the database read
again once it changes.
"""

from __future__ import annotations

import sqlite3

import zstandard

from monitor.sources.base import Source
from monitor.sources.saved import saved_int, saved_seqs
from monitor.sources.sqlite_cold import ColdReader, has_cold_table
from monitor.sources.sqlite_event_rows import EventRows
from monitor.sources.sqlite_guard import stopping
from monitor.sources.sqlite_index import SessionIndexRows, now_ms, resumed_watermark
from monitor.sources.sqlite_open import DatabaseConnection, is_busy
from monitor.sources.sqlite_ro import type_name
from monitor.sources.sqlite_split import SqliteSplitting
from monitor.sources.sqlite_unread import ASSUMED_ROW_BYTES, UnreadSessions

#: Decoded event JSON one poll reads at most (overshoot: one row, at most MAX_EVENT_BYTES).
STEP_BUDGET_BYTES = 32 * 1024 * 1024
#: Rows one poll reads at most, bounding the events a poll hands on when rows are small.
STEP_BUDGET_ROWS = 20_000
#: Rows read between two looks at the step's deadline.
DEADLINE_CHECK_ROWS = 256
#: Bad rows remembered so that each is reported once (forgotten all at once past this).
BAD_ROWS_KEPT = 10_000


class SqliteAgentSource(DatabaseConnection, SessionIndexRows, UnreadSessions, EventRows,
                        SqliteSplitting, Source):
    """One agent database's sessions and transcripts, read a budgeted step per poll."""

    kind = "sqlite"

    def __init__(self, db_path: str, agent_id: str, *, resume: dict | None = None,
                 sweep_seconds: float = 30.0, poll_budget_bytes: int = STEP_BUDGET_BYTES,
                 step_rows: int = STEP_BUDGET_ROWS) -> None:
        super().__init__(db_path)
        self.agent_id = agent_id
        self.sweep_seconds = sweep_seconds
        self.poll_budget_bytes = poll_budget_bytes
        self.step_rows = step_rows
        self.behind = False
        self.seq_cursor: dict[str, int] = {}
        #: session_id -> (highest rowid, highest seq) seen for sessions that may have unread rows
        self._pending: dict[str, tuple[int, int]] = {}
        self._rows_read = 0
        self._decoded_bytes_read = 0
        self.row_watermark = 0
        self.nodes_watermark = -1
        self.windows_watermark = -1
        if resume:
            self.seq_cursor = saved_seqs(resume.get("seq"))
            self.row_watermark = saved_int(resume.get("rowid"), 0)
            now = now_ms()
            self.nodes_watermark = resumed_watermark(
                saved_int(resume.get("nodes"), -1, minimum=-1), now)
            self.windows_watermark = resumed_watermark(
                saved_int(resume.get("windows"), -1, minimum=-1), now)
        self.busy_retries = 0
        self._conn: sqlite3.Connection | None = None
        self._identity: tuple[int, int] | None = None
        self._columns: dict[str, set[str]] = {}
        self._text_is_utf8 = True
        self._not_null: dict[str, set[str]] = {}
        self._last_sweep = float("-inf")
        self._decompressor = zstandard.ZstdDecompressor()
        self._reported_missing = False
        self._failed_on: tuple | None = None
        self._node_versions: dict[str, tuple] = {}
        #: (table, rowid or value) -> hash of the bad row last reported there
        self._bad_rows: dict[tuple, int] = {}
        self._rowid: dict[str, str] = {}
        #: Opened ``immutable=1`` (no WAL yet), and the files' versions then.
        self._immutable = False
        self._opened_versions: tuple | None = None
        self._quiet_reopen = False
        self._cold = ColdReader(self)
        self._swept = False

    # -------------------------------------------------------------------- poll

    def poll(self) -> list:
        out: list = []
        self.behind = False
        self._reopen_if_replaced(out)
        if self._failed_on is not None:
            if self._file_versions() == self._failed_on:
                return out
            self._failed_on = None
        if self._conn is None and not self._open(out):
            return out
        if not self._files_still_regular(out):
            return out
        conn = self._conn
        assert conn is not None
        pending: list = []
        try:
            conn.execute("BEGIN")
            try:
                self._read_sessions(conn, pending)
                self.note_running(pending)
                if not self.index_went_first(pending):
                    self._read_transcripts(conn, pending)
            finally:
                conn.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            if is_busy(exc):
                self.busy_retries += 1
                return out + pending
            if stopping():      # interrupted by the stop: what was read before stands
                return out + pending
            out.append(self.error("query", f"query failed: {exc}", shared=True))
            self._close()
            self._failed_on = self._file_versions()
        except sqlite3.DatabaseError as exc:
            out.append(self.error("query", f"database unreadable: {exc}", shared=True))
            self._close()
            self._failed_on = self._file_versions()
        except Exception as exc:  # nothing in a database may stop the reader
            out.append(self.error("internal", f"poll failed, read again once the database "
                                              f"changes: {type(exc).__name__}: {exc}",
                                  shared=True))
            self._close()
            self._failed_on = self._file_versions()
        return out + pending

    def transcript_units(self) -> dict[str, tuple[int, list]]:
        """Per session id: its weight, ``ASSUMED_ROW_BYTES`` a row, and what identifies its
        rows now (the database file, their count, highest seq and rowid). Both come from the
        primary key's index alone: weighing rows by their stored bytes would read every
        row's content, in one process, before any worker of a replay starts."""
        if self._conn is None or not {"session_id", "seq", "event_json"} <= self._columns.get(
                "transcript_events", set()):
            return {}
        database = [self.path, *(self._identity or ())]
        units: dict[str, tuple[int, list]] = {}
        try:
            found = self._conn.execute(
                "SELECT session_id, count(*), max(seq), "
                f"max({self._rowid.get('transcript_events', 'rowid')}) FROM transcript_events "
                "GROUP BY session_id").fetchall()
            for sid, count, top_seq, top_rowid in found:
                if isinstance(sid, str):
                    units[sid] = (count * ASSUMED_ROW_BYTES,
                                  [*database, count, str(top_seq), top_rowid])
                else:       # no session to read it with: reported here, once
                    self._bad_row([], "transcript_events", top_rowid, (type_name(sid), sid),
                                  f"session_id is {type_name(sid)}, not text")
            if has_cold_table(self._columns):
                for sid, (weight, identity) in self._cold.units(self._conn).items():
                    hot_weight, hot = units.get(sid, (0, []))
                    units[sid] = (hot_weight + weight, [*hot, *identity])
        except sqlite3.DatabaseError as exc:
            self.error("query", f"database unreadable: {exc}", shared=True)
        return units

    def _bad_row(self, out: list, table: str, rowid, row, message: str, *,
                 shared: bool = True) -> None:
        """Report a row that cannot be read (``table/rowid N``), once for as long as it
        stays the same. ``shared``: not a row of one session's transcript."""
        key = (table, type_name(rowid), rowid)
        try:
            version = hash(row)
        except TypeError:
            version = 0
        if self._bad_rows.get(key) == version:
            return
        if len(self._bad_rows) >= BAD_ROWS_KEPT:
            self._bad_rows.clear()
        self._bad_rows[key] = version
        where = f"{table}/rowid {rowid}" if isinstance(rowid, int) else table
        out.append(self.error(where, f"row skipped: {message}", shared=shared))

    def _read_transcripts(self, conn: sqlite3.Connection, out: list) -> None:
        columns = self._columns.get("transcript_events", set())
        if not {"session_id", "seq", "event_json"} <= columns:
            return
        self._swept = False
        self._gather_pending(conn, out)
        sql = self.rows_sql()
        spent_bytes = spent_rows = 0
        if not self._split_planned:
            self._start_split()
        for sid in sorted(self._pending, key=lambda s: self._pending[s][0], reverse=True):
            if self._split is not None and sid in self._split and self._split.reader_of(sid):
                taken, done = self._take_split(sid, sid, out,
                                               self.poll_budget_bytes - spent_bytes)
                spent_bytes += taken
                if not done:
                    self.behind = True
                    break
            while True:
                rows = conn.cursor()
                summing = self._summing(sid, out)
                try:
                    for row in rows.execute(sql, (sid, self.seq_cursor.get(sid, -1))):
                        if spent_bytes >= self.poll_budget_bytes \
                                or spent_rows >= self.step_rows \
                                or (spent_rows and spent_rows % DEADLINE_CHECK_ROWS == 0
                                    and self.out_of_time()):
                            self.behind = True
                            break
                        spent_rows += 1
                        spent_bytes += self.add_row(sid, row, out, summing)
                except sqlite3.DataError as exc:
                    self.pass_oversized_row_or_raise(exc, conn, sid, out, summing)
                    continue
                finally:
                    rows.close()
                    if summing is not None:
                        summing.close()
                break
            if self.behind:
                break
            del self._pending[sid]
        if self._swept and has_cold_table(self._columns):
            self._cold.scan(conn, out)
        if self._cold.due and not self.behind:
            spent_bytes += self._cold.read(conn, out, self.poll_budget_bytes - spent_bytes)
            self.behind = bool(self._cold.due)
        self._rows_read += spent_rows
        self._decoded_bytes_read += spent_bytes

    def unfinished_of(self, session_ids: list[str]) -> set[str]:
        """A session with rows past its cursor is pending until they are read, one with a
        cold archive to read due until it is read."""
        pending, due = self._pending, self._cold.due
        return {sid for sid in session_ids if sid in pending or sid in due}

    def connect(self) -> sqlite3.Connection | None:
        """The database opened as a poll opens it (a history reader's), None when it
        cannot be."""
        return self._conn if self._conn is not None or self._open([]) else None

    def checkpoint(self) -> dict:
        return {"seq": dict(self.seq_cursor), "rowid": self.row_watermark,
                "nodes": self.nodes_watermark, "windows": self.windows_watermark}

    def close(self) -> None:
        self._close_split()
        self._close()

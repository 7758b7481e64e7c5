"""Which sessions of an agent database have transcript rows not read yet, and how much is left.

The sessions to read are kept in a pending set, each with the highest rowid and seq seen
for it. Between sweeps it is fed by the rows past the rowid high-water mark (a rowid range
search, no index scan). A sweep, on the first poll after an open, every ``sweep_seconds``
and whenever the highest rowid falls below the mark, adds every session whose ``MAX(seq)``
is past its cursor: this covers rowid reuse, a VACUUM that renumbered rows and a resume
from a checkpoint. A ``WITHOUT ROWID`` table has no range to search: between sweeps the
sessions running and those the index gave this poll are looked up in its key instead, and
its rows are named by ``session_id:seq``.

``backlog_bytes`` estimates what is left without a query: the pending sessions' unread seq
range (OpenClaw allocates seqs densely) times the average decoded row size read so far.

``UnreadSessions`` is a mixin of ``SqliteAgentSource``, sharing its state and its
``_bad_row``.
"""

from __future__ import annotations

import sqlite3
import time

from monitor.events import SessionInfo
from monitor.sources.sqlite_ro import sql_int, type_name

#: Average decoded row size assumed for ``backlog_bytes`` until a row has been read.
ASSUMED_ROW_BYTES = 1024
#: Sessions with rows past the rowid high-water mark: a rowid range search, no index scan.
NEW_ROWS_SQL = "SELECT session_id, seq, rowid FROM transcript_events WHERE rowid > ?"
#: Every session's highest seq and rowid (``{rowid}``: ``rowid``, or ``NULL`` for a table
#: without one): a scan of the (session_id, seq) index.
SWEEP_SQL = ("SELECT session_id, max(seq), max({rowid}) FROM transcript_events "
             "GROUP BY session_id")
#: The sweep of some sessions (``only_sessions``): a search of the index for each.
SWEEP_SOME_SQL = ("SELECT session_id, max(seq), max({rowid}) FROM transcript_events "
                  "WHERE session_id IN ({marks}) GROUP BY session_id")
#: Session ids bound to one ``SWEEP_SOME_SQL`` (SQLite allows 999 on builds before 3.32).
SWEEP_IDS_PER_QUERY = 500


def is_utf8(session_id: str) -> bool:
    """Whether ``session_id`` can be bound as an SQL parameter. One taken from a file name
    that is not UTF-8 holds surrogate escapes: binding it fails the whole query, and it names
    no row, since text that is not UTF-8 is read as ``NotUtf8Text``, never as such a str."""
    try:
        session_id.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class UnreadSessions:
    """Keeps the pending set of sessions that may have rows past their cursor."""

    def _gather_pending(self, conn: sqlite3.Connection, out: list) -> None:
        """Add the sessions found with rows past their cursor (``_candidate_sessions``) to
        the pending set."""
        for sid, (rowid, seq) in self._candidate_sessions(conn, out).items():
            seen = self._pending.get(sid)
            self._pending[sid] = (rowid, seq) if seen is None else (
                max(seen[0], rowid), max(seen[1], seq))

    def _candidate_sessions(self, conn: sqlite3.Connection, out: list
                            ) -> dict[str, tuple[int, int]]:
        """Sessions that may have rows past their cursor, each with the highest rowid and
        seq seen for it. A sweep, when due, finds every such session, so the rowid range
        is only searched between sweeps."""
        found: dict[str, tuple[int, int]] = {}
        has_rowid = self._rowid.get("transcript_events", "rowid") == "rowid"
        top = 0
        if has_rowid:
            top = sql_int(conn.execute("SELECT max(rowid) FROM transcript_events").fetchone()[0],
                          low=-(2**63), high=2**63 - 1) or 0
        now = time.monotonic()
        if now - self._last_sweep >= self.sweep_seconds or top < self.row_watermark:
            self._last_sweep = now
            self._swept = True
            for sid, max_seq, last_rowid in self._sweep(conn):
                if max_seq is not None:
                    self._note_candidate(found, sid, max_seq, last_rowid, out)
        elif not has_rowid:
            looked_at = self.running_sessions | {
                record.session_id for record in out if isinstance(record, SessionInfo)}
            for sid, max_seq, last_rowid in self._sweep(conn, looked_at):
                if max_seq is not None:
                    self._note_candidate(found, sid, max_seq, last_rowid, out)
        elif top > self.row_watermark:
            for sid, seq, rowid in conn.execute(NEW_ROWS_SQL, (self.row_watermark,)):
                self._note_candidate(found, sid, seq, rowid, out)
        self.row_watermark = top
        return found

    def _sweep(self, conn: sqlite3.Connection, some: set[str] | None = None):
        """Every session's highest seq and rowid, or only those of ``some`` and of
        ``only_sessions`` when the source reads just some (a shard of a replay, one session's
        timeline): then each is looked up in the index instead of every shard scanning all
        of it. An id that is not UTF-8 (``is_utf8``) names no row and is left out."""
        wanted = self.only_sessions
        if some is not None:
            wanted = some if wanted is None else some & wanted
        rowid = self._rowid.get("transcript_events", "rowid")
        if wanted is None:
            yield from conn.execute(SWEEP_SQL.format(rowid=rowid))
            return
        ids = sorted(sid for sid in wanted if is_utf8(sid))
        for start in range(0, len(ids), SWEEP_IDS_PER_QUERY):
            chunk = ids[start:start + SWEEP_IDS_PER_QUERY]
            yield from conn.execute(SWEEP_SOME_SQL.format(rowid=rowid,
                                                          marks=",".join("?" * len(chunk))),
                                    chunk)

    def _note_candidate(self, found: dict, sid, seq, rowid, out: list) -> None:
        """Add ``sid`` to ``found`` when ``seq`` is past its cursor. A session id that is not
        text is reported (once) and left; a ``seq`` that is not an integer in range makes the
        session worth reading from its cursor, where the bad row is reported and skipped."""
        rowid = sql_int(rowid, low=-(2**63), high=2**63 - 1) or 0
        if not isinstance(sid, str):
            self._bad_row(out, "transcript_events", rowid, (type_name(sid), sid),
                          f"session_id is {type_name(sid)}, not text")
            return
        if not self.wants_session(sid):
            return
        cursor = self.seq_cursor.get(sid, -1)
        seq = sql_int(seq)
        seq = cursor + 1 if seq is None else seq
        if seq <= cursor:
            return
        seen = found.get(sid)
        found[sid] = (rowid, seq) if seen is None else (max(seen[0], rowid), max(seen[1], seq))

    @property
    def backlog_bytes(self) -> int:
        """Worked out when asked (a snapshot, a metrics scrape), not after every poll: a
        first scan's polls outnumber its snapshots, and each would sum thousands of
        sessions."""
        return self._estimate_backlog() + self._cold.backlog()

    def _estimate_backlog(self) -> int:
        """Unread rows of the pending sessions (by seq range, which OpenClaw allocates densely)
        times the average decoded row size read so far: no query, no table scan."""
        rows_left = sum(max(0, top_seq - self.seq_cursor.get(sid, -1))
                        for sid, (_, top_seq) in self._pending.items())
        average = (self._decoded_bytes_read // self._rows_read if self._rows_read
                   else ASSUMED_ROW_BYTES)
        return rows_left * average

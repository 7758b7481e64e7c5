"""One session's ``transcript_events`` rows, read in seq order and turned into events.

A row holds its event as ``event_json`` text or as an ``event_zstd`` blob (decoded with
``zstandard``), and its seq becomes the session's cursor. Each row is checked before it is
used: one whose ``seq`` is not an integer in range is reported once (``table/rowid N``) and
skipped; an event that cannot be decoded, parsed or understood is reported under
``session_id:seq``, and any other failure on one row as ``internal``, and the rows after it
are read on.

A value past ``MAX_ROW_BYTES`` is never read: SQLite refuses the statement reading it
(``sqlite_guard.is_too_big``), so the loop reading a session's rows hands that error to
``pass_oversized_row_or_raise``, which reports the row, moves the cursor past it and lets
the loop query again from there.

``EventRows`` is a mixin of ``SqliteAgentSource``, sharing its state and its ``_bad_row``;
a history reader (``history_reader``) and the cold archives (``sqlite_cold``) read rows
through it too.
"""

from __future__ import annotations

import sqlite3

from monitor import untrusted_json
from monitor.events import SourceError
from monitor.sources.event_blob import EventBlobError, decompress_event
from monitor.sources.sqlite_guard import is_too_big
from monitor.sources.sqlite_open import MAX_ROW_BYTES
from monitor.sources.sqlite_ro import sql_int, type_name
from monitor.sources.transcript import UnknownEntry, parse_entry
from monitor.sources.transcript_light import CountedSum, count_into
from monitor.sources.transcript_typed import typed_events


class EventRows:
    """Reads a session's transcript rows into events, advancing its seq cursor."""

    def rows_sql(self) -> str:
        """The query of one session's rows past a seq, in seq order. A column the schema
        lacks is read as NULL: a blob without its decoded size is still decoded, within
        ``MAX_EVENT_BYTES``. In a UTF-8 database the event JSON is read as the bytes it is
        stored as, as a legacy transcript's lines are: the decoder takes them as they are,
        and a text that is not UTF-8 is an error of its row when it is decoded."""
        columns = self._columns.get("transcript_events", set())
        zstd_columns = ", ".join(name if name in columns else "NULL"
                                 for name in ("event_zstd", "event_utf8_bytes"))
        event_json = "CAST(event_json AS BLOB)" if self._text_is_utf8 else "event_json"
        rowid = self._rowid.get("transcript_events", "rowid")
        return (f"SELECT seq, {event_json}, {zstd_columns}, {rowid} FROM transcript_events "
                "WHERE session_id = ? AND seq > ? ORDER BY seq")

    def read_row(self, sid: str, row: tuple, out: list) -> int:
        """One row of ``rows_sql`` into ``out``, its seq the session's cursor; its decoded
        size (``_emit_row``)."""
        seq, event_json, event_zstd, utf8_bytes, rowid = row
        if sql_int(seq) is None:            # text, blob, real or out of range: after ints
            named = rowid if rowid is not None else (sid, type_name(seq), seq)  # no rowid
            self._bad_row(out, "transcript_events", named, (sid, seq),
                          f"seq is {type_name(seq)}, not an integer in range", shared=False)
            return 0
        size = 0
        try:
            size = self._emit_row(sid, seq, event_json, event_zstd, utf8_bytes, out)
        except Exception as exc:            # one row must not stop the poll
            out.append(self.row_skipped(sid, seq, exc))
        self.seq_cursor[sid] = seq
        return size

    def row_skipped(self, sid: str, seq: int, exc: Exception) -> SourceError:
        """The error of a row that failed in an unexpected way, passed so the rows after it
        are read."""
        return self.error(f"{sid}:{seq}", f"internal: row skipped: {type(exc).__name__}: {exc}")

    def count_row(self, sid: str, row: tuple, out: list, summed: CountedSum) -> int | None:
        """``read_row`` of a row whose event JSON the source only counts, its events added
        to ``summed``; None, having done nothing, for a row ``read_row`` must read (a seq
        out of range, a blob that does not decompress, JSON to read in full)."""
        seq, event_json = row[0], row[1]
        if event_json is None and row[2] is not None:
            try:
                event_json = decompress_event(self._decompressor, row[2], row[3])
            except EventBlobError:
                return None
        if not isinstance(event_json, (str, bytes)) or not event_json or sql_int(seq) is None:
            return None
        try:
            count = count_into(summed, event_json, f"{self.path}#{sid}:{seq}", self.count_only)
        except Exception as exc:            # as read_row reports it, after the sums before it
            summed.flush_to(out)
            out.append(self.row_skipped(sid, seq, exc))
            self.seq_cursor[sid] = seq
            return 0
        if count is None:
            return None
        self.events += count
        self.seq_cursor[sid] = seq
        return len(event_json)

    def add_row(self, sid: str, row: tuple, out: list, summing) -> int:
        """``read_row`` of ``row``, through ``summing`` (a ``SummedRun``) when not None; a
        row of history counted at once (``count_row``), without the calls between."""
        if summing is None:
            return self.read_row(sid, row, out)
        if summing.counting_now:
            counted = self.count_row(sid, row, out, summing.summed)
            if counted is not None:
                return counted
        return summing.read_in_full(self.read_row, row)

    def pass_oversized_row_or_raise(self, exc: sqlite3.DataError, conn: sqlite3.Connection,
                                    sid: str, out: list, summing) -> None:
        """``exc`` ended a read of the session's rows: when it is SQLite refusing a value
        past ``MAX_ROW_BYTES`` and the refused row is passed (``pass_oversized_row``), the
        caller reads the session again from its cursor; otherwise ``exc`` is raised again."""
        if not (is_too_big(exc) and self.pass_oversized_row(conn, sid, out, summing)):
            raise exc

    def pass_oversized_row(self, conn: sqlite3.Connection, sid: str, out: list,
                           summing) -> bool:
        """A row of the session holds a value past ``MAX_ROW_BYTES`` (SQLite refused to read
        it): the next two rows past the cursor are read one at a time, since the cursor
        steps one row ahead of the one it returns and the row before the refused one was
        lost with the error. The refused row is reported and passed; False when none is
        found, or its seq is not an integer past the cursor (the session is read no
        further now)."""
        cursor = self.seq_cursor.get(sid, -1)
        rowid = self._rowid.get("transcript_events", "rowid")
        ahead = conn.execute(f"SELECT seq, {rowid} FROM transcript_events WHERE session_id = ? "
                             "AND seq > ? ORDER BY seq LIMIT 2", (sid, cursor)).fetchall()
        for seq, rowid in ahead:
            try:
                row = conn.execute(self.rows_sql() + " LIMIT 1",
                                   (sid, self.seq_cursor.get(sid, -1))).fetchone()
            except sqlite3.DataError as exc:
                if not is_too_big(exc):
                    raise
                self._bad_row(out, "transcript_events", rowid, (sid, seq),
                              f"a value longer than {MAX_ROW_BYTES} bytes", shared=False)
                if sql_int(seq) is None or seq <= self.seq_cursor.get(sid, -1):
                    return False
                self.seq_cursor[sid] = seq
                return True
            if row is not None and summing is None:
                self.read_row(sid, row, out)
            elif row is not None:
                summing.add(self.read_row, row)
        return False

    def _emit_row(self, sid: str, seq: int, event_json, event_zstd, utf8_bytes, out: list
                  ) -> int:
        """Parse one row into ``out``; returns its decoded size (stored size when it cannot be
        decoded), which is what the step budget counts."""
        where = f"{sid}:{seq}"
        origin = f"{self.path}#{where}"
        if event_json is None and event_zstd is not None:
            event_json = self._decode_zstd(where, event_zstd, utf8_bytes, out)
            if event_json is None:
                return len(event_zstd) if isinstance(event_zstd, (bytes, str)) else 0
        if event_json is None:
            out.append(self.error(where, "row has neither event_json nor event_zstd"))
            return 0
        size = len(event_json) if isinstance(event_json, (bytes, str)) else 0
        events = None
        if size:
            counted = self.counted(event_json, sid, origin)
            if counted is not None:
                out.extend(counted)
                return size
            events = typed_events(event_json, sid, origin)
        if events is None:
            try:
                entry = untrusted_json.loads(event_json)
            except (ValueError, UnicodeDecodeError, TypeError) as exc:
                out.append(self.error(where, f"invalid event JSON: {exc}"))
                return size
            try:
                events = parse_entry(entry, sid, origin)
            except UnknownEntry as exc:
                out.append(self.error(where, str(exc)))
                return size
            except ValueError as exc:
                out.append(self.error(where, f"unreadable event: {exc}"))
                return size
        self.events += len(events)
        out.extend(events)
        return size

    def _decode_zstd(self, where: str, data, utf8_bytes, out: list) -> bytes | None:
        try:
            return decompress_event(self._decompressor, data, utf8_bytes)
        except EventBlobError as exc:
            out.append(self.error(where, f"cannot decode event_zstd: {exc}"))
            return None

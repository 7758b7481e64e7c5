"""The SQLite era: one per-agent ``openclaw-agent.sqlite``, read-only, incrementally.

The database is opened with a ``mode=ro`` URI and never written. Each poll
runs in one read transaction (a consistent WAL snapshot):

* ``session_nodes`` / ``session_windows`` rows updated since the last poll
  become ``SessionInfo`` records;
* transcript rows are read per session by ``(session_id, seq)`` keyset. The
  sessions to look at are those with rows past the rowid high-water mark or a
  window updated since the last poll, plus, on the first poll and every
  ``sweep_seconds``, every session whose ``MAX(seq)`` is past its cursor (this
  covers rowid reuse and a VACUUM that renumbered rows).

``event_zstd`` rows are decoded with ``zstandard``. Busy or locked databases,
a database that appears after start, one replaced underneath, and a newer
schema are reported and survived.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from urllib.parse import quote

import zstandard

from monitor.events import SessionInfo, SourceNotice
from monitor.sources.base import Source
from monitor.sources.transcript import UnknownEntry, epoch_seconds, parse_entry

KNOWN_SCHEMA_VERSION = 24
KEYSET_BATCH = 2000
MAX_EVENT_BYTES = 4 * 1024 * 1024
NODE_COLUMNS = ("session_key", "current_session_id", "entry_json", "status", "updated_at",
                "label", "display_name")
WINDOW_COLUMNS = ("session_id", "session_key", "status", "model", "model_provider", "updated_at")


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


class SqliteAgentSource(Source):
    kind = "sqlite"

    def __init__(self, db_path: str, agent_id: str, *, resume: dict | None = None,
                 sweep_seconds: float = 30.0) -> None:
        super().__init__(db_path)
        self.agent_id = agent_id
        self.sweep_seconds = sweep_seconds
        self.seq_cursor: dict[str, int] = {}
        self.row_watermark = 0
        self.nodes_watermark = -1
        self.windows_watermark = -1
        if resume:
            self.seq_cursor = {k: int(v) for k, v in resume.get("seq", {}).items()}
            self.row_watermark = int(resume.get("rowid", 0))
            self.nodes_watermark = int(resume.get("nodes", -1))
            self.windows_watermark = int(resume.get("windows", -1))
        self.busy_retries = 0
        self._conn: sqlite3.Connection | None = None
        self._identity: tuple[int, int] | None = None
        self._columns: dict[str, set[str]] = {}
        self._last_sweep = float("-inf")
        self._decompressor = zstandard.ZstdDecompressor()
        self._reported_missing = False
        self._failed_on: tuple | None = None
        self._node_versions: dict[str, tuple] = {}

    # ----------------------------------------------------------------- opening

    def _open(self, out: list) -> bool:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return False
        uri = f"file:{quote(os.path.abspath(self.path))}?mode=ro"
        conn = None
        try:
            conn = sqlite3.connect(uri, uri=True, timeout=0.25, isolation_level=None,
                                   check_same_thread=False)
            conn.execute("PRAGMA query_only = 1")
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            columns = {
                table: {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
                for table in ("session_nodes", "session_windows", "transcript_events")
            }
        except sqlite3.DatabaseError as exc:
            if conn is not None:
                conn.close()
            if isinstance(exc, sqlite3.OperationalError) and _is_busy(exc):
                self.busy_retries += 1
                return False
            out.append(self.error("open", f"cannot open the database read-only: {exc}"))
            self._failed_on = self._file_versions()
            return False
        self._conn, self._identity, self._columns = conn, (st.st_dev, st.st_ino), columns
        out.append(SourceNotice(self.kind, self.path, f"opened read-only (schema v{version})"))
        if version > KNOWN_SCHEMA_VERSION:
            out.append(SourceNotice(
                self.kind, self.path,
                f"schema v{version} is newer than clawwatch knows (v{KNOWN_SCHEMA_VERSION}); "
                "reading the columns it knows",
            ))
        missing = {"session_id", "seq", "event_json"} - columns["transcript_events"]
        if missing and not self._reported_missing:
            self._reported_missing = True
            out.append(self.error(
                "transcript_events",
                "cannot read transcripts: table transcript_events lacks "
                + ", ".join(sorted(missing)) + " (session index is still read)",
            ))
        return True

    def _reopen_if_replaced(self, out: list) -> None:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            if self._conn is not None:
                out.append(SourceNotice(self.kind, self.path, "database file removed; waiting"))
                self._close()
            return
        if self._conn is not None and (st.st_dev, st.st_ino) != self._identity:
            out.append(SourceNotice(self.kind, self.path, "database file replaced; reopening"))
            self._close()
            self._last_sweep = float("-inf")

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()
        self._conn = None

    def _file_versions(self) -> tuple:
        """Identity, size and mtime of the database and its WAL: a database that failed is
        tried again only once one of them changes, so a lasting fault is reported once."""
        versions = []
        for path in (self.path, self.path + "-wal"):
            try:
                st = os.stat(path)
            except OSError:
                versions.append(None)
                continue
            versions.append((st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns))
        return tuple(versions)

    # -------------------------------------------------------------------- poll

    def poll(self) -> list:
        out: list = []
        self._reopen_if_replaced(out)
        if self._failed_on is not None:
            if self._file_versions() == self._failed_on:
                return out
            self._failed_on = None
        if self._conn is None and not self._open(out):
            return out
        conn = self._conn
        assert conn is not None
        pending: list = []
        try:
            conn.execute("BEGIN")
            try:
                self._read_sessions(conn, pending)
                self._read_transcripts(conn, pending)
            finally:
                conn.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            if _is_busy(exc):
                self.busy_retries += 1
                return out + pending
            out.append(self.error("query", f"query failed: {exc}"))
            self._close()
            self._failed_on = self._file_versions()
        except sqlite3.DatabaseError as exc:
            out.append(self.error("query", f"database unreadable: {exc}"))
            self._close()
            self._failed_on = self._file_versions()
        return out + pending

    def _select(self, table: str, wanted: tuple[str, ...]) -> str:
        present = self._columns.get(table, set())
        return ", ".join(c if c in present else f"NULL AS {c}" for c in wanted)

    def _read_sessions(self, conn: sqlite3.Connection, out: list) -> None:
        if {"session_key", "current_session_id"} <= self._columns.get("session_nodes", set()):
            sql = (f"SELECT {self._select('session_nodes', NODE_COLUMNS)} FROM session_nodes "
                   "WHERE coalesce(updated_at, 0) >= ?")
            for row in conn.execute(sql, (self.nodes_watermark,)):
                record = self._session_from_node(row)
                if record is not None:
                    out.append(record)
                self.nodes_watermark = max(self.nodes_watermark, row[4] or 0)
        if {"session_id", "session_key"} <= self._columns.get("session_windows", set()):
            sql = (f"SELECT {self._select('session_windows', WINDOW_COLUMNS)} "
                   "FROM session_windows WHERE coalesce(updated_at, 0) >= ?")
            for sid, key, status, model, provider, updated in conn.execute(
                    sql, (self.windows_watermark,)):
                version = ("w", status, model, updated)
                if self._node_versions.get("w:" + sid) == version:
                    continue
                self._node_versions["w:" + sid] = version
                out.append(SessionInfo(key=key, session_id=sid, agent_id=self.agent_id,
                                       model=model, provider=provider, status=status,
                                       origin=f"{self.path}#window:{sid}"))
                self.windows_watermark = max(self.windows_watermark, updated or 0)

    def _session_from_node(self, row: tuple) -> SessionInfo | None:
        key, sid, entry_json, status, updated, label, display_name = row
        version = (sid, status, updated, len(entry_json or ""))
        if self._node_versions.get(key) == version:
            return None
        self._node_versions[key] = version
        try:
            entry = json.loads(entry_json) if entry_json else {}
        except ValueError:
            entry = {}
        if not isinstance(entry, dict):
            entry = {}

        def as_int(name: str) -> int | None:
            value = entry.get(name)
            return value if isinstance(value, int) and not isinstance(value, bool) else None

        return SessionInfo(
            key=key, session_id=sid, agent_id=self.agent_id,
            model=entry.get("model") if isinstance(entry.get("model"), str) else None,
            provider=entry.get("modelProvider")
            if isinstance(entry.get("modelProvider"), str) else None,
            status=status or (entry.get("status") if isinstance(entry.get("status"), str)
                              else None),
            run_id=entry.get("lastRunId") if isinstance(entry.get("lastRunId"), str) else None,
            active_run_id=entry.get("activeWriterRunId")
            if isinstance(entry.get("activeWriterRunId"), str) else None,
            aborted_last_run=entry.get("abortedLastRun") is True,
            label=label or display_name,
            updated_at=epoch_seconds(updated / 1000.0) if updated else None,
            input_tokens=as_int("inputTokens"), output_tokens=as_int("outputTokens"),
            total_tokens=as_int("totalTokens"),
            origin=f"{self.path}#node:{key}",
        )

    def _candidate_sessions(self, conn: sqlite3.Connection) -> set[str]:
        candidates: set[str] = set()
        row = conn.execute("SELECT max(rowid) FROM transcript_events").fetchone()
        top = row[0] or 0
        if top > self.row_watermark:
            candidates.update(r[0] for r in conn.execute(
                "SELECT DISTINCT session_id FROM transcript_events WHERE rowid > ?",
                (self.row_watermark,)))
        now = time.monotonic()
        if now - self._last_sweep >= self.sweep_seconds or top < self.row_watermark:
            self._last_sweep = now
            for sid, max_seq in conn.execute(
                    "SELECT session_id, max(seq) FROM transcript_events GROUP BY session_id"):
                if max_seq is not None and max_seq > self.seq_cursor.get(sid, -1):
                    candidates.add(sid)
        self.row_watermark = top
        return candidates

    def _read_transcripts(self, conn: sqlite3.Connection, out: list) -> None:
        columns = self._columns.get("transcript_events", set())
        if not {"session_id", "seq", "event_json"} <= columns:
            return
        zstd_columns = ("event_zstd, event_utf8_bytes"
                        if {"event_zstd", "event_utf8_bytes"} <= columns else "NULL, NULL")
        sql = (f"SELECT seq, event_json, {zstd_columns} FROM transcript_events "
               f"WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT {KEYSET_BATCH}")
        for sid in sorted(self._candidate_sessions(conn)):
            while True:
                rows = conn.execute(sql, (sid, self.seq_cursor.get(sid, -1))).fetchall()
                for seq, event_json, event_zstd, utf8_bytes in rows:
                    self._emit_row(sid, seq, event_json, event_zstd, utf8_bytes, out)
                    self.seq_cursor[sid] = seq
                if len(rows) < KEYSET_BATCH:
                    break

    def _emit_row(self, sid: str, seq: int, event_json, event_zstd, utf8_bytes, out: list
                  ) -> None:
        where = f"{sid}:{seq}"
        origin = f"{self.path}#{where}"
        if event_json is None and event_zstd is not None:
            event_json = self._decode_zstd(where, event_zstd, utf8_bytes, out)
            if event_json is None:
                return
        if event_json is None:
            out.append(self.error(where, "row has neither event_json nor event_zstd"))
            return
        try:
            entry = json.loads(event_json)
        except (ValueError, UnicodeDecodeError) as exc:
            out.append(self.error(where, f"invalid event JSON: {exc}"))
            return
        try:
            events = parse_entry(entry, sid, origin)
        except UnknownEntry as exc:
            out.append(self.error(where, str(exc)))
            return
        except ValueError as exc:
            out.append(self.error(where, f"unreadable event: {exc}"))
            return
        self.events += len(events)
        out.extend(events)

    def _decode_zstd(self, where: str, data, utf8_bytes, out: list) -> bytes | None:
        """One ``event_zstd`` value, never decompressed past ``MAX_EVENT_BYTES``: the
        decompressor trusts a frame's declared size over ``max_output_size``, so a frame
        that declares more (a damaged row) is reported rather than allocated."""
        if not isinstance(data, bytes):
            out.append(self.error(where, "cannot decode event_zstd: not a blob"))
            return None
        limit = utf8_bytes if isinstance(utf8_bytes, int) and 0 < utf8_bytes <= MAX_EVENT_BYTES \
            else MAX_EVENT_BYTES
        try:
            declared = zstandard.frame_content_size(data)
            if declared > MAX_EVENT_BYTES:
                out.append(self.error(where, f"cannot decode event_zstd: the frame declares "
                                             f"{declared} bytes, over the {MAX_EVENT_BYTES} limit"))
                return None
            return self._decompressor.decompress(data, max_output_size=limit)
        except zstandard.ZstdError as exc:
            out.append(self.error(where, f"cannot decode event_zstd: {exc}"))
            return None

    def checkpoint(self) -> dict:
        return {"seq": dict(self.seq_cursor), "rowid": self.row_watermark,
                "nodes": self.nodes_watermark, "windows": self.windows_watermark}

    def close(self) -> None:
        self._close()

"""An agent database's session index, ``session_nodes`` and ``session_windows``, as records.

Rows updated since the last poll (the first poll reads them all) become ``SessionInfo``
records; a row is given again only when what a record shows of it changed. The watermark
stays ``WATERMARK_LAG_MS`` behind the reader's clock (``advanced_watermark``): one row dated
in the far future would otherwise hide every later update of every session. Each row is
checked (``sqlite_ro.check_row``) before it is used: a bad one is reported once and skipped.
Columns a schema lacks are read as NULL.

``SessionIndexRows`` is a mixin of ``SqliteAgentSource``, sharing its state and its
``_open`` and ``_bad_row``.
"""

from __future__ import annotations

import sqlite3
import time

from monitor.events import SessionInfo
from monitor.sources.legacy_index import IndexEntry, decode_index_entry
from monitor.sources.sqlite_ro import BadRow, check_row
from monitor.sources.transcript import epoch_seconds, sane_count
from monitor.sources.transcript import text_or_none as _text

NODE_COLUMNS = ("session_key", "current_session_id", "entry_json", "status", "updated_at",
                "label", "display_name")
WINDOW_COLUMNS = ("session_id", "session_key", "status", "model", "model_provider", "updated_at")
#: What each column read must hold (``sqlite_ro.check_row``).
NODE_SPEC = (("session_key", "text"), ("current_session_id", "text"), ("entry_json", "text?"),
             ("status", "opt-text"), ("updated_at", "int?"), ("label", "opt-text"),
             ("display_name", "opt-text"))
WINDOW_SPEC = (("session_id", "text"), ("session_key", "text"), ("status", "opt-text"),
               ("model", "opt-text"), ("model_provider", "opt-text"), ("updated_at", "int?"))


_NO_ENTRY = IndexEntry()
#: How far behind the reader's clock the watermarks stay (``advanced_watermark``).
WATERMARK_LAG_MS = 5_000


def now_ms() -> int:
    """The reader's wall clock in milliseconds, the unit of ``updated_at``."""
    return int(time.time() * 1000)


def advanced_watermark(watermark: int, updated: int | None, now: int) -> int:
    """The watermark after a row updated at ``updated`` was read: moved up to that time,
    but never past ``now - WATERMARK_LAG_MS``. A row dated later is read again on every
    poll (and given once, while it stays the same) instead of hiding the rows updated
    before its date; the lag covers a row stamped before the poll and committed after it."""
    return max(watermark, min(updated or 0, now - WATERMARK_LAG_MS))


def resumed_watermark(saved: int, now: int) -> int:
    """A checkpointed watermark, or -1 (read the whole index) for one past ``now``: no
    reader saves one, and it would hide the updates made while the monitor was stopped."""
    return -1 if saved > now else saved


class SessionIndexRows:
    """Reads the index tables into session records."""

    def read_index(self) -> list:
        """The session records (and errors) not given yet, without reading transcripts."""
        out: list = []
        if self._conn is None and not self._open(out):
            return out
        try:
            self._read_sessions(self._conn, out)
        except sqlite3.DatabaseError as exc:
            out.append(self.error("query", f"database unreadable: {exc}", shared=True))
        return out

    def _select(self, table: str, wanted: tuple[str, ...]) -> str:
        present = self._columns.get(table, set())
        return ", ".join(c if c in present else f"NULL AS {c}" for c in wanted)

    def _updated_since(self, table: str) -> str:
        """The filter for rows updated since a watermark: an index search on ``updated_at``
        where the schema declares it NOT NULL (OpenClaw's does), else one that also reads
        rows without a time."""
        if "updated_at" in self._not_null.get(table, set()):
            return "updated_at >= ?"
        return "coalesce(updated_at, 0) >= ?"

    def _read_sessions(self, conn: sqlite3.Connection, out: list) -> None:
        """The changed rows of ``session_nodes``, then of ``session_windows``. A window that
        says what its node's record of this poll says (key, status, model, provider) gives
        no record: folded after it, it would change nothing (10,000 of them on a first
        scan)."""
        given: dict[str, tuple] = {}
        now = now_ms()
        if {"session_key", "current_session_id"} <= self._columns.get("session_nodes", set()):
            sql = (f"SELECT {self._rowid['session_nodes']}, "
                   f"{self._select('session_nodes', NODE_COLUMNS)} FROM session_nodes "
                   f"WHERE {self._updated_since('session_nodes')}")
            for raw in conn.execute(sql, (self.nodes_watermark,)):
                try:
                    row = check_row(raw[1:], NODE_SPEC)
                    record = self._session_from_node(row)
                except BadRow as exc:
                    self._bad_row(out, "session_nodes", raw[0], raw, str(exc))
                    continue
                except Exception as exc:  # one row must not stop the poll
                    self._bad_row(out, "session_nodes", raw[0], raw,
                                  f"internal: {type(exc).__name__}: {exc}")
                    continue
                if record is not None:
                    out.append(record)
                    given[record.session_id] = (record.key, record.status, record.model,
                                                record.provider)
                self.nodes_watermark = advanced_watermark(self.nodes_watermark, row[4], now)
        if {"session_id", "session_key"} <= self._columns.get("session_windows", set()):
            sql = (f"SELECT {self._rowid['session_windows']}, "
                   f"{self._select('session_windows', WINDOW_COLUMNS)} "
                   f"FROM session_windows WHERE {self._updated_since('session_windows')}")
            for raw in conn.execute(sql, (self.windows_watermark,)):
                try:
                    sid, key, status, model, provider, updated = check_row(raw[1:], WINDOW_SPEC)
                except BadRow as exc:
                    self._bad_row(out, "session_windows", raw[0], raw, str(exc))
                    continue
                version = ("w", status, model, updated)
                if self._node_versions.get("w:" + sid) == version:
                    continue
                if self.wants_session(sid):
                    self._node_versions["w:" + sid] = version
                    if given.get(sid) != (key, status, model, provider):
                        out.append(SessionInfo(key=key, session_id=sid,
                                               agent_id=self.agent_id,
                                               model=model, provider=provider,
                                               status=status,
                                               origin=f"{self.path}#window:{sid}"))
                self.windows_watermark = advanced_watermark(self.windows_watermark, updated,
                                                            now)

    def _session_from_node(self, row: tuple) -> SessionInfo | None:
        key, sid, entry_json, status, updated, label, display_name = row
        if not self.wants_session(sid):
            return None
        version = (sid, status, updated, len(entry_json or ""))
        if self._node_versions.get(key) == version:
            return None
        self._node_versions[key] = version
        try:
            entry = decode_index_entry(entry_json) if entry_json else None
        except ValueError:
            entry = None
        if entry is None:
            entry = _NO_ENTRY
        return SessionInfo(
            key=key, session_id=sid, agent_id=self.agent_id, model=_text(entry.model),
            provider=_text(entry.modelProvider), status=status or _text(entry.status),
            run_id=_text(entry.lastRunId), active_run_id=_text(entry.activeWriterRunId),
            aborted_last_run=entry.abortedLastRun is True,
            label=label or display_name,
            updated_at=epoch_seconds(updated / 1000.0) if updated else None,
            input_tokens=sane_count(entry.inputTokens),
            output_tokens=sane_count(entry.outputTokens),
            total_tokens=sane_count(entry.totalTokens),
            origin=f"{self.path}#node:{key}",
        )

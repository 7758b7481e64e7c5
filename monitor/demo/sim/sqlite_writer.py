"""Writes an OpenClaw agent database (schema v23 subset) the way the gateway does.

Events whose UTF-8 JSON is larger than :data:`ZSTD_THRESHOLD_BYTES` are stored
zstd-compressed (level 1, with content size and checksum, byte-identical to what the
gateway writes) in ``event_zstd`` with ``event_json`` NULL and a ``navigation_json``
that satisfies the table's CHECK. Every row carries ``event_utf8_bytes``.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import zstandard

from monitor.demo.sim.transcript import dumps, navigation

SCHEMA_PATH = Path(__file__).with_name("agent_schema_v23.sql")
# Real rows: the largest plain event_json seen is 1591 bytes, the smallest zstd row 1701.
ZSTD_THRESHOLD_BYTES = 1700

_UPSERT_NODE = """
INSERT INTO session_nodes (session_key, current_session_id, entry_json, entry_valid, updated_at,
  status, created_at, created_via, label, display_name, last_interaction_at, last_activity_at)
VALUES (?, ?, ?, 1, ?, ?, ?, 'operator', ?, ?, ?, ?)
ON CONFLICT(session_key) DO UPDATE SET
  current_session_id = excluded.current_session_id, entry_json = excluded.entry_json,
  updated_at = excluded.updated_at, status = excluded.status, label = excluded.label,
  display_name = excluded.display_name, last_interaction_at = excluded.last_interaction_at,
  last_activity_at = excluded.last_activity_at
"""

_UPSERT_WINDOW = """
INSERT INTO session_windows (session_id, session_key, previous_session_id, reason, created_at,
  updated_at, transcript_updated_at, transcript_observed_at, session_entry_provenance,
  started_at, ended_at, status, chat_type, model_provider, model, agent_harness_id, display_name)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, 'direct', ?, ?, 'openclaw', ?)
ON CONFLICT(session_id) DO UPDATE SET
  updated_at = excluded.updated_at, transcript_updated_at = excluded.transcript_updated_at,
  transcript_observed_at = excluded.transcript_observed_at, started_at = excluded.started_at,
  ended_at = excluded.ended_at, status = excluded.status,
  model_provider = excluded.model_provider, model = excluded.model,
  display_name = excluded.display_name
"""


def _now_ms() -> int:
    return int(time.time() * 1000)


class SqliteAgentWriter:
    """Creates (if missing) and appends to ``openclaw-agent.sqlite``.

    With ``autocommit`` (the default) every call commits, so a reader sees each event
    as soon as it is written; otherwise call :meth:`commit` to publish a batch.
    The connection may be used from several threads; calls are serialised.
    """

    def __init__(
        self,
        db_path: str | Path,
        *,
        autocommit: bool = True,
        zstd_threshold: int = ZSTD_THRESHOLD_BYTES,
    ) -> None:
        self.path = Path(db_path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.autocommit = autocommit
        self.zstd_threshold = zstd_threshold
        self._lock = threading.RLock()
        self._compressor = zstandard.ZstdCompressor(level=1, write_checksum=True)
        self._next_seq: dict[tuple[str, str], int] = {}
        self._conn = sqlite3.connect(self.path, timeout=10.0, check_same_thread=False)
        self._conn.execute("PRAGMA busy_timeout = 10000")
        self._conn.execute("PRAGMA journal_mode = WAL")
        self._conn.execute("PRAGMA synchronous = NORMAL")
        self._ensure_schema()

    def _ensure_schema(self) -> None:
        row = self._conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='transcript_events'"
        ).fetchone()
        if row is None:
            self._conn.executescript(SCHEMA_PATH.read_text())
            self._conn.commit()

    def upsert_session(
        self,
        key: str,
        session_id: str,
        entry: dict[str, Any],
        status: str | None,
        *,
        created_at: int | None = None,
        updated_at: int | None = None,
        started_at: int | None = None,
        ended_at: int | None = None,
        model: str | None = None,
        provider: str | None = None,
        previous_session_id: str | None = None,
        reason: str | None = None,
        label: str | None = None,
        display_name: str | None = None,
        last_interaction_at: int | None = None,
        transcript_updated_at: int | None = None,
    ) -> None:
        """Write the ``session_nodes`` row of ``key`` and the ``session_windows`` row of
        ``session_id`` (times in epoch milliseconds)."""
        updated = updated_at if updated_at is not None else _now_ms()
        created = created_at if created_at is not None else updated
        with self._lock:
            self._conn.execute(
                _UPSERT_NODE,
                (key, session_id, dumps(entry), updated, status, created, label, display_name,
                 last_interaction_at, None),
            )
            self._conn.execute(
                _UPSERT_WINDOW,
                (session_id, key, previous_session_id, reason, created, updated,
                 transcript_updated_at, transcript_updated_at, started_at, ended_at, status,
                 provider, model, display_name),
            )
            self._maybe_commit()

    def append_event(
        self, session_id: str, event: dict[str, Any], *, created_at: int | None = None
    ) -> int:
        """Append one transcript event; returns its ``seq`` (0-based per session)."""
        text = dumps(event)
        raw = text.encode()
        created = created_at if created_at is not None else _now_ms()
        with self._lock:
            seq = self._allocate_seq("transcript_events", session_id)
            if len(raw) > self.zstd_threshold:
                nav = dumps(navigation(event, len(raw)))
                self._conn.execute(
                    "INSERT INTO transcript_events (session_id, seq, event_json, created_at,"
                    " event_zstd, event_utf8_bytes, navigation_json)"
                    " VALUES (?, ?, NULL, ?, ?, ?, ?)",
                    (session_id, seq, created, self._compressor.compress(raw), len(raw), nav),
                )
            else:
                self._conn.execute(
                    "INSERT INTO transcript_events (session_id, seq, event_json, created_at,"
                    " event_utf8_bytes) VALUES (?, ?, ?, ?, ?)",
                    (session_id, seq, text, created, len(raw)),
                )
            self._maybe_commit()
        return seq

    def append_trajectory(
        self,
        session_id: str,
        run_id: str | None,
        event: dict[str, Any],
        *,
        created_at: int | None = None,
    ) -> int:
        """Append one ``trajectory_runtime_events`` row; returns its ``seq`` (0-based)."""
        created = created_at if created_at is not None else _now_ms()
        with self._lock:
            seq = self._allocate_seq("trajectory_runtime_events", session_id)
            self._conn.execute(
                "INSERT INTO trajectory_runtime_events (session_id, seq, run_id, event_json,"
                " created_at) VALUES (?, ?, ?, ?, ?)",
                (session_id, seq, run_id, dumps(event), created),
            )
            self._maybe_commit()
        return seq

    def _allocate_seq(self, table: str, session_id: str) -> int:
        slot = (table, session_id)
        seq = self._next_seq.get(slot)
        if seq is None:
            row = self._conn.execute(
                f"SELECT max(seq) FROM {table} WHERE session_id = ?", (session_id,)
            ).fetchone()
            seq = 0 if row[0] is None else row[0] + 1
        self._next_seq[slot] = seq + 1
        return seq

    def _maybe_commit(self) -> None:
        if self.autocommit:
            self._conn.commit()

    def prune(self, keep_rows: int) -> int:
        """Delete all but the newest ``keep_rows`` rows of each event table, as a long-lived
        store must; the freed pages are reused, so the file stops growing. Returns the rows
        deleted."""
        deleted = 0
        with self._lock:
            for table in ("transcript_events", "trajectory_runtime_events"):
                cursor = self._conn.execute(
                    f"DELETE FROM {table} WHERE rowid <= "
                    f"(SELECT max(rowid) FROM {table}) - ?", (keep_rows,))
                deleted += max(0, cursor.rowcount)
            self._conn.commit()
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return deleted

    def commit(self) -> None:
        with self._lock:
            self._conn.commit()

    def close(self) -> None:
        with self._lock:
            self._conn.commit()
            self._conn.close()

    def __enter__(self) -> SqliteAgentWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

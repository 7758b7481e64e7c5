"""Writes the pre-SQLite session layout: ``<sessionId>.jsonl`` transcripts plus ``sessions.json``.

Transcripts are appended one line per ``write()`` (optionally split in two flushed
chunks so readers meet partial lines). ``sessions.json`` is always replaced atomically
(temp file + ``os.replace``), so a reader never sees a half-written store.
"""

from __future__ import annotations

import json
import os
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO, Literal

from monitor.demo.sim.transcript import dumps

STORE_NAME = "sessions.json"


def archive_suffix(ts: float) -> str:
    """``2026-04-14T07-05-50.335Z``: ISO time with ``:`` replaced by ``-``, as in archive names."""
    dt = datetime.fromtimestamp(ts, tz=UTC)
    return dt.strftime("%Y-%m-%dT%H-%M-%S.") + f"{dt.microsecond // 1000:03d}Z"


class LegacyWriter:
    """Appends transcript lines and rewrites the session store of one agent."""

    def __init__(
        self,
        sessions_dir: str | Path,
        *,
        split_writes: bool = False,
        split_pause: float = 0.0,
    ) -> None:
        self.dir = Path(sessions_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.split_writes = split_writes
        self.split_pause = split_pause
        self._lock = threading.RLock()
        self._files: dict[str, BinaryIO] = {}
        self._lines: dict[str, int] = {}
        self._store: dict[str, dict[str, Any]] = self._load_store()
        self._tmp_counter = 0

    @property
    def store_path(self) -> Path:
        return self.dir / STORE_NAME

    def transcript_path(self, session_id: str) -> Path:
        return self.dir / f"{session_id}.jsonl"

    def _load_store(self) -> dict[str, dict[str, Any]]:
        try:
            data = json.loads(self.store_path.read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def append_event(self, session_id: str, event: dict[str, Any]) -> int:
        """Append one event as a JSON line; returns its 0-based line number."""
        line = (dumps(event) + "\n").encode()
        with self._lock:
            handle = self._files.get(session_id)
            if handle is None:
                path = self.transcript_path(session_id)
                if session_id not in self._lines:
                    self._lines[session_id] = _count_lines(path)
                handle = open(path, "ab")  # kept open for the session's life
                self._files[session_id] = handle
            if self.split_writes and len(line) > 1:
                middle = len(line) // 2
                handle.write(line[:middle])
                handle.flush()
                if self.split_pause:
                    time.sleep(self.split_pause)
                handle.write(line[middle:])
            else:
                handle.write(line)
            handle.flush()
            number = self._lines[session_id]
            self._lines[session_id] = number + 1
        return number

    def upsert_session(self, key: str, entry: dict[str, Any]) -> None:
        """Set ``sessions.json[key] = entry`` (``entry`` is a SessionEntry with ``sessionId``)."""
        with self._lock:
            self._store[key] = entry
            self._rewrite_store()

    def _rewrite_store(self) -> None:
        self._tmp_counter += 1
        tmp = self.dir / f".{STORE_NAME}.{os.getpid()}.{self._tmp_counter}.tmp"
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump(self._store, handle, indent=2, ensure_ascii=False)
        os.replace(tmp, self.store_path)

    def archive(
        self,
        session_id: str,
        kind: Literal["reset", "deleted"] = "reset",
        ts: float | None = None,
    ) -> Path:
        """Rename ``<id>.jsonl`` to ``<id>.jsonl.<kind>.<ISO time with dashes>``; return it."""
        with self._lock:
            handle = self._files.pop(session_id, None)
            if handle is not None:
                handle.close()
            self._lines.pop(session_id, None)
            source = self.transcript_path(session_id)
            target = source.with_name(f"{source.name}.{kind}.{archive_suffix(ts or time.time())}")
            os.replace(source, target)
        return target

    def close(self) -> None:
        with self._lock:
            for handle in self._files.values():
                handle.close()
            self._files.clear()

    def __enter__(self) -> LegacyWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _count_lines(path: Path) -> int:
    try:
        with open(path, "rb") as handle:
            return sum(1 for _ in handle)
    except FileNotFoundError:
        return 0

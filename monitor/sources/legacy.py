"""The legacy era: ``agents/<id>/sessions/*.jsonl`` plus ``sessions.json``.

``sessions.json`` is rewritten atomically by the gateway, so it is re-read
whenever its inode, size or mtime changes. Each transcript is followed with a
``FileFollower``; a ``SessionEntry.sessionFile`` elsewhere is followed too.
Archives (``*.jsonl.reset.*``, ``*.jsonl.deleted.*``) are history, never live
sessions: a transcript renamed to an archive while followed is drained through
its open descriptor, and archives are not opened as new sources.
"""

from __future__ import annotations

import json
import os

from monitor.events import SessionInfo, SourceNotice
from monitor.sources.base import Source
from monitor.sources.tail import FileFollower, FollowerState
from monitor.sources.transcript import UnknownEntry, parse_entry, parse_timestamp

ARCHIVE_MARKERS = (".jsonl.reset.", ".jsonl.deleted.")


def session_id_from_filename(name: str) -> str:
    stem = name[: -len(".jsonl")] if name.endswith(".jsonl") else name
    topic = stem.find("-topic-")
    return stem[:topic] if topic > 0 else stem


class LegacySessionsSource(Source):
    kind = "jsonl"

    def __init__(self, sessions_dir: str, agent_id: str, *, resume: dict | None = None,
                 include_archives: bool = False, only_files: set[str] | None = None) -> None:
        super().__init__(sessions_dir)
        self.only_files = {os.path.abspath(p) for p in only_files} if only_files else None
        self.agent_id = agent_id
        self.include_archives = include_archives
        self._index_identity: tuple | None = None
        self._index: dict[str, dict] = {}
        self._followers: dict[str, FileFollower] = {}
        self._resume = {p: FollowerState.from_json(s)
                        for p, s in (resume or {}).get("files", {}).items() if s}
        self._finished_archives: set[str] = set((resume or {}).get("archives", []))
        self._announced: dict[str, tuple] = {}

    @property
    def index_path(self) -> str:
        return os.path.join(self.path, "sessions.json")

    # ------------------------------------------------------------------- index

    def _read_index(self, out: list) -> None:
        try:
            st = os.stat(self.index_path)
        except FileNotFoundError:
            return
        identity = (st.st_ino, st.st_size, st.st_mtime_ns)
        if identity == self._index_identity:
            return
        self._index_identity = identity
        try:
            with open(self.index_path, "rb") as handle:
                data = json.loads(handle.read())
        except (OSError, ValueError) as exc:
            out.append(self.error("sessions.json", f"cannot read the session index: {exc}",
                                  path=self.index_path))
            return
        if not isinstance(data, dict):
            out.append(self.error("sessions.json", "session index is not a JSON object",
                                  path=self.index_path))
            return
        self._index = {k: v for k, v in data.items() if isinstance(v, dict)}
        for key, entry in self._index.items():
            record = self._session_info(key, entry)
            if record is None:
                continue
            version = (record.session_id, record.status, record.updated_at, record.total_tokens)
            if self._announced.get(key) != version:
                self._announced[key] = version
                out.append(record)

    def _session_info(self, key: str, entry: dict) -> SessionInfo | None:
        sid = entry.get("sessionId")
        if not isinstance(sid, str):
            return None

        def text(name: str) -> str | None:
            value = entry.get(name)
            return value if isinstance(value, str) else None

        def number(name: str) -> int | None:
            value = entry.get(name)
            return value if isinstance(value, int) and not isinstance(value, bool) else None

        return SessionInfo(
            key=key, session_id=sid, agent_id=self.agent_id, model=text("model"),
            provider=text("modelProvider"), status=text("status"), run_id=text("lastRunId"),
            active_run_id=text("activeWriterRunId"),
            aborted_last_run=entry.get("abortedLastRun") is True,
            label=text("label") or text("displayName"),
            updated_at=parse_timestamp(entry.get("updatedAt")),
            input_tokens=number("inputTokens"), output_tokens=number("outputTokens"),
            total_tokens=number("totalTokens"), origin=f"{self.index_path}#{key}",
        )

    # ------------------------------------------------------------- transcripts

    def _transcript_paths(self) -> list[str]:
        paths = []
        try:
            names = sorted(os.listdir(self.path))
        except OSError:
            return paths
        for name in names:
            if name.endswith(".jsonl"):
                paths.append(os.path.join(self.path, name))
            elif self.include_archives and any(m in name for m in ARCHIVE_MARKERS):
                paths.append(os.path.join(self.path, name))
        for entry in self._index.values():
            session_file = entry.get("sessionFile")
            if isinstance(session_file, str) and session_file:
                full = session_file if os.path.isabs(session_file) \
                    else os.path.join(self.path, session_file)
                if os.path.normpath(full) not in {os.path.normpath(p) for p in paths}:
                    paths.append(full)
        if self.only_files is not None:
            paths = [p for p in paths if os.path.abspath(p) in self.only_files]
        return paths

    def poll(self) -> list:
        out: list = []
        self._read_index(out)
        for path in self._transcript_paths():
            if path not in self._followers and path not in self._finished_archives:
                self._followers[path] = FileFollower(path, resume=self._resume.pop(path, None))
        for path, follower in list(self._followers.items()):
            sid = session_id_from_filename(os.path.basename(path).split(".jsonl")[0] + ".jsonl")
            for line in follower.poll():
                self._emit_line(sid, line, out)
            for notice in follower.take_notices():
                if notice.error:
                    out.append(self.error(notice.where or "-", notice.message, path=path))
                else:
                    out.append(SourceNotice(self.kind, path, notice.message))
            if any(m in path for m in ARCHIVE_MARKERS) and follower.pending_bytes == 0:
                follower.close()
                del self._followers[path]
                self._finished_archives.add(path)
        return out

    def _emit_line(self, sid: str, line, out: list) -> None:
        if not line.data.strip():
            return
        where = f"offset {line.offset}"
        try:
            text = line.data.decode("utf-8")
        except UnicodeDecodeError as exc:
            out.append(self.error(where, f"invalid UTF-8 at byte {exc.start}", path=line.path))
            return
        if "\x00" in text:
            out.append(self.error(where, "NUL byte in line", path=line.path))
            return
        try:
            entry = json.loads(text)
        except ValueError as exc:
            out.append(self.error(where, f"invalid JSON: {exc}", path=line.path))
            return
        origin = f"{line.path}@{line.offset}"
        try:
            events = parse_entry(entry, sid, origin)
        except UnknownEntry as exc:
            out.append(self.error(where, str(exc), path=line.path))
            return
        except ValueError as exc:
            out.append(self.error(where, f"unreadable entry: {exc}", path=line.path))
            return
        self.events += len(events)
        out.extend(events)

    def checkpoint(self) -> dict:
        files = {}
        for path, follower in self._followers.items():
            state = follower.state()
            files[path] = state.as_json() if state else None
        return {"files": files, "archives": sorted(self._finished_archives)}

    def close(self) -> None:
        for follower in self._followers.values():
            follower.close()
        self._followers.clear()

"""The ``exec`` tool calls OpenClaw recorded recently, each with the pid its result named.

They are what a transcript says about which session started an exec shell: the call's
``command`` (the text the shell runs) and the time it was recorded, and, for a backgrounded
exec, the pid and process session its result reported (``details.pid``,
``details.sessionId``). A call whose result came and named no pid ran to its end.

They are read from the newest events of each session active recently in the agent DBs
(``agents/<id>/agent/openclaw-agent.sqlite``, opened by ``openclaw_db``) and, in the legacy
era, from the end of each recently updated transcript (``agents/<id>/sessions/*.jsonl``,
found through ``sessions.json``), read only. A row or a line that is not a transcript entry
is skipped.

A call's id and command are kept as they are up to ``KEPT_TEXT_CHARS``, and a longer one as
its digest (``kept_text``): an event may hold 4 MiB, and 400 events of every recent session,
each a small ``event_zstd`` blob, held gigabytes. Evidence compares commands by ``kept_text``
of the shell's, so a long command still matches its own shell.
"""

from __future__ import annotations

import glob
import hashlib
import os
import sqlite3
import time
from collections.abc import Iterable
from contextlib import closing
from dataclasses import dataclass, replace

import zstandard

from monitor import untrusted_json
from monitor.act.openclaw_db import connect_read_only
from monitor.act.record_values import epoch_number, valid_pid
from monitor.sources.event_blob import EventBlobError, decompress_event
from monitor.sources.legacy_index import MAX_INDEX_BYTES
from monitor.sources.regular import open_regular_file, read_bounded
from monitor.sources.transcript import parse_timestamp
from monitor.sources.transcript_names import nameable, session_file_path

RECENT_SECONDS = 6 * 3600
EVENTS_PER_SESSION = 400
TRANSCRIPT_TAIL_BYTES = 1 << 20  # legacy era: how much of a transcript's end is read
BUSY_ATTEMPTS = 3
#: Longest id or command kept as its text (``kept_text``): an exec shell's whole argv word
#: is at most 128 KiB (Linux's ``MAX_ARG_STRLEN``), and the commands that run fit in it.
KEPT_TEXT_CHARS = 128 << 10


def kept_text(text: str) -> str:
    """``text`` as a call's id or command is kept: itself up to ``KEPT_TEXT_CHARS``, else
    ``"\\0sha256:"`` and its digest (no argv word holds a NUL, so no command read from a
    process is taken for one)."""
    if len(text) <= KEPT_TEXT_CHARS:
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return f"\0sha256:{digest}"


@dataclass(frozen=True)
class ExecCall:
    """One ``exec`` tool call in a transcript, with the pid its result named (if any)."""

    session_key: str
    call_id: str
    command: str
    ts: float
    result_pid: int | None = None
    process_session: str | None = None
    result_ts: float | None = None     # when the result naming ``result_pid`` was written
    #: Its result came and named no pid: the command ran to its end (in the foreground), so
    #: no shell running now is this call's.
    finished: bool = False


def recent_exec_calls(state_dir: str | None, *, now: float | None = None,
                      recent_seconds: float = RECENT_SECONDS,
                      per_session: int = EVENTS_PER_SESSION) -> list[ExecCall]:
    """``exec`` calls of every session active within ``recent_seconds`` (newest events)."""
    since_ms = int(((now or time.time()) - recent_seconds) * 1000)
    calls: list[ExecCall] = []
    for sessions_dir in legacy_session_dirs(state_dir):
        calls.extend(_exec_calls_in_legacy(sessions_dir, since_ms))
    for path in agent_dbs(state_dir):
        for attempt in range(BUSY_ATTEMPTS):
            try:
                calls.extend(_exec_calls_in_db(path, since_ms, per_session))
                break
            except sqlite3.OperationalError as exc:
                text = str(exc).lower()
                if ("locked" not in text and "busy" not in text) or attempt + 1 == BUSY_ATTEMPTS:
                    break
                time.sleep(0.2)
            except sqlite3.Error:
                break
    return calls


def agent_dbs(state_dir: str | None) -> list[str]:
    if not state_dir:
        return []
    return sorted(glob.glob(os.path.join(state_dir, "agents", "*", "agent",
                                         "openclaw-agent.sqlite")))


def _exec_calls_in_db(path: str, since_ms: int, per_session: int) -> list[ExecCall]:
    calls: list[ExecCall] = []
    with closing(connect_read_only(path)) as conn:
        sessions = conn.execute(
            "SELECT session_key, current_session_id FROM session_nodes "
            "WHERE updated_at >= ? OR status = 'running'", (since_ms,)).fetchall()
        for key, session_id in sessions:
            if not isinstance(key, str) or not isinstance(session_id, str):
                continue        # a malformed row (the tables are not STRICT): no evidence
            rows = conn.execute(
                "SELECT event_json, event_zstd, created_at FROM transcript_events "
                "WHERE session_id = ? ORDER BY seq DESC LIMIT ?",
                (session_id, per_session)).fetchall()
            decompressor = zstandard.ZstdDecompressor()
            try:
                calls.extend(exec_calls_in(key, ((_decode(event_json, event_zstd, decompressor),
                                                  (epoch_number(created_at) or 0.0) / 1000.0)
                                                 for event_json, event_zstd, created_at
                                                 in reversed(rows))))
            except Exception:  # a row nothing above foresaw: that session gives no evidence
                continue
    return calls


def _decode(event_json, event_zstd, decompressor) -> dict | None:
    """One transcript row's entry, or None for a row that is not one: the tables are not
    STRICT, so either column may hold any type."""
    if event_json is None and isinstance(event_zstd, bytes):
        try:
            event_json = decompress_event(decompressor, event_zstd, None)
        except EventBlobError:
            return None
    if not isinstance(event_json, (str, bytes)):
        return None
    try:
        entry = untrusted_json.loads(event_json)
    except (ValueError, UnicodeDecodeError, TypeError):
        return None
    return entry if isinstance(entry, dict) else None


def legacy_session_dirs(state_dir: str | None) -> list[str]:
    if not state_dir:
        return []
    return sorted(os.path.dirname(path) for path in glob.glob(
        os.path.join(state_dir, "agents", "*", "sessions", "sessions.json")))


def _exec_calls_in_legacy(sessions_dir: str, since_ms: int) -> list[ExecCall]:
    """The exec calls at the end of each transcript that ``sessions.json`` says was updated
    since ``since_ms``."""
    try:      # bounded as the reader bounds it: a kill must not hold a sparse gigabyte
        index = untrusted_json.loads(read_bounded(os.path.join(sessions_dir, "sessions.json"),
                                                  MAX_INDEX_BYTES))
    except (OSError, ValueError):
        return []
    if not isinstance(index, dict):
        return []
    calls: list[ExecCall] = []
    for key, entry in index.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("sessionId"), str):
            continue
        updated = parse_timestamp(entry.get("updatedAt"))
        if updated is None or updated * 1000 < since_ms:
            continue
        path = session_file_path(sessions_dir, entry) \
            or _named_transcript(sessions_dir, entry["sessionId"])
        if path is not None:
            calls.extend(exec_calls_in(str(key), _tail_entries(path)))
    return calls


def _named_transcript(sessions_dir: str, session_id: str) -> str | None:
    """``<session id>.jsonl`` in ``sessions_dir``; None for an id that is no plain file name
    (a separator, ``..``, a NUL or a lone surrogate): it would name another session's
    transcript, or none."""
    if session_id in ("", ".", "..") or "/" in session_id or "\\" in session_id \
            or not nameable(session_id):
        return None
    return os.path.join(sessions_dir, f"{session_id}.jsonl")


def _tail_entries(path: str) -> list[tuple[dict | None, float]]:
    """``(entry, seconds)`` for each complete line in the last ``TRANSCRIPT_TAIL_BYTES``."""
    try:
        with open_regular_file(path) as handle:
            size = handle.seek(0, os.SEEK_END)
            start = max(0, size - TRANSCRIPT_TAIL_BYTES)
            handle.seek(start)
            data = handle.read(size - start)
    except (OSError, ValueError):       # ValueError: a path no file can have (a NUL)
        return []
    lines = data.split(b"\n")
    if start > 0:
        lines = lines[1:]  # the first is the end of a line that began before the window
    entries = []
    for line in lines[:-1]:  # the last is empty or a line still being written
        try:
            entry = untrusted_json.loads(line)
        except (ValueError, UnicodeDecodeError):
            continue
        if isinstance(entry, dict):
            entries.append((entry, parse_timestamp(entry.get("timestamp")) or 0.0))
    return entries


def exec_calls_in(key: str, entries: Iterable[tuple[dict | None, float]]) -> list[ExecCall]:
    """The exec calls among ``entries`` (``(transcript entry, seconds)``, oldest first), each
    with the pid its result named."""
    calls: dict[str, ExecCall] = {}
    for entry, ts in entries:
        message = entry.get("message") if entry and entry.get("type") == "message" else None
        if not isinstance(message, dict):
            continue
        if message.get("role") == "assistant":
            content = message.get("content")
            for part in content if isinstance(content, list) else []:
                if (isinstance(part, dict) and part.get("type") == "toolCall"
                        and part.get("name") == "exec"
                        and isinstance(part.get("arguments"), dict)
                        and isinstance(part["arguments"].get("command"), str)):
                    call_id = kept_text(str(part.get("id")))
                    calls[call_id] = ExecCall(key, call_id,
                                              kept_text(part["arguments"]["command"]), ts)
        elif message.get("role") == "toolResult" and isinstance(message.get("toolCallId"), str) \
                and kept_text(message["toolCallId"]) in calls:
            details = message.get("details") if isinstance(message.get("details"), dict) else {}
            pid = valid_pid(details.get("pid"))
            call = calls[kept_text(message["toolCallId"])]
            if pid is not None:
                process_session = details.get("sessionId")
                calls[call.call_id] = ExecCall(
                    call.session_key, call.call_id, call.command, call.ts, pid,
                    kept_text(process_session) if isinstance(process_session, str) else None,
                    ts)
            else:
                calls[call.call_id] = replace(call, finished=True)
    return list(calls.values())

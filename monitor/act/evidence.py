"""Which session an exec shell belongs to, from what OpenClaw recorded (all read-only).

An exec shell's environment names no session, so ownership is proven from records:

1. the gateway's ``agent`` tool events (``partialResult.details.pid``), seen live;
2. transcript tool results that name the pid (backgrounded execs: ``details.pid``);
3. the command text: the shell runs exactly the ``exec`` call's ``command``, started just
   after that call was recorded; it counts only when no other session made the same call
   at about the same time;
4. the global DB's ``task_runs`` rows of running background execs
   (``requester_session_key``, ``task`` = the command, ``started_at``).

Agent DBs (``agents/<id>/agent/openclaw-agent.sqlite``) and the global DB
(``state/openclaw.sqlite``) are opened with ``mode=ro``. In the legacy era the exec calls
come from the end of each recently updated transcript (``agents/<id>/sessions/*.jsonl``,
found through ``sessions.json``), read only.
"""

from __future__ import annotations

import glob
import json
import os
import sqlite3
import time
from collections.abc import Iterable
from contextlib import closing
from dataclasses import dataclass
from urllib.parse import quote

import zstandard

from monitor.act.processes import ExecShell
from monitor.act.runs import ExecPid
from monitor.sources.legacy import session_file_path
from monitor.sources.transcript import parse_timestamp

RECENT_SECONDS = 6 * 3600
EVENTS_PER_SESSION = 400
TRANSCRIPT_TAIL_BYTES = 1 << 20  # legacy era: how much of a transcript's end is read
COMMAND_WINDOW = (-30.0, 5.0)   # call time relative to the shell's start, seconds
AMBIGUITY_SECONDS = 1.0
BUSY_ATTEMPTS = 3


@dataclass(frozen=True)
class ExecCall:
    """One ``exec`` tool call in a transcript, with the pid its result named (if any)."""

    session_key: str
    call_id: str
    command: str
    ts: float
    result_pid: int | None = None
    process_session: str | None = None


@dataclass(frozen=True)
class BackgroundTask:
    """A ``task_runs`` row of a background exec that is still ``running``."""

    session_key: str
    process_session: str | None
    command: str
    started_at: float | None


@dataclass(frozen=True)
class Attribution:
    session_key: str
    evidence: str


def _connect_ro(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(f"file:{quote(path)}?mode=ro", uri=True, timeout=2.0)
    conn.execute("PRAGMA query_only=1")
    return conn


def _decode(event_json, event_zstd, decompressor) -> dict | None:
    if event_json is None and event_zstd is not None:
        try:
            event_json = decompressor.decompress(event_zstd, max_output_size=16 * 1024 * 1024)
        except zstandard.ZstdError:
            return None
    try:
        entry = json.loads(event_json) if event_json is not None else None
    except (ValueError, UnicodeDecodeError):
        return None
    return entry if isinstance(entry, dict) else None


def agent_dbs(state_dir: str | None) -> list[str]:
    if not state_dir:
        return []
    return sorted(glob.glob(os.path.join(state_dir, "agents", "*", "agent",
                                         "openclaw-agent.sqlite")))


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


def _exec_calls_in_db(path: str, since_ms: int, per_session: int) -> list[ExecCall]:
    calls: list[ExecCall] = []
    with closing(_connect_ro(path)) as conn:
        sessions = conn.execute(
            "SELECT session_key, current_session_id FROM session_nodes "
            "WHERE updated_at >= ? OR status = 'running'", (since_ms,)).fetchall()
        for key, session_id in sessions:
            rows = conn.execute(
                "SELECT event_json, event_zstd, created_at FROM transcript_events "
                "WHERE session_id = ? ORDER BY seq DESC LIMIT ?",
                (session_id, per_session)).fetchall()
            decompressor = zstandard.ZstdDecompressor()
            calls.extend(_calls_in(key, ((_decode(event_json, event_zstd, decompressor),
                                          (created_at or 0) / 1000.0)
                                         for event_json, event_zstd, created_at
                                         in reversed(rows))))
    return calls


def legacy_session_dirs(state_dir: str | None) -> list[str]:
    if not state_dir:
        return []
    return sorted(os.path.dirname(path) for path in glob.glob(
        os.path.join(state_dir, "agents", "*", "sessions", "sessions.json")))


def _exec_calls_in_legacy(sessions_dir: str, since_ms: int) -> list[ExecCall]:
    """The exec calls at the end of each transcript that ``sessions.json`` says was updated
    since ``since_ms``."""
    try:
        with open(os.path.join(sessions_dir, "sessions.json"), "rb") as handle:
            index = json.load(handle)
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
            or os.path.join(sessions_dir, f"{entry['sessionId']}.jsonl")
        calls.extend(_calls_in(str(key), _tail_entries(path)))
    return calls


def _tail_entries(path: str) -> list[tuple[dict | None, float]]:
    """``(entry, seconds)`` for each complete line in the last ``TRANSCRIPT_TAIL_BYTES``."""
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            start = max(0, size - TRANSCRIPT_TAIL_BYTES)
            handle.seek(start)
            data = handle.read(size - start)
    except OSError:
        return []
    lines = data.split(b"\n")
    if start > 0:
        lines = lines[1:]  # the first is the end of a line that began before the window
    entries = []
    for line in lines[:-1]:  # the last is empty or a line still being written
        try:
            entry = json.loads(line)
        except (ValueError, UnicodeDecodeError):
            continue
        if isinstance(entry, dict):
            entries.append((entry, parse_timestamp(entry.get("timestamp")) or 0.0))
    return entries


def _calls_in(key: str, entries: Iterable[tuple[dict | None, float]]) -> list[ExecCall]:
    """The exec calls among ``entries`` (``(transcript entry, seconds)``, oldest first), each
    with the pid its result named."""
    calls: dict[str, ExecCall] = {}
    for entry, ts in entries:
        message = entry.get("message") if entry and entry.get("type") == "message" else None
        if not isinstance(message, dict):
            continue
        if message.get("role") == "assistant":
            for part in message.get("content") or []:
                if (isinstance(part, dict) and part.get("type") == "toolCall"
                        and part.get("name") == "exec"
                        and isinstance(part.get("arguments"), dict)
                        and isinstance(part["arguments"].get("command"), str)):
                    calls[str(part.get("id"))] = ExecCall(key, str(part.get("id")),
                                                          part["arguments"]["command"], ts)
        elif message.get("role") == "toolResult" and message.get("toolCallId") in calls:
            details = message.get("details") if isinstance(message.get("details"), dict) else {}
            pid = details.get("pid")
            if isinstance(pid, int) and not isinstance(pid, bool):
                call = calls[message["toolCallId"]]
                calls[call.call_id] = ExecCall(call.session_key, call.call_id, call.command,
                                               call.ts, pid, details.get("sessionId"))
    return list(calls.values())


def running_background_execs(state_dir: str | None) -> list[BackgroundTask]:
    """Background execs the global DB still lists as ``running``."""
    if not state_dir:
        return []
    path = os.path.join(state_dir, "state", "openclaw.sqlite")
    if not os.path.exists(path):
        return []
    try:
        with closing(_connect_ro(path)) as conn:
            rows = conn.execute(
                "SELECT requester_session_key, run_id, task, started_at, created_at "
                "FROM task_runs WHERE task_kind = 'exec' AND status = 'running'").fetchall()
    except sqlite3.Error:
        return []
    tasks = []
    for key, run_id, task, started_at, created_at in rows:
        if not key:
            continue
        process_session = run_id[5:] if isinstance(run_id, str) and run_id.startswith(
            "exec:") else None
        started = started_at or created_at
        tasks.append(BackgroundTask(key, process_session, task or "",
                                    started / 1000.0 if started else None))
    return tasks


def attribute(shell: ExecShell, *, reported: Iterable[ExecPid] = (),
              calls: Iterable[ExecCall] = (), tasks: Iterable[BackgroundTask] = ()
              ) -> Attribution | None:
    """The session that owns ``shell``, with the evidence; None when it cannot be proven."""
    for entry in reported:
        if entry.pid == shell.pid and (entry.started_at is None
                                       or abs(entry.started_at - shell.create_time) < 5):
            return Attribution(entry.session_key,
                               f"gateway tool event: pid {shell.pid} runs tool call "
                               f"{entry.tool_call_id} of run {entry.run_id}")
    calls = list(calls)
    for call in calls:
        if call.result_pid == shell.pid and shell.create_time - 600 <= call.ts \
                <= shell.create_time + 10:
            return Attribution(call.session_key,
                               f"transcript: exec call {call.call_id} reports pid {shell.pid}"
                               + (f" (process session {call.process_session})"
                                  if call.process_session else ""))
    low, high = COMMAND_WINDOW
    matches = sorted(((abs(call.ts - shell.create_time), call) for call in calls
                      if call.command == shell.command
                      and low <= call.ts - shell.create_time <= high), key=lambda m: m[0])
    if matches and not _ambiguous(matches):
        gap, call = matches[0]
        return Attribution(call.session_key,
                           f"command text matches exec call {call.call_id} made {gap:.1f} s "
                           "from the shell's start")
    task_matches = sorted(((abs(task.started_at - shell.create_time), task) for task in tasks
                           if task.command == shell.command and task.started_at is not None
                           and abs(task.started_at - shell.create_time) < 5),
                          key=lambda m: m[0])
    if task_matches and not _ambiguous(task_matches):
        gap, task = task_matches[0]
        return Attribution(task.session_key,
                           f"task_runs: running background exec {task.process_session or '?'}"
                           f" with this command, started {gap:.1f} s from the shell")
    return None


def _ambiguous(matches: list[tuple[float, object]]) -> bool:
    """Two sessions made the same call about as close to the shell's start."""
    best_gap, best = matches[0]
    return any(other.session_key != best.session_key and gap - best_gap < AMBIGUITY_SECONDS
               for gap, other in matches[1:])

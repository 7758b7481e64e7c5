"""Which session an exec shell belongs to, from what OpenClaw recorded (all read-only).

An exec shell's environment names no session, so ownership is proven from records, of
four kinds:

1. the gateway's ``agent`` tool events (``partialResult.details.pid``), seen live; they
   count for a process started no later than the event (and at its ``startedAt``, if sent);
2. transcript tool results that name the pid (backgrounded execs: ``details.pid``); they
   count only for a process started inside that call's window: after the call was made
   (less ``CLOCK_SLACK``) and before its result was written, so a process that had the pid
   earlier or later (a reused PID) is not named by it;
3. the command text: the shell runs exactly the ``exec`` call's ``command``, started within
   ``COMMAND_WINDOW`` of that call being recorded, and the call has no result yet that
   names no pid (that command ran to its end); when another session made the same call
   within that window too, it names both (however much closer one of them is);
4. the global DB's ``task_runs`` rows of running background execs
   (``requester_session_key``, ``task`` = the command, ``started_at``), the same way.

A shell is a session's only when every piece of evidence that names it names that session
(``judge``). When two sessions are named (by one kind or by two), the shell is ambiguous:
the reasons are reported and nothing is killed. (The one allowance: identical calls of two
sessions within the window name both as possible owners; a pid named by one of them
then settles it.) Malformed values (a pid that is not a
plausible positive integer, a timestamp that is not a number, a row whose columns hold
values of the wrong type, which tables that are not STRICT allow) are skipped, never trusted.

Agent DBs (``agents/<id>/agent/openclaw-agent.sqlite``) and the global DB
(``state/openclaw.sqlite``) are opened with ``mode=ro`` (``immutable=1`` when a WAL
database has no ``-wal``: nothing is created beside it). In the legacy era the exec calls
come from the end of each recently updated transcript (``agents/<id>/sessions/*.jsonl``,
found through ``sessions.json``), read only.
"""

from __future__ import annotations

import glob
import os
import sqlite3
import time
from collections.abc import Iterable
from contextlib import closing
from dataclasses import dataclass, replace

import zstandard

from monitor import untrusted_json
from monitor.act.processes import ExecShell
from monitor.act.runs import ExecPid
from monitor.sources.event_blob import EventBlobError, decompress_event
from monitor.sources.regular import check_sqlite_files, open_regular_file
from monitor.sources.sqlite_guard import guard, refuse_other_schema
from monitor.sources.sqlite_open import MAX_ROW_BYTES
from monitor.sources.sqlite_ro import read_only_uri
from monitor.sources.transcript import parse_timestamp
from monitor.sources.transcript_names import session_file_path

RECENT_SECONDS = 6 * 3600
EVENTS_PER_SESSION = 400
TRANSCRIPT_TAIL_BYTES = 1 << 20  # legacy era: how much of a transcript's end is read
COMMAND_WINDOW = (-30.0, 5.0)   # call time relative to the shell's start, seconds
CLOCK_SLACK = 5.0      # a call's row may be written after its shell started (as in
                       # COMMAND_WINDOW); a create time is boot time + ticks (±1 s)
RESULT_SLACK = 1.0     # the result of a call is written after its shell started
PID_MAX = 1 << 22      # Linux's highest possible pid_max
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
    result_ts: float | None = None     # when the result naming ``result_pid`` was written
    #: Its result came and named no pid: the command ran to its end (in the foreground), so
    #: no shell running now is this call's.
    finished: bool = False


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


@dataclass(frozen=True)
class Claim:
    """One piece of evidence naming a session as the owner of a shell. ``tied``: a command
    match that another session's identical call matches about as well (it names each of
    them as a possible owner, none for certain)."""

    kind: str          # "gateway tool event" | "transcript pid" | "command text" | "task_runs"
    session_key: str
    reason: str
    tied: bool = False


@dataclass(frozen=True)
class Verdict:
    """What the evidence says about one shell (see ``judge``): ``owner`` when every claim
    names that session, ``ambiguous`` when claims name different sessions (``sessions``
    lists every session named, ``reasons`` every claim)."""

    claims: tuple[Claim, ...] = ()

    @property
    def sessions(self) -> tuple[str, ...]:
        return tuple(sorted({claim.session_key for claim in self.claims}))

    @property
    def owner(self) -> str | None:
        certain = {claim.session_key for claim in self.claims if not claim.tied}
        if len(certain) != 1:
            return None
        (owner,) = certain
        ties: dict[str, set[str]] = {}
        for claim in self.claims:
            if claim.tied:
                ties.setdefault(claim.kind, set()).add(claim.session_key)
        return owner if all(owner in named for named in ties.values()) else None

    @property
    def ambiguous(self) -> bool:
        return bool(self.claims) and self.owner is None

    @property
    def reasons(self) -> tuple[str, ...]:
        return tuple(f"{claim.kind} names {claim.session_key}"
                     + (" (tied with another session's identical call)" if claim.tied else "")
                     + f": {claim.reason}" for claim in self.claims)

    def names(self, session_key: str) -> bool:
        return session_key in self.sessions

    def attribution(self) -> Attribution | None:
        owner = self.owner
        if owner is None:
            return None
        return Attribution(owner, "; ".join(claim.reason for claim in self.claims))


def valid_pid(value) -> int | None:
    """``value`` when it is a plausible pid of an exec shell (an int above 1, not a bool,
    at most ``PID_MAX``), else None."""
    if isinstance(value, int) and not isinstance(value, bool) and 1 < value <= PID_MAX:
        return value
    return None


def _seconds(value) -> float | None:
    """A finite, positive number (seconds or milliseconds since the epoch), else None."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) \
            and 0 < value < 1e15:
        return float(value)
    return None


def _connect_ro(path: str) -> sqlite3.Connection:
    try:
        check_sqlite_files(path)     # a FIFO or a device would block or never end
    except OSError as exc:
        raise sqlite3.OperationalError(f"unable to open database file: {exc}") from None
    try:
        uri, _ = read_only_uri(path)  # never creates a -wal/-shm beside it (see sqlite_ro)
    except OSError as exc:
        raise sqlite3.OperationalError(f"unable to open database file: {exc}") from None
    conn = guard(sqlite3.connect(uri, uri=True, timeout=2.0), MAX_ROW_BYTES)
    try:
        conn.execute("PRAGMA query_only=1")
        refuse_other_schema(conn, ("session_nodes", "transcript_events"))
    except sqlite3.Error:
        conn.close()
        raise
    return conn


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
            if not isinstance(key, str) or not isinstance(session_id, str):
                continue        # a malformed row (the tables are not STRICT): no evidence
            rows = conn.execute(
                "SELECT event_json, event_zstd, created_at FROM transcript_events "
                "WHERE session_id = ? ORDER BY seq DESC LIMIT ?",
                (session_id, per_session)).fetchall()
            decompressor = zstandard.ZstdDecompressor()
            try:
                calls.extend(_calls_in(key, ((_decode(event_json, event_zstd, decompressor),
                                              (_seconds(created_at) or 0.0) / 1000.0)
                                             for event_json, event_zstd, created_at
                                             in reversed(rows))))
            except Exception:  # a row nothing above foresaw: that session gives no evidence
                continue
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
        with open_regular_file(os.path.join(sessions_dir, "sessions.json")) as handle:
            index = untrusted_json.load(handle)
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
        with open_regular_file(path) as handle:
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
            entry = untrusted_json.loads(line)
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
            content = message.get("content")
            for part in content if isinstance(content, list) else []:
                if (isinstance(part, dict) and part.get("type") == "toolCall"
                        and part.get("name") == "exec"
                        and isinstance(part.get("arguments"), dict)
                        and isinstance(part["arguments"].get("command"), str)):
                    calls[str(part.get("id"))] = ExecCall(key, str(part.get("id")),
                                                          part["arguments"]["command"], ts)
        elif message.get("role") == "toolResult" and isinstance(message.get("toolCallId"), str) \
                and message["toolCallId"] in calls:
            details = message.get("details") if isinstance(message.get("details"), dict) else {}
            pid = valid_pid(details.get("pid"))
            call = calls[message["toolCallId"]]
            if pid is not None:
                process_session = details.get("sessionId")
                calls[call.call_id] = ExecCall(
                    call.session_key, call.call_id, call.command, call.ts, pid,
                    process_session if isinstance(process_session, str) else None, ts)
            else:
                calls[call.call_id] = replace(call, finished=True)
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
        if not key or not isinstance(key, str):
            continue        # a malformed row (the table is not STRICT): ignored
        process_session = run_id[5:] if isinstance(run_id, str) and run_id.startswith(
            "exec:") else None
        started = _seconds(started_at) or _seconds(created_at)
        tasks.append(BackgroundTask(key, process_session, task if isinstance(task, str) else "",
                                    started / 1000.0 if started else None))
    return tasks


def attribute(shell: ExecShell, *, reported: Iterable[ExecPid] = (),
              calls: Iterable[ExecCall] = (), tasks: Iterable[BackgroundTask] = ()
              ) -> Attribution | None:
    """The session that owns ``shell``, with the evidence; None when it cannot be proven
    (no evidence, or evidence naming different sessions: see ``judge``)."""
    return judge(shell, reported=reported, calls=calls, tasks=tasks).attribution()


def judge(shell: ExecShell, *, reported: Iterable[ExecPid] = (),
          calls: Iterable[ExecCall] = (), tasks: Iterable[BackgroundTask] = ()) -> Verdict:
    """Every piece of evidence that names ``shell``, of every kind (see the module
    docstring); the shell is a session's only when all of them name that session."""
    if valid_pid(shell.pid) is None:
        return Verdict()
    start = shell.create_time
    claims: list[Claim] = []
    for entry in reported:
        if entry.pid != shell.pid:
            continue
        if entry.started_at is not None and abs(entry.started_at - start) >= 5:
            continue                       # the event was about an older process
        seen = _seconds(entry.last_output_at)
        if seen is not None and start > seen + CLOCK_SLACK:
            continue                       # this process started after the event: reused
        claims.append(Claim("gateway tool event", entry.session_key,
                            f"gateway tool event: pid {shell.pid} runs tool call "
                            f"{entry.tool_call_id} of run {entry.run_id}"))
    calls = list(calls)
    for call in calls:
        if call.result_pid != shell.pid:
            continue
        made, answered = _seconds(call.ts), _seconds(call.result_ts)
        if made is None or answered is None or answered < made:
            continue
        if made - CLOCK_SLACK <= start <= answered + RESULT_SLACK:
            claims.append(Claim(
                "transcript pid", call.session_key,
                f"transcript: exec call {call.call_id} reports pid {shell.pid}"
                + (f" (process session {call.process_session})" if call.process_session
                   else "")))
    low, high = COMMAND_WINDOW
    matches = sorted(((abs(call.ts - start), call) for call in calls
                      if call.command == shell.command and not call.finished
                      and low <= call.ts - start <= high), key=lambda m: m[0])
    closest = _closest(matches)
    for gap, call in closest:
        claims.append(Claim("command text", call.session_key,
                            f"command text matches exec call {call.call_id} made {gap:.1f} s "
                            "from the shell's start", tied=len(closest) > 1))
    task_matches = sorted(((abs(task.started_at - start), task) for task in tasks
                           if task.command == shell.command and task.started_at is not None
                           and abs(task.started_at - start) < 5),
                          key=lambda m: m[0])
    closest = _closest(task_matches)
    for gap, task in closest:
        claims.append(Claim("task_runs", task.session_key,
                            f"task_runs: running background exec "
                            f"{task.process_session or '?'} with this command, started "
                            f"{gap:.1f} s from the shell", tied=len(closest) > 1))
    return Verdict(tuple(claims))


def _closest(matches: list[tuple[float, object]]) -> list[tuple[float, object]]:
    """The closest match of each session that has one (``matches`` sorted by gap): a match
    farther off does not rule its session out, since how long OpenClaw takes from recording
    a call to starting its shell varies, so two sessions' identical calls in the window name
    both."""
    named: set[str] = set()
    closest = []
    for gap, match in matches:
        if match.session_key not in named:
            named.add(match.session_key)
            closest.append((gap, match))
    return closest

"""Which session an exec shell belongs to: real agent and global DBs, each kind of evidence."""

from __future__ import annotations

import dataclasses
import sqlite3
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from monitor.act import evidence as ev
from monitor.act import exec_calls
from monitor.act.background_execs import running_background_execs
from monitor.act.exec_calls import ExecCall, exec_calls_in, recent_exec_calls
from monitor.act.processes import ExecShell
from monitor.act.runs import ExecPid
from monitor.demo.sim.legacy_writer import LegacyWriter
from monitor.demo.sim.sqlite_writer import SqliteAgentWriter

TASK_RUNS = """CREATE TABLE task_runs (
  task_id TEXT NOT NULL PRIMARY KEY, runtime TEXT NOT NULL, task_kind TEXT, source_id TEXT,
  requester_session_key TEXT, owner_key TEXT NOT NULL, scope_kind TEXT NOT NULL,
  child_session_key TEXT, parent_flow_id TEXT, parent_task_id TEXT, agent_id TEXT,
  requester_agent_id TEXT, run_id TEXT, execution_owner_host TEXT, execution_owner_pid INTEGER,
  execution_owner_start_identity INTEGER, label TEXT, task TEXT NOT NULL, status TEXT NOT NULL,
  delivery_status TEXT NOT NULL, notify_policy TEXT NOT NULL, created_at INTEGER NOT NULL,
  started_at INTEGER, ended_at INTEGER, last_event_at INTEGER, cleanup_after INTEGER,
  tool_use_count INTEGER, last_tool_name TEXT, error TEXT, progress_summary TEXT,
  terminal_summary TEXT, terminal_outcome TEXT, detail_json TEXT) STRICT"""


def agent_db(state_dir: Path) -> SqliteAgentWriter:
    return SqliteAgentWriter(state_dir / "agents" / "main" / "agent" / "openclaw-agent.sqlite")


def add_exec(writer: SqliteAgentWriter, key: str, call_id: str, command: str, at: float,
             *, pid: int | None = None, process_session: str | None = None) -> None:
    """One session (key → ``sid-<key>``) with an exec call at ``at`` and, with ``pid``, a
    'still running' result naming it."""
    sid = f"sid-{key}"
    writer.upsert_session(key, sid, {"sessionId": sid}, "running", updated_at=int(at * 1000))
    writer.append_event(sid, {"type": "message", "message": {
        "role": "assistant", "content": [{"type": "toolCall", "id": call_id, "name": "exec",
                                          "arguments": {"command": command}}]}},
                        created_at=int(at * 1000))
    if pid is not None:
        writer.append_event(sid, {"type": "message", "message": {
            "role": "toolResult", "toolCallId": call_id, "toolName": "exec",
            "content": [{"type": "text", "text": f"Command still running (pid {pid})"}],
            "details": {"status": "running", "pid": pid, "sessionId": process_session}}},
                            created_at=int(at * 1000) + 50)


def add_task(state_dir: Path, key: str, process_session: str, task: str, started: float,
             status: str = "running") -> None:
    path = state_dir / "state" / "openclaw.sqlite"
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as conn:
        conn.execute(TASK_RUNS.replace("CREATE TABLE", "CREATE TABLE IF NOT EXISTS"))
        conn.execute(
            "INSERT INTO task_runs (task_id, runtime, task_kind, requester_session_key, "
            "owner_key, scope_kind, run_id, task, status, delivery_status, notify_policy, "
            "created_at, started_at) VALUES (?, 'cli', 'exec', ?, ?, 'session', ?, ?, ?, "
            "'none', 'silent', ?, ?)",
            (f"t-{process_session}", key, key, f"exec:{process_session}", task, status,
             int(started * 1000), int(started * 1000)))


def shell(command: str, start: float, pid: int = 4242) -> ExecShell:
    return ExecShell(pid, start, command, ((pid, 0),))


@pytest.fixture
def state(tmp_path) -> Path:
    return tmp_path / "state"


def test_recent_exec_calls_reads_plain_and_compressed_rows(state):
    now = time.time()
    long_command = "echo " + "x" * 4000
    with agent_db(state) as writer:
        add_exec(writer, "agent:main:a", "call-a", "sleep 600", now - 5, pid=111,
                 process_session="calm-reef")
        add_exec(writer, "agent:main:b", "call-b", long_command, now - 2)
    calls = {call.call_id: call for call in recent_exec_calls(str(state), now=now)}
    assert calls["call-a"].result_pid == 111 and calls["call-a"].process_session == "calm-reef"
    assert calls["call-a"].session_key == "agent:main:a"
    assert abs(calls["call-a"].ts - (now - 5)) < 0.01
    assert calls["call-b"].command == long_command and calls["call-b"].result_pid is None
    with sqlite3.connect(state / "agents/main/agent/openclaw-agent.sqlite") as conn:
        assert conn.execute("SELECT COUNT(*) FROM transcript_events "
                            "WHERE event_json IS NULL").fetchone()[0] >= 1


def test_recent_exec_calls_skips_old_idle_sessions(state):
    now = time.time()
    with agent_db(state) as writer:
        add_exec(writer, "agent:main:old", "call-old", "sleep 1", now - 10 * 3600)
        writer.upsert_session("agent:main:old", "sid-agent:main:old", {}, "done",
                              updated_at=int((now - 10 * 3600) * 1000))
    assert recent_exec_calls(str(state), now=now) == []


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z")


def add_legacy_exec(writer: LegacyWriter, key: str, call_id: str, command: str, at: float,
                    *, pid: int | None = None, session_file: str | None = None) -> None:
    """The legacy-era twin of ``add_exec``: transcript lines plus a ``sessions.json`` entry."""
    sid = f"sid-{key.rsplit(':', 1)[-1]}"
    entry = {"sessionId": sid, "updatedAt": int(at * 1000)}
    if session_file:
        entry["sessionFile"] = session_file
    writer.upsert_session(key, entry)
    target = session_file[:-len(".jsonl")] if session_file else sid
    writer.append_event(target, {"type": "message", "timestamp": iso(at), "message": {
        "role": "assistant", "content": [{"type": "toolCall", "id": call_id, "name": "exec",
                                          "arguments": {"command": command}}]}})
    if pid is not None:
        writer.append_event(target, {"type": "message", "timestamp": iso(at + 0.05),
                                     "message": {"role": "toolResult", "toolCallId": call_id,
                                                 "toolName": "exec",
                                                 "details": {"status": "running", "pid": pid}}})


def test_legacy_transcripts_give_the_same_evidence(state):
    now = time.time()
    writer = LegacyWriter(state / "agents" / "main" / "sessions")
    add_legacy_exec(writer, "agent:main:a", "call-a", "sleep 600", now - 5, pid=111)
    add_legacy_exec(writer, "agent:main:b", "call-b", "ls /nowhere", now - 2,
                    session_file="elsewhere-b.jsonl")
    add_legacy_exec(writer, "agent:main:old", "call-old", "ls /nowhere", now - 10 * 3600)
    writer.close()
    calls = {call.call_id: call for call in recent_exec_calls(str(state), now=now)}
    assert set(calls) == {"call-a", "call-b"}
    assert calls["call-a"].result_pid == 111 and calls["call-a"].session_key == "agent:main:a"
    assert abs(calls["call-b"].ts - (now - 2)) < 0.01
    owner = ev.attribute(shell("ls /nowhere", now - 1.8), calls=calls.values())
    assert owner.session_key == "agent:main:b"


def test_legacy_evidence_reads_only_complete_lines_at_the_transcript_end(state, monkeypatch):
    now = time.time()
    writer = LegacyWriter(state / "agents" / "main" / "sessions")
    for n in range(40):
        add_legacy_exec(writer, "agent:main:a", f"call-{n}", f"echo {n}", now - 40 + n)
    writer.close()
    path = state / "agents" / "main" / "sessions" / "sid-a.jsonl"
    with open(path, "ab") as handle:
        handle.write(b'{"type": "message", "timestamp": "')  # a line still being written
    monkeypatch.setattr(exec_calls, "TRANSCRIPT_TAIL_BYTES", 2000)
    ids = [call.call_id for call in recent_exec_calls(str(state), now=now)]
    assert ids and ids == [f"call-{n}" for n in range(40 - len(ids), 40)] and len(ids) < 40


def test_a_gateway_tool_event_attributes_the_shell():
    start = time.time()
    reported = [ExecPid(4242, "agent:main:a", "run-a", "call-a", "brisk-crest", start + 0.3,
                        start)]
    calls = [ExecCall("agent:main:a", "call-a", "sleep 5", start - 0.1)]
    owner = ev.attribute(shell("sleep 5", start), reported=reported, calls=calls)
    assert owner.session_key == "agent:main:a"
    assert "call-a" in owner.evidence and "run-a" in owner.evidence


def test_a_tool_event_and_a_command_match_naming_different_sessions_conflict():
    """No kind of evidence outranks another: they disagree, so nobody owns the shell."""
    start = time.time()
    reported = [ExecPid(4242, "agent:main:a", "run-a", "call-a", "brisk-crest", start + 0.3,
                        start)]
    calls = [ExecCall("agent:main:b", "call-b", "sleep 5", start - 0.1)]
    assert ev.attribute(shell("sleep 5", start), reported=reported, calls=calls) is None
    verdict = ev.judge(shell("sleep 5", start), reported=reported, calls=calls)
    assert verdict.ambiguous and verdict.sessions == ("agent:main:a", "agent:main:b")
    assert any("gateway tool event names agent:main:a" in r for r in verdict.reasons)
    assert any("command text names agent:main:b" in r for r in verdict.reasons)


def test_a_tool_event_for_an_older_process_with_that_pid_does_not_count():
    start = time.time()
    reported = [ExecPid(4242, "agent:main:a", "run-a", "call-a", None, start - 3600, start)]
    assert ev.attribute(shell("sleep 5", start), reported=reported) is None


def test_a_transcript_result_naming_the_pid_attributes_a_background_exec():
    start = time.time() - 300
    calls = [ExecCall("agent:main:a", "call-a", "sleep 600", start - 0.2, 4242, "calm-reef",
                         start + 10)]
    owner = ev.attribute(shell("something else", start), calls=calls)
    assert owner.session_key == "agent:main:a" and "calm-reef" in owner.evidence


def test_command_text_near_the_shell_start_attributes_it():
    start = time.time()
    calls = [ExecCall("agent:main:a", "call-a", "until curl -s x; do sleep 1; done",
                         start - 0.3),
             ExecCall("agent:main:b", "call-b", "ls", start - 0.3)]
    owner = ev.attribute(shell("until curl -s x; do sleep 1; done", start), calls=calls)
    assert owner.session_key == "agent:main:a" and "call-a" in owner.evidence


def test_the_same_command_in_two_sessions_at_the_same_time_is_not_attributed():
    start = time.time()
    calls = [ExecCall("agent:main:a", "call-a", "make test", start - 0.3),
             ExecCall("agent:main:b", "call-b", "make test", start - 0.6)]
    assert ev.attribute(shell("make test", start), calls=calls) is None


def test_the_same_command_earlier_elsewhere_is_ambiguous_until_it_finished():
    """How long OpenClaw takes from recording a call to starting its shell varies (a second
    call of a message waits for the first), so b's identical call 25 s before could be this
    shell's as well as a's closer one; once b's call has a result that names no pid, its
    command ran to its end and this shell is not its."""
    start = time.time()
    calls = [ExecCall("agent:main:a", "call-a", "make test", start - 0.3),
             ExecCall("agent:main:b", "call-b", "make test", start - 25)]
    verdict = ev.judge(shell("make test", start), calls=calls)
    assert verdict.ambiguous and verdict.sessions == ("agent:main:a", "agent:main:b")
    calls[1] = dataclasses.replace(calls[1], finished=True)
    assert ev.attribute(shell("make test", start), calls=calls).session_key == "agent:main:a"


def test_a_matching_command_outside_the_time_window_is_not_evidence():
    start = time.time()
    calls = [ExecCall("agent:main:a", "call-a", "make test", start - 120),
             ExecCall("agent:main:a", "call-b", "make test", start + 30)]
    assert ev.attribute(shell("make test", start), calls=calls) is None


def test_running_background_tasks_attribute_by_command_and_start(state):
    start = time.time() - 100
    add_task(state, "agent:main:poller", "mild-harbor", "sleep 600", start + 0.4)
    add_task(state, "agent:main:done", "old-sea", "sleep 600", start, status="failed")
    tasks = running_background_execs(str(state))
    assert [(t.session_key, t.process_session) for t in tasks] == [
        ("agent:main:poller", "mild-harbor")]
    owner = ev.attribute(shell("sleep 600", start), tasks=tasks)
    assert owner.session_key == "agent:main:poller" and "mild-harbor" in owner.evidence
    assert ev.attribute(shell("sleep 600", start - 60), tasks=tasks) is None


def test_missing_databases_give_no_evidence(tmp_path):
    assert recent_exec_calls(str(tmp_path / "nothing")) == []
    assert running_background_execs(str(tmp_path / "nothing")) == []
    assert recent_exec_calls(None) == []


def test_a_transcript_pid_counts_only_inside_its_calls_window():
    start = time.time() - 300

    def owner(made: float, answered: float | None):
        calls = [ExecCall("agent:main:a", "call-a", "sleep 600", made, 4242, None,
                             answered)]
        return ev.attribute(shell("something else", start), calls=calls)

    assert owner(start - 0.2, start + 10).session_key == "agent:main:a"
    assert owner(start + ev.CLOCK_SLACK - 0.5, start + 20) is not None   # clock slack
    assert owner(start + ev.CLOCK_SLACK + 1, start + 20) is None   # started before the call
    assert owner(start - 100, start - 95) is None                  # a reused pid
    assert owner(start - 0.2, None) is None                        # no result time known
    assert owner(start - 0.2, start - 5) is None                   # result before the call


def test_the_same_call_in_two_sessions_is_settled_by_a_pid_of_one_of_them():
    start = time.time()
    calls = [ExecCall("agent:main:a", "call-a", "make test", start - 0.3, 4242, None,
                         start + 2),
             ExecCall("agent:main:b", "call-b", "make test", start - 0.6)]
    assert ev.attribute(shell("make test", start), calls=calls).session_key == "agent:main:a"
    tie = ExecCall("agent:main:c", "call-c", "make test", start - 0.4)
    alone = ev.judge(shell("make test", start), calls=[calls[1], tie])
    assert alone.ambiguous and alone.owner is None
    elsewhere = ev.judge(shell("make test", start), calls=[
        calls[1], tie, ExecCall("agent:main:d", "call-d", "ls", start - 0.4, 4242, None,
                                   start + 1)])
    assert elsewhere.ambiguous, "a pid of a session outside the tie conflicts with it"


def test_two_sessions_naming_one_pid_is_ambiguous():
    start = time.time()
    calls = [ExecCall("agent:main:a", "call-a", "x", start - 0.3, 4242, None, start + 1),
             ExecCall("agent:main:b", "call-b", "y", start - 0.2, 4242, None, start + 1)]
    verdict = ev.judge(shell("z", start), calls=calls)
    assert verdict.ambiguous and verdict.sessions == ("agent:main:a", "agent:main:b")
    assert ev.attribute(shell("z", start), calls=calls) is None


def test_malformed_pids_and_rows_are_skipped(state):
    now = time.time()
    bad = [0, 1, -5, 2 ** 64, 10 ** 30, "4242", 4242.0, True, None, [4242], {"pid": 4242}]
    with agent_db(state) as writer:
        for n, pid in enumerate(bad):
            add_exec(writer, "agent:main:b", f"call-{n}", "sleep 1", now - 5, pid=pid)
        add_exec(writer, "agent:main:b", "call-ok", "sleep 2", now - 5, pid=4242)
        sid = "sid-agent:main:b"
        for message in ({"role": "toolResult", "toolCallId": ["call-ok"]},
                        {"role": "toolResult", "toolCallId": "call-ok", "details": [1]},
                        {"role": "assistant", "content": 5}, "text", None):
            writer.append_event(sid, {"type": "message", "message": message},
                                created_at=int(now * 1000))
    calls = {call.call_id: call for call in recent_exec_calls(str(state), now=now)}
    assert calls["call-ok"].result_pid == 4242
    assert abs(calls["call-ok"].result_ts - (now - 5 + 0.05)) < 0.01
    assert all(calls[f"call-{n}"].result_pid is None for n in range(len(bad)))


def test_a_call_answered_without_a_pid_is_finished_and_one_with_a_pid_is_not():
    def call(call_id: str) -> dict:
        return {"type": "message", "message": {"role": "assistant", "content": [
            {"type": "toolCall", "id": call_id, "name": "exec",
             "arguments": {"command": "make test"}}]}}

    def result(call_id: str, details: dict) -> dict:
        return {"type": "message", "message": {"role": "toolResult", "toolCallId": call_id,
                                               "details": details}}

    entries = [(call("done"), 1.0), (call("bg"), 2.0), (call("open"), 3.0),
               (result("done", {"status": "completed", "exitCode": 0}), 4.0),
               (result("bg", {"status": "running", "pid": 4242}), 5.0)]
    calls = {c.call_id: c for c in exec_calls_in("agent:main:a", entries)}
    assert calls["done"].finished and calls["done"].result_pid is None
    assert not calls["bg"].finished and calls["bg"].result_pid == 4242
    assert not calls["open"].finished and calls["open"].result_ts is None


def test_calls_with_huge_commands_and_ids_keep_little_and_still_match_their_shell(state):
    """Each event may hold 4 MiB and compresses to a few kB: a small agent DB of such exec
    calls held every command and id whole (400 events of each recent session, 1.6 GB a
    session). Past ``KEPT_TEXT_CHARS`` they are kept as digests, and a shell running the
    long command is still named by its call's command text."""
    now = time.time()
    long_id = "call-" + "i" * (512 << 10)
    with agent_db(state) as writer:
        for n in range(30):
            add_exec(writer, "agent:main:big", f"{long_id}{n}",
                     f"echo {n} " + "x" * (3 << 20), now - 20 + n * 0.1)
        add_exec(writer, "agent:main:small", "call-small", "sleep 600", now - 1)
    calls = recent_exec_calls(str(state), now=now)
    assert len(calls) == 31
    kept = sum(len(call.command) + len(call.call_id) for call in calls)
    assert kept < 16 << 20          # 100 MB held before
    assert {c.command for c in calls if c.session_key == "agent:main:small"} == {"sleep 600"}
    running = shell("echo 29 " + "x" * (3 << 20), now - 17)
    verdict = ev.judge(running, calls=calls)
    assert [(c.kind, c.session_key) for c in verdict.claims] == [
        ("command text", "agent:main:big")]
    assert ev.judge(shell("echo 29 " + "x" * 10, now - 17), calls=calls).claims == ()

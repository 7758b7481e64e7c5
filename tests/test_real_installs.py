"""What real OpenClaw state dirs hold (issue 12, items 1-6), in fixtures shaped like them.

* 2026.6 writes ``<id>.trajectory.jsonl`` / ``<id>.trajectory-path.json`` sidecars (records
  shaped as OpenClaw's ``src/trajectory`` writes them) and compaction checkpoints
  ``<id>.checkpoint.<uuid>.jsonl`` beside the transcripts; archives rename sidecars too.
* an agent DB of schema v1 (2026.5.30 - 2026.7.1) holds auth profiles, no transcripts.
* a WAL-mode database whose gateway is not running has no ``-wal``/``-shm``: reading it must
  not create them (nothing under the state dir is created, changed or chmod-ed).
* transcripts no ``sessions.json`` lists, and archives, are still their agent's.
* an index entry whose transcript is gone still records its tokens.
* ``sessionFile`` recorded in a Docker container or on Windows.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from monitor.act.background_execs import running_background_execs
from monitor.act.exec_calls import recent_exec_calls
from monitor.config import BudgetsConfig, Config
from monitor.demo.sim.sqlite_writer import SqliteAgentWriter
from monitor.detect.engine import DetectionEngine
from monitor.events import SessionInfo, SourceError, SourceNotice
from monitor.pipeline import Monitor
from monitor.snapshot_builder import SnapshotBuilder
from monitor.sources.legacy import LegacySessionsSource
from monitor.sources.sourceset import SourceSet
from monitor.sources.sqlite_agent import SqliteAgentSource
from monitor.sources.transcript_names import (
    is_sidecar,
    placed_session_file,
    session_file_path,
    sidecar_base,
)

NOW = time.time()
SID = "0b6f3c7e-5d1a-4c1e-9f3a-2a7d8e9c1b10"
OLD_SID = "7c2e9a41-3b5f-4d8e-a1c6-5e0f2b9d8a73"
LOOSE_SID = "e4d2b1a0-9c8f-4e7d-b6a5-f4e3d2c1b0a9"
GONE_SID = "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d"
STAMP = "2026-06-11T09-14-03.512Z"
# the SQLite-era agent's sessions (session ids are unique across agents)
DB_SID = "5d0c9e8f-1a2b-4c3d-8e4f-5a6b7c8d9e0f"
DB_LOOSE_SID = "6e1d0f9a-2b3c-4d4e-9f5a-6b7c8d9e0f1a"
DB_GONE_SID = "7f2e1a0b-3c4d-4e5f-8a6b-7c8d9e0f1a2b"


def iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts)) + f".{int(ts * 1000) % 1000:03d}Z"


def transcript(sid: str, *, calls: int = 2, pid: int = 4242, command: str = "sleep 600",
               start: float = NOW - 60) -> list[dict]:
    """An OpenClaw transcript: header, user, ``calls`` exec calls with results."""
    run = f"run-{sid[:8]}"
    out = [{"type": "session", "version": 3, "id": sid, "timestamp": iso(start), "cwd": "/w"},
           {"type": "message", "id": "u1", "parentId": None, "timestamp": iso(start + 1),
            "message": {"role": "user", "content": "go", "idempotencyKey": f"{run}:user"}}]
    for n in range(calls):
        ts = start + 2 + n
        call_id = f"call_{sid[:4]}_{n}"
        out.append({"type": "message", "id": f"a{n}", "parentId": "u1", "timestamp": iso(ts),
                    "message": {"role": "assistant", "provider": "openai", "model": "gpt-5",
                                "content": [{"type": "toolCall", "id": call_id, "name": "exec",
                                             "arguments": {"command": command,
                                                           "background": True}}],
                                "usage": {"input": 1000, "output": 50, "cacheRead": 0,
                                          "cacheWrite": 0, "totalTokens": 1050,
                                          "cost": {"total": 0}},
                                "stopReason": "toolUse", "__openclaw": {"runId": run}}})
        out.append({"type": "message", "id": f"r{n}", "parentId": f"a{n}",
                    "timestamp": iso(ts + 0.5),
                    "message": {"role": "toolResult", "toolCallId": call_id, "toolName": "exec",
                                "content": [{"type": "text", "text": "started"}],
                                "isError": False,
                                "details": {"status": "running", "pid": pid,
                                            "sessionId": f"proc-{n}"}}})
    return out


def trajectory(sid: str, key: str) -> list[dict]:
    """Runtime trajectory records as ``src/trajectory/runtime`` writes them."""
    kinds = [("session.started", {"trigger": "user"}),
             ("trace.metadata", {"openclawVersion": "2026.6.3"}),
             ("context.compiled", {"messages": 3, "systemPromptChars": 9000}),
             ("prompt.submitted", {"chars": 2}),
             ("tool.call", {"toolCallId": "call_x", "name": "exec", "args": {"command": "ls"}}),
             ("tool.result", {"toolCallId": "call_x", "isError": False}),
             ("model.completed", {"usage": {"input": 1000, "output": 50}, "aborted": False,
                                  "stopReason": "stop"}),
             ("trace.artifacts", {"finalStatus": "success"}),
             ("session.ended", {"status": "success"})]
    return [{"traceSchema": "openclaw-trajectory", "schemaVersion": 1, "traceId": sid,
             "source": "runtime", "type": kind, "ts": iso(NOW - 50 + n), "seq": n + 1,
             "sourceSeq": n + 1, "sessionId": sid, "sessionKey": key, "runId": "run-1",
             "workspaceDir": "/w", "provider": "openai", "modelId": "gpt-5",
             "modelApi": "openai-responses", "data": data}
            for n, (kind, data) in enumerate(kinds)]


def write_jsonl(path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def index_entry(sid: str, **extra) -> dict:
    entry = {"sessionId": sid, "updatedAt": int(NOW * 1000), "systemSent": True,
             "abortedLastRun": False, "chatType": "direct", "model": "gpt-5",
             "modelProvider": "openai", "status": "running"}
    entry.update(extra)
    return entry


def legacy_agent(state: Path, agent: str = "work", *, sidecars: bool = True) -> Path:
    """``agents/<agent>/sessions`` as a 2026.6 install leaves it."""
    sessions = state / "agents" / agent / "sessions"
    sessions.mkdir(parents=True)
    key = f"agent:{agent}:main"
    write_jsonl(sessions / f"{SID}.jsonl", transcript(SID))
    write_jsonl(sessions / f"{LOOSE_SID}.jsonl", transcript(LOOSE_SID, calls=1))
    write_jsonl(sessions / f"{OLD_SID}.jsonl.reset.{STAMP}", transcript(OLD_SID, calls=3))
    if sidecars:
        write_jsonl(sessions / f"{SID}.trajectory.jsonl", trajectory(SID, key))
        (sessions / f"{SID}.trajectory-path.json").write_text(json.dumps(
            {"traceSchema": "openclaw-trajectory-pointer", "schemaVersion": 1,
             "sessionId": SID, "runtimeFile": str(sessions / f"{SID}.trajectory.jsonl")}))
        write_jsonl(sessions / f"{OLD_SID}.trajectory.jsonl.reset.{STAMP}",
                    trajectory(OLD_SID, key))
        write_jsonl(sessions / f"{SID}.checkpoint.3f1e2d4c-5b6a-4789-8abc-def012345678.jsonl",
                    transcript(SID))
    index = {key: index_entry(SID, sessionFile=str(sessions / f"{SID}.jsonl"),
                              inputTokens=2000, outputTokens=100, totalTokens=2100),
             f"agent:{agent}:gone": index_entry(GONE_SID, inputTokens=51234, outputTokens=4321,
                                                totalTokens=55555, status="done")}
    (sessions / "sessions.json").write_text(json.dumps(index, indent=2))
    return sessions


def auth_only_db(path: Path) -> None:
    """A schema-v1 agent DB (OpenClaw 2026.5.30 - 2026.7.1): auth profiles, no transcripts."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.executescript("""
        CREATE TABLE schema_meta (meta_key TEXT NOT NULL PRIMARY KEY, role TEXT NOT NULL,
          schema_version INTEGER NOT NULL, agent_id TEXT, app_version TEXT,
          created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL) STRICT;
        CREATE TABLE auth_profile_store (store_key TEXT NOT NULL PRIMARY KEY,
          store_json TEXT NOT NULL, updated_at INTEGER NOT NULL) STRICT;
        CREATE TABLE auth_profile_state (state_key TEXT NOT NULL PRIMARY KEY,
          state_json TEXT NOT NULL, updated_at INTEGER NOT NULL) STRICT;
        INSERT INTO schema_meta VALUES ('primary', 'agent', 1, 'main', '2026.6.3', 1, 1);
        INSERT INTO auth_profile_store VALUES ('default', '{"profiles":{}}', 1);
        PRAGMA user_version = 1;
    """)
    conn.commit()
    conn.close()


def sqlite_agent(state: Path, agent: str = "main") -> Path:
    """A schema-v23 agent DB in WAL mode, its writer closed (so no -wal/-shm remain): one
    indexed session with a transcript, one whose node has no transcript rows, and
    transcript rows of a session no node lists."""
    db = state / "agents" / agent / "agent" / "openclaw-agent.sqlite"
    with SqliteAgentWriter(db) as writer:
        writer.upsert_session(f"agent:{agent}:main", DB_SID,
                              index_entry(DB_SID, inputTokens=2000, outputTokens=100,
                                          totalTokens=2100), "running")
        writer.upsert_session(f"agent:{agent}:gone", DB_GONE_SID,
                              index_entry(DB_GONE_SID, inputTokens=51234, outputTokens=4321,
                                          totalTokens=55555), "done")
        for record in transcript(DB_SID):
            writer.append_event(DB_SID, record)
        for record in transcript(DB_LOOSE_SID, calls=1):
            writer.append_event(DB_LOOSE_SID, record)
    assert not Path(str(db) + "-wal").exists()
    return db


def global_db(state: Path) -> Path:
    """``state/openclaw.sqlite`` in WAL mode with one running background exec."""
    path = state / "state" / "openclaw.sqlite"
    path.parent.mkdir(parents=True)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE task_runs (task_id TEXT PRIMARY KEY, runtime TEXT, task_kind TEXT,"
                 " requester_session_key TEXT, run_id TEXT, execution_owner_pid INTEGER,"
                 " label TEXT, task TEXT, status TEXT, error TEXT, terminal_outcome TEXT,"
                 " detail_json TEXT, started_at INTEGER, created_at INTEGER)")
    conn.execute("INSERT INTO task_runs VALUES ('t1', 'node', 'exec', 'agent:main:main',"
                 " 'exec:proc-0', 1, NULL, 'sleep 600', 'running', NULL, NULL, '{}', ?, ?)",
                 (int(NOW * 1000), int(NOW * 1000)))
    conn.commit()
    conn.close()
    return path


def tree(root: Path) -> dict[str, tuple]:
    """Every entry under ``root``: name -> (kind, size, mode, owner, group, mtime)."""
    out = {}
    for base, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(base, name)
            st = os.lstat(path)
            size = None if os.path.isdir(path) else st.st_size
            out[os.path.relpath(path, root)] = (st.st_mode, size, st.st_uid, st.st_gid,
                                                st.st_mtime_ns)
    st = os.lstat(root)
    out["."] = (st.st_mode, None, st.st_uid, st.st_gid, st.st_mtime_ns)
    return out


def clawwatch(*args: str, home: Path, timeout: float = 90) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENCLAW_", "CLAWWATCH_")) or k == "CLAWWATCH_LOG_DIRS"}
    env.update(HOME=str(home), TMPDIR=str(home), XDG_STATE_HOME=str(home / "xdg"),
               XDG_CONFIG_HOME=str(home / "config"))
    return subprocess.run([sys.executable, "-m", "monitor", *args], capture_output=True,
                          text=True, env=env, timeout=timeout)


def replay(state: Path, home: Path, *extra: str) -> dict:
    result = clawwatch("replay", "--state-dir", str(state), "--json", *extra, home=home)
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout)


def errors_of(document: dict) -> int:
    return sum(source["errors"] for source in document["sources"])


def sessions_of(document: dict) -> dict[str, dict]:
    return {s["session_id"]: s for s in document["sessions"]}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    return home


# ------------------------------------------------------------------ 1. sidecars


@pytest.mark.parametrize("archives", [False, True])
def test_trajectory_sidecars_and_checkpoints_are_not_read_as_transcripts(
        tmp_path: Path, home: Path, archives: bool) -> None:
    state = tmp_path / "state"
    legacy_agent(state)
    document = replay(state, home, *(["--archives"] if archives else []))
    assert errors_of(document) == 0, document["sources"]
    sessions = sessions_of(document)
    expected = {SID, LOOSE_SID, GONE_SID} | ({OLD_SID} if archives else set())
    assert set(sessions) == expected
    assert sessions[SID]["tool_calls"] == 2          # the checkpoint copy is not counted twice


def test_a_session_file_naming_a_sidecar_is_no_transcript(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    for name in (f"{SID}.trajectory.jsonl", f"{SID}.trajectory-path.json",
                 f"{SID}.checkpoint.3f1e2d4c-5b6a-4789-8abc-def012345678.jsonl"):
        (sessions / name).write_text("{}\n")
        assert session_file_path(str(sessions), {"sessionFile": str(sessions / name)}) is None
    write_jsonl(sessions / f"{SID}.trajectory.jsonl", trajectory(SID, "agent:main:main"))
    (sessions / "sessions.json").write_text(json.dumps({"agent:main:main": index_entry(
        SID, sessionFile=f"{SID}.trajectory.jsonl")}))
    source = LegacySessionsSource(str(sessions), "main")
    events = source.poll()
    assert not [e for e in events if isinstance(e, SourceError)]
    assert source.errors == 0


# ------------------------------------------------------------ 2. auth-only DB


def test_an_auth_only_schema_v1_database_is_a_notice_not_an_error(tmp_path: Path,
                                                                   home: Path) -> None:
    state = tmp_path / "state"
    db = state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    auth_only_db(db)
    source = SqliteAgentSource(str(db), "main")
    events = source.poll() + source.poll()
    assert [e for e in events if isinstance(e, SourceError)] == []
    notices = [e.message for e in events if isinstance(e, SourceNotice)]
    assert notices.count("no transcripts in this database, schema v1") == 1, notices
    source.close()
    document = replay(state, home)
    assert errors_of(document) == 0 and document["sessions"] == []


# --------------------------------------------------- 3. nothing written under the state dir


@pytest.fixture
def both_eras(tmp_path: Path) -> Path:
    """A migrated install: one agent in SQLite (WAL, gateway stopped), one still legacy,
    and the global DB."""
    state = tmp_path / "state"
    sqlite_agent(state, "main")
    legacy_agent(state, "work")
    global_db(state)
    auth_only_db(state / "agents" / "old" / "agent" / "openclaw-agent.sqlite")
    return state


def test_replay_writes_nothing_under_the_state_dir(both_eras: Path, home: Path) -> None:
    before = tree(both_eras)
    document = replay(both_eras, home, "--archives")
    assert tree(both_eras) == before
    assert errors_of(document) == 0
    assert SID in sessions_of(document)


def test_watch_writes_nothing_under_the_state_dir(both_eras: Path, home: Path) -> None:
    before = tree(both_eras)
    result = clawwatch("watch", "--headless", "--json", "--from-start", "--seconds", "2",
                       "--state-dir", str(both_eras), home=home)
    assert result.returncode == 0, result.stderr[-2000:]
    assert tree(both_eras) == before
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    assert [line for line in lines if line["type"] == "error"] == []
    assert any(line["type"] == "tool_call" for line in lines)


def test_stop_kill_evidence_reading_writes_nothing_under_the_state_dir(both_eras: Path) -> None:
    before = tree(both_eras)
    calls = recent_exec_calls(str(both_eras), now=NOW)
    tasks = running_background_execs(str(both_eras))
    assert tree(both_eras) == before
    assert {call.session_key for call in calls} == {"agent:main:main", "agent:work:main"}
    assert [task.command for task in tasks] == ["sleep 600"]


def test_an_immutable_open_is_reopened_when_the_gateway_writes(tmp_path: Path) -> None:
    db = sqlite_agent(tmp_path / "state")
    source = SqliteAgentSource(str(db), "main", sweep_seconds=0.0)
    first = source.poll()
    assert sorted(p.name for p in db.parent.iterdir()) == ["openclaw-agent.sqlite"]
    calls_before = sum(type(e).__name__ == "ToolCall" for e in first)
    assert calls_before == 3
    with SqliteAgentWriter(db) as writer:               # the gateway starts and writes
        for record in transcript(DB_SID, calls=2, start=NOW)[2:]:
            writer.append_event(DB_SID, record)
        later = source.poll()
        assert sum(type(e).__name__ == "ToolCall" for e in later) == 2
        assert [e for e in later if isinstance(e, SourceError)] == []
    source.close()


# ------------------------------------------------------------------ 4. agent id


def test_every_transcript_is_its_agent_s_listed_or_not_archived_or_not(
        tmp_path: Path, home: Path) -> None:
    state = tmp_path / "state"
    legacy_agent(state, "work")
    sqlite_agent(state, "main")
    document = replay(state, home, "--archives")
    agents = {s["session_id"]: s["agent_id"] for s in document["sessions"]}
    assert agents == {SID: "work", LOOSE_SID: "work", OLD_SID: "work", GONE_SID: "work",
                      DB_SID: "main", DB_LOOSE_SID: "main", DB_GONE_SID: "main"}


def test_an_unlisted_transcript_s_agent_reaches_the_engine(tmp_path: Path) -> None:
    state = tmp_path / "state"
    legacy_agent(state, "work")
    seen = []

    class Engine:
        def observe(self, key, agent_id, event):
            seen.append((event.session_id if hasattr(event, "session_id") else None, agent_id))
            return []

    monitor = Monitor(SourceSet(state_dir=str(state), replay=True), Engine())
    for _ in range(20):
        monitor.step()
    assert monitor.sessions[LOOSE_SID].agent_id == "work"
    assert {agent for sid, agent in seen if sid == LOOSE_SID} == {"work"}


def test_a_transcript_that_appears_with_its_index_record_is_read_after_the_record(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The gateway writes the index and the transcript within a moment: when both appear
    after a poll read the index but before it listed the transcripts, the index is read
    again before the new transcript, so its events come after the session's record."""
    sessions = tmp_path / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    source = LegacySessionsSource(str(sessions), "main")
    assert source.poll() == []
    listing = LegacySessionsSource._transcript_paths

    def both_appear(self):
        if not (sessions / "s1.jsonl").exists():
            (sessions / "sessions.json").write_text(json.dumps(
                {"agent:main:main": {"sessionId": "s1", "status": "running"}}))
            (sessions / "s1.jsonl").write_text(json.dumps(
                {"type": "message", "message": {"role": "user", "content": "hi"}}) + "\n")
        return listing(self)

    monkeypatch.setattr(LegacySessionsSource, "_transcript_paths", both_appear)
    events = [e for e in source.poll() if not isinstance(e, SourceNotice)]
    assert [type(e).__name__ for e in events] == ["SessionInfo", "UserMessage"]
    assert events[0].key == "agent:main:main" and events[1].session_id == "s1"


# --------------------------------------------------------- 5. tokens from the index


def test_an_index_entry_without_a_transcript_shows_the_index_s_tokens(
        tmp_path: Path, home: Path) -> None:
    for era in ("legacy", "sqlite"):
        state = tmp_path / era
        (legacy_agent if era == "legacy" else sqlite_agent)(state, "main")
        sessions = sessions_of(replay(state, home))
        gone = sessions[GONE_SID if era == "legacy" else DB_GONE_SID]
        assert gone["tokens"] == {"input": 51234, "output": 4321, "total": 55555}, era
        assert gone["tokens_from"] == "index"
        live = sessions[SID if era == "legacy" else DB_SID]
        assert live["tokens"] == {"input": 2000, "output": 100, "total": 2100}
        assert live["tokens_from"] == "transcript"


def test_the_board_shows_the_index_s_tokens_and_budget(tmp_path: Path) -> None:
    state = tmp_path / "state"
    legacy_agent(state, "main")
    config = dataclasses.replace(Config(), budgets=BudgetsConfig(session_tokens=100_000))
    monitor = Monitor(SourceSet(state_dir=str(state), replay=True), DetectionEngine(config))
    for _ in range(20):
        monitor.step()
    board = SnapshotBuilder(monitor, time.time).build()
    row = next(r for r in board.rows if r.session_id == GONE_SID)
    assert (row.tokens_in, row.tokens_out, row.tokens_from) == (51234, 4321, "index")
    assert row.budget_percent == pytest.approx(55.555)


# ------------------------------------------------- 6. sessionFile from another machine


FOREIGN = {
    "docker": "/home/node/.openclaw/agents/main/sessions/{name}",
    "windows": "C:\\Users\\me\\.openclaw\\agents\\main\\sessions\\{name}",
}


HOSTILE = (
    "C:\\Users\\me\\..",                              # no plain name
    "/home/node/.openclaw/agents/main/sessions/..",
    "C:\\Users\\me\\sessions\\sessions.json",          # not a transcript
    "/home/node/x/..\\..\\secret.txt",
    "C:\\x\\..\\..\\outside.jsonl",                   # the plain name, in the sessions dir
)


@pytest.mark.parametrize("where", sorted(FOREIGN))
def test_a_session_file_from_another_machine_is_found_by_name_inside_the_sessions_dir(
        tmp_path: Path, where: str) -> None:
    sessions = tmp_path / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    name = f"{SID}-topic-42.jsonl"
    write_jsonl(sessions / name, transcript(SID))
    entry = {"sessionId": SID, "sessionFile": FOREIGN[where].format(name=name)}
    assert session_file_path(str(sessions), entry) == str(sessions / name)
    (sessions / "sessions.json").write_text("{}")
    (tmp_path / "secret.txt").write_text("x")
    (tmp_path / "agents" / "outside.jsonl").write_text("{}\n")
    for recorded in HOSTILE:
        found = session_file_path(str(sessions), {"sessionFile": recorded})
        assert found is None or not os.path.exists(found) or (
            os.path.dirname(os.path.abspath(found)) == str(sessions)
            and found.endswith(".jsonl")), recorded


PATH_PARTS = st.sampled_from(("sessions", "..", ".", "", "a b", "x\\y", f"{SID}.jsonl",
                               f"{SID}.trajectory.jsonl", f"{SID}.JSONL", "..jsonl"))
PATHS = st.lists(PATH_PARTS, min_size=1, max_size=5).map("/".join)


@given(sessions_dir=PATHS, session_file=PATHS, absolute=st.booleans())
def test_a_session_file_in_the_sessions_dir_is_placed_as_every_case_would_place_it(
        sessions_dir: str, session_file: str, absolute: bool) -> None:
    """The shortcut for a ``sessionFile`` written as the sessions dir and a name gives what
    looking through every case gives."""
    sessions_dir = "/" + sessions_dir if absolute else sessions_dir
    for recorded in (session_file, "/" + session_file,
                     os.path.join(sessions_dir, session_file.rsplit("/", 1)[-1])):
        name = recorded.replace("\\", "/").rsplit("/", 1)[-1]
        found = session_file_path(sessions_dir, {"sessionFile": recorded}, set())
        if recorded and not sidecar_base(name):
            assert found == placed_session_file(sessions_dir, recorded, name, set())


@given(st.lists(st.sampled_from((SID, ".jsonl", ".JSONL", ".trajectory", "-path.json",
                                 ".checkpoint.", "12345678-1234-4234-8234-123456789abc",
                                 ".reset.", ".deleted.", "2026", "/", ".")),
                max_size=7).map("".join))
@example(f"{SID}.trajectory.jsonl")
@example(f"d/{SID}.jsonl")
def test_a_plain_transcript_name_is_told_from_sidecars_as_every_rule_would(name: str) -> None:
    assert is_sidecar(name) == sidecar_base(os.path.basename(name))


def test_evidence_reads_a_transcript_whose_session_file_is_a_docker_path(
        tmp_path: Path) -> None:
    state = tmp_path / "state"
    sessions = state / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    write_jsonl(sessions / f"{SID}.jsonl", transcript(SID, pid=31337, command="yes > /dev/null"))
    (sessions / "sessions.json").write_text(json.dumps({"agent:main:main": index_entry(
        SID, sessionFile=f"/home/node/.openclaw/agents/main/sessions/{SID}.jsonl")}))
    calls = recent_exec_calls(str(state), now=NOW)
    assert [(c.session_key, c.command, c.result_pid) for c in calls] == \
        [("agent:main:main", "yes > /dev/null", 31337)] * 2


def test_replay_reads_a_windows_session_file_by_name(tmp_path: Path, home: Path) -> None:
    state = tmp_path / "state"
    sessions = state / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    write_jsonl(sessions / f"{SID}.jsonl", transcript(SID))
    (sessions / "sessions.json").write_text(json.dumps({"agent:main:main": index_entry(
        SID, sessionFile=f"C:\\Users\\me\\.openclaw\\agents\\main\\sessions\\{SID}.jsonl")}))
    source = LegacySessionsSource(str(sessions), "main")
    source.poll()
    assert sorted(source._followers) == [str(sessions / f"{SID}.jsonl")]
    document = replay(state, home)
    assert errors_of(document) == 0
    assert sessions_of(document)[SID]["tool_calls"] == 2
    assert not [e for e in source.poll() if isinstance(e, (SourceError, SessionInfo))]

"""The simulator writes what a real OpenClaw 2026.9.6 writes, and knows what it wrote."""

from __future__ import annotations

import itertools
import json
import random
import re
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
import zstandard

from monitor.demo.sim import FakeClock, LegacyWriter, Simulator, make_scenario
from monitor.demo.sim.scenarios import EndStep, ScenarioEnv, ToolStep
from monitor.demo.sim.sqlite_writer import SCHEMA_PATH, ZSTD_THRESHOLD_BYTES, SqliteAgentWriter

REPO = Path(__file__).resolve().parents[1]
REAL_DB = Path("/tmp/real-db-copy/openclaw-agent.sqlite")
SUBSET = ("session_nodes", "session_windows", "transcript_events", "trajectory_runtime_events")
needs_real_db = pytest.mark.skipif(not REAL_DB.exists(), reason="no real agent DB copy")


@pytest.fixture
def make_sim(tmp_path):
    sims: list[Simulator] = []

    def build(era="sqlite", *, log=True, seed=0, subdir="state", **kwargs) -> Simulator:
        log_path = tmp_path / subdir / "openclaw.log" if log else None
        sim = Simulator(tmp_path / subdir, era=era, log_path=log_path, seed=seed,
                        clock=FakeClock(), **kwargs)
        sims.append(sim)
        return sim

    yield build
    for sim in sims:
        sim.close()


def read_db(path: Path):
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def decoded_events(conn, session_id: str) -> list[dict]:
    events = []
    decompressor = zstandard.ZstdDecompressor()
    for text, blob in conn.execute(
        "SELECT event_json, event_zstd FROM transcript_events WHERE session_id=? ORDER BY seq",
        (session_id,),
    ):
        events.append(json.loads(text if text is not None else decompressor.decompress(blob)))
    return events


def tool_calls_of(events: list[dict]) -> list[dict]:
    return [item for ev in events if ev.get("type") == "message"
            and ev["message"]["role"] == "assistant"
            for item in ev["message"]["content"] if item["type"] == "toolCall"]


def run_mix(sim: Simulator, calls: int = 120) -> None:
    for name in ("hammer", "pingpong", "poll", "unknown_tool", "rotation", "drift", "heavy",
                 "healthy", "burner"):
        sim.add_session(name)
    sim.run(calls=calls, rate=None)


# -- schema --

def _table_ddl(conn, table: str) -> str:
    return conn.execute("SELECT sql FROM sqlite_master WHERE type='table' AND name=?",
                        (table,)).fetchone()[0]


@needs_real_db
def test_schema_file_is_the_real_ddl_minus_documented_changes():
    real = read_db(REAL_DB)
    ours = sqlite3.connect(":memory:")
    ours.executescript(SCHEMA_PATH.read_text())
    for table in SUBSET:
        expected = _table_ddl(real, table).replace(
            ",\n  FOREIGN KEY (primary_conversation_id) REFERENCES conversations"
            "(conversation_id) ON DELETE SET NULL", "")
        expected = re.sub(r"octet_length\((\w+)\)", r"length(CAST(\1 AS BLOB))", expected)
        assert _table_ddl(ours, table).replace("IF NOT EXISTS ", "") == expected


@needs_real_db
def test_written_rows_pass_the_real_schema_checks(make_sim, tmp_path):
    sim = make_sim()
    run_mix(sim, calls=150)
    real = read_db(REAL_DB)
    strict = sqlite3.connect(tmp_path / "strict.sqlite")
    strict.create_function("octet_length", 1,
                           lambda v: None if v is None else len(str(v).encode()),
                           deterministic=True)
    for table in SUBSET:
        strict.execute(_table_ddl(real, table))
    written = read_db(sim.path)
    for table in SUBSET:
        rows = written.execute(f"SELECT * FROM {table}").fetchall()
        marks = ",".join("?" * len(rows[0]))
        strict.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)
        assert strict.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == len(rows)


def test_schema_checks_are_enforced(tmp_path):
    writer = SqliteAgentWriter(tmp_path / "a.sqlite")
    conn = writer._conn
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 23
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    with pytest.raises(sqlite3.IntegrityError):
        writer.upsert_session("k", "s", {"sessionId": "s"}, "exploded")
    with pytest.raises(sqlite3.IntegrityError):  # compressed row without navigation_json
        conn.execute("INSERT INTO transcript_events (session_id, seq, created_at, event_zstd,"
                     " event_utf8_bytes) VALUES ('s', 0, 1, x'00', 1)")
    with pytest.raises(sqlite3.IntegrityError):  # navigation_json of the wrong shape
        conn.execute("INSERT INTO transcript_events (session_id, seq, created_at, event_json,"
                     " navigation_json) VALUES ('s', 1, 1, '{}', '{\"version\":2}')")
    writer.close()


# -- SQLite era content --

def test_large_events_are_zstd_rows_that_decode_to_the_same_json(make_sim):
    sim = make_sim()
    sim.add_session("hammer")
    sim.add_session("heavy")
    sim.run(calls=60, rate=None)
    conn = read_db(sim.path)
    kinds = Counter()
    for text, blob, size, nav in conn.execute(
        "SELECT event_json, event_zstd, event_utf8_bytes, navigation_json FROM transcript_events"
    ):
        if blob is None:
            assert len(text.encode()) == size <= ZSTD_THRESHOLD_BYTES and nav is None
            continue
        assert text is None and size > ZSTD_THRESHOLD_BYTES
        frame = zstandard.get_frame_parameters(blob)
        assert frame.content_size == size and frame.has_checksum
        raw = zstandard.ZstdDecompressor().decompress(blob)
        assert len(raw) == size
        event, navigation = json.loads(raw), json.loads(nav)
        assert navigation["navigation"]["id"] == event["id"]
        assert navigation["report"]["entry"]["parentId"] == event["parentId"]
        assert navigation["modelBytes"] == size
        kinds[event.get("customType") or event["message"]["role"]] += 1
    assert kinds["openclaw.cache-ttl"] > 0 and kinds["toolResult"] > 0


def test_transcript_has_the_real_event_shapes(make_sim):
    sim = make_sim()
    session = sim.add_session("pingpong")
    for _ in range(25):
        sim.step(session)
    events = decoded_events(read_db(sim.path), session.session_id)
    header, user, thinking, snapshot = events[:4]
    assert header == {"type": "session", "version": 4, "id": session.session_id,
                      "timestamp": header["timestamp"], "cwd": sim.cwd}
    assert user["message"]["idempotencyKey"] == f"{session.run_id}:user"
    assert user["parentId"] is None
    assert thinking["type"] == "thinking_level_change" and thinking["parentId"] == user["id"]
    assert snapshot["customType"] == "model-snapshot"
    for previous, event in itertools.pairwise(events[1:]):
        assert event["parentId"] == previous["id"]
    frozen_sizes = []
    for index, event in enumerate(events[4:], start=4):
        if event["type"] == "custom":
            frozen_sizes.append(len(event["data"]["frozenToolResults"]))
            continue
        message = event["message"]
        assert message["__openclaw"]["runId"] == session.run_id
        if message["role"] == "assistant":
            assert message["stopReason"] == "toolUse"
            assert message["responseId"].startswith("chatcmpl-")
            usage = message["usage"]
            assert usage["totalTokens"] == usage["input"] + usage["output"]
            assert set(usage["cost"]) == {"input", "output", "cacheRead", "cacheWrite", "total"}
        else:
            call = events[index - 1]["message"]["content"][0]
            assert message["toolCallId"] == call["id"] and message["toolName"] == call["name"]
            if call["name"] == "exec":
                assert set(message["details"]) == {"status", "exitCode", "exitSignal",
                                                   "exitReason", "durationMs", "aggregated",
                                                   "noOutputTimedOut", "cwd"}
            else:
                assert message["details"] == {"kind": "text", "content": "vm\n"}
    assert frozen_sizes == list(range(1, 26))


def test_expected_equals_sql_counts_over_the_database(make_sim):
    sim = make_sim()
    run_mix(sim)
    conn = read_db(sim.path)
    decompressor = zstandard.ZstdDecompressor()
    for truth in sim.expected():
        sid = truth["session_id"]
        tools = Counter(dict(conn.execute(
            "SELECT json_extract(item.value, '$.name'), count(*) FROM transcript_events AS e,"
            " json_each(e.event_json, '$.message.content') AS item WHERE e.session_id = ?"
            " AND json_extract(e.event_json, '$.message.role') = 'assistant'"
            " AND json_extract(item.value, '$.type') = 'toolCall' GROUP BY 1", (sid,))))
        tokens = Counter(dict(zip(("input", "output", "total"), conn.execute(
            "SELECT total(json_extract(event_json, '$.message.usage.input')),"
            " total(json_extract(event_json, '$.message.usage.output')),"
            " total(json_extract(event_json, '$.message.usage.totalTokens'))"
            " FROM transcript_events WHERE session_id = ?"
            " AND json_extract(event_json, '$.message.role') = 'assistant'", (sid,)).fetchone(),
            strict=True)))
        for (blob,) in conn.execute("SELECT event_zstd FROM transcript_events WHERE session_id=?"
                                    " AND event_zstd IS NOT NULL", (sid,)):
            message = json.loads(decompressor.decompress(blob)).get("message", {})
            if message.get("role") == "assistant":
                tools.update(i["name"] for i in message["content"] if i["type"] == "toolCall")
                tokens.update({"input": message["usage"]["input"],
                               "output": message["usage"]["output"],
                               "total": message["usage"]["totalTokens"]})
        assert dict(tools) == truth["tools"] and sum(tools.values()) == truth["tool_calls"]
        assert {k: int(v) for k, v in tokens.items()} == truth["tokens"]
        traced = conn.execute(
            "SELECT count(*) FROM trajectory_runtime_events WHERE session_id = ? AND run_id = ?"
            " AND json_extract(event_json, '$.type') = 'tool.call'",
            (sid, truth["run_id"])).fetchone()[0]
        assert traced == truth["tool_calls"]
        status, entry = conn.execute("SELECT status, entry_json FROM session_nodes"
                                     " WHERE session_key = ?", (truth["key"],)).fetchone()
        entry = json.loads(entry)
        assert status == entry["status"] == truth["status"]
        assert entry["inputTokens"] == truth["tokens"]["input"]
        assert entry["lastRunId"] == truth["run_id"]
    assert sum(t["tool_calls"] for t in sim.expected()) == 120


def test_end_session_is_what_an_abort_leaves(make_sim):
    sim = make_sim()
    session = sim.add_session("hammer", key="agent:main:victim")
    for _ in range(5):
        assert sim.step(session)
    assert sim.end_session("agent:main:victim")
    assert not sim.step(session) and not sim.end_session("agent:main:victim")
    conn = read_db(sim.path)
    status, entry = conn.execute("SELECT status, entry_json FROM session_nodes").fetchone()
    assert status == "killed" and json.loads(entry)["abortedLastRun"] is True
    assert conn.execute("SELECT status FROM session_windows").fetchone()[0] == "killed"
    assert sim.expected()[0]["status"] == "killed" and sim.expected()[0]["tool_calls"] == 5
    log = (sim.log.path).read_text()
    assert f"run cleanup: runId={session.run_id} sessionId={session.session_id} aborted=true" in log
    assert "chat.abort" in log


def test_same_seed_writes_the_same_transcript(make_sim):
    dumps = []
    for subdir, seed in (("a", 7), ("b", 7), ("c", 8)):
        sim = make_sim(subdir=subdir, seed=seed, log=False, workspace="/srv/ws")
        sim.add_session("rotation")
        sim.add_session("poll")
        sim.run(calls=30, rate=None)
        sim.close()
        dumps.append([row for row in read_db(sim.path).execute(
            "SELECT session_id, seq, event_json, event_zstd FROM transcript_events"
            " ORDER BY session_id, seq")])
    assert dumps[0] == dumps[1]
    assert dumps[0] != dumps[2]


# -- scenarios --

def _steps(name: str, count: int, **params) -> list:
    env = ScenarioEnv(rng=random.Random(1), now=FakeClock(tick=1.0), cwd="/w", hostname="vm")
    steps = make_scenario(name, **params).steps(env)
    return [step for _, step in zip(range(count), steps, strict=False)]


def test_loop_scenarios_repeat_their_outcomes():
    hammer = _steps("hammer", 25)
    assert {(s.tool, json.dumps(s.arguments), s.result_text) for s in hammer} == {
        (hammer[0].tool, json.dumps(hammer[0].arguments), hammer[0].result_text)}
    pingpong = _steps("pingpong", 20)
    assert [s.tool for s in pingpong] == ["read", "exec"] * 10
    assert len({(s.tool, s.result_text) for s in pingpong}) == 2
    poll = _steps("poll", 12)
    assert poll[0].arguments["background"] is True and poll[0].details["status"] == "running"
    assert len({(json.dumps(s.arguments), s.result_text, json.dumps(s.details))
                for s in poll[1:]}) == 1 and poll[1].tool == "process"
    rotation = _steps("rotation", 60)
    commands = [s.arguments["command"] for s in rotation]
    assert len(set(commands)) == 4
    assert all(a != b for a, b in itertools.pairwise(commands))
    outcome = {}
    for step in rotation:
        assert outcome.setdefault(step.arguments["command"], step.result_text) == step.result_text
    drift = [s.result_text.split("\n") for s in _steps("drift", 5)]
    assert len({lines[0] for lines in drift}) == 5 and len({tuple(x[1:]) for x in drift}) == 1


def test_finite_scenarios_end_the_way_openclaw_does():
    unknown = _steps("unknown_tool", 20)
    assert len(unknown) == 11 and isinstance(unknown[-1], EndStep)
    assert all(s.is_error and s.result_text == "Tool frobnicate_widget not found"
               for s in unknown[:10])
    heavy = _steps("heavy", 1000)
    calls = [s for s in heavy if isinstance(s, ToolStep)]
    assert len(calls) == 60 and heavy[-1].kind == "stop"
    assert len({(s.tool, s.result_text) for s in calls}) == 60
    healthy = _steps("healthy", 100)
    assert len(healthy) == 5 and healthy[-1].kind == "stop"
    limited = _steps("hammer", 100, limit=3)
    assert len(limited) == 4 and limited[-1].kind == "timeout"


def test_input_tokens_grow_like_a_context(make_sim):
    sim = make_sim(log=False)
    burner = sim.add_session("burner")
    hammer = sim.add_session("hammer")
    sim.run(calls=20, rate=None)
    conn = read_db(sim.path)
    growth = {}
    for session in (burner, hammer):
        inputs = [e["message"]["usage"]["input"] for e in decoded_events(conn, session.session_id)
                  if e.get("type") == "message" and e["message"]["role"] == "assistant"]
        assert len(inputs) == 10 == session.tool_calls
        growth[session.scenario.name] = {b - a for a, b in itertools.pairwise(inputs)}
    assert growth["burner"] == {6000}
    assert all(50 < step < 200 for step in growth["hammer"])  # real: +64..+95 per turn
    assert burner.output_tokens == 3 * burner.tool_calls


def test_finished_sessions_get_a_final_answer_and_status(make_sim):
    sim = make_sim()
    healthy = sim.add_session("healthy")
    unknown = sim.add_session("unknown_tool")
    sim.run(rate=None)
    conn = read_db(sim.path)
    for session in (healthy, unknown):
        last = decoded_events(conn, session.session_id)[-1]["message"]
        assert last["role"] == "assistant" and last["stopReason"] == "stop"
        assert last["content"][0]["type"] == "text"
        assert session.status == "done"
    assert healthy.tool_calls == 4 and unknown.tool_calls == 10 and unknown.tool_errors == 10


# -- legacy era --

def test_legacy_files_parse_and_match_expected(make_sim):
    sim = make_sim("legacy", split_writes=True)
    run_mix(sim, calls=60)
    store = json.loads((sim.path / "sessions.json").read_text())
    for truth in sim.expected():
        entry = store[truth["key"]]
        assert entry["sessionId"] == truth["session_id"] and entry["status"] == truth["status"]
        path = Path(entry["sessionFile"])
        assert path == sim.path / f"{truth['session_id']}.jsonl"
        text = path.read_text()
        assert text.endswith("\n")
        events = [json.loads(line) for line in text.splitlines()]
        assert events[0]["type"] == "session" and events[0]["id"] == truth["session_id"]
        assert len(events) == truth["events"]
        calls = tool_calls_of(events)
        assert dict(Counter(c["name"] for c in calls)) == truth["tools"]
    assert not list(sim.path.glob("*.tmp")) and not list(sim.path.glob(".*.tmp"))


def test_sessions_json_is_always_valid_while_rewritten(make_sim):
    sim = make_sim("legacy", log=False)
    for name in ("hammer", "pingpong", "drift"):
        sim.add_session(name)
    sim.step(sim.sessions[0])
    store = sim.path / "sessions.json"
    stop = threading.Event()
    reads, failures = [0], []

    def reader() -> None:
        while not stop.is_set():
            try:
                json.loads(store.read_text())
                reads[0] += 1
            except ValueError as error:
                failures.append(error)

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        sim.run(calls=300, rate=None)
    finally:
        stop.set()
        thread.join()
    assert not failures and reads[0] > 10


def test_split_writes_leave_a_partial_line_for_a_moment(tmp_path):
    writer = LegacyWriter(tmp_path, split_writes=True, split_pause=0.3)
    path = writer.transcript_path("s1")
    thread = threading.Thread(target=writer.append_event, args=("s1", {"type": "x", "n": 1}))
    thread.start()
    deadline = time.monotonic() + 5
    partial = None
    while time.monotonic() < deadline and partial is None:
        data = path.read_bytes() if path.exists() else b""
        if data and not data.endswith(b"\n"):
            partial = data
    thread.join()
    writer.close()
    assert partial is not None
    assert json.loads(path.read_text()) == {"type": "x", "n": 1}


def test_reset_archives_the_transcript_and_starts_a_new_generation(make_sim):
    sim = make_sim("legacy", log=False)
    first = sim.add_session("hammer", key="agent:main:r")
    for _ in range(3):
        sim.step(first)
    second = sim.reset_session("agent:main:r")
    sim.step(second)
    archived = list(sim.path.glob(f"{first.session_id}.jsonl.reset.*"))
    assert len(archived) == 1
    assert re.fullmatch(r".*\.jsonl\.reset\.\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{3}Z",
                        archived[0].name)
    store = json.loads((sim.path / "sessions.json").read_text())
    assert store["agent:main:r"]["sessionId"] == second.session_id != first.session_id
    assert [t["session_id"] for t in sim.expected()] == [first.session_id, second.session_id]
    assert sim.expected()[1]["previous_session_id"] == first.session_id


# -- gateway log --

def test_log_lines_have_the_tslog_shape_and_one_trace_per_run(make_sim):
    sim = make_sim(loop_warnings=True)
    hammer = sim.add_session("hammer")
    sim.add_session("healthy")
    sim.run(calls=25, rate=None)
    records = [json.loads(line) for line in sim.log.path.read_text().splitlines()]
    levels = {"DEBUG": 2, "INFO": 3, "WARN": 4, "ERROR": 5}
    traces: dict[str, set[str]] = {}
    for record in records:
        meta = record["_meta"]
        subsystem = json.loads(record["0"])["subsystem"]
        assert meta["name"] == record["0"] and levels[meta["logLevelName"]] == meta["logLevelId"]
        assert set(meta) >= {"runtime", "runtimeVersion", "hostname", "date", "parentNames"}
        assert record["time"].endswith("+00:00") and meta["date"].endswith("Z")
        assert record["message"] == (record["2"] if "2" in record else record["1"])
        assert subsystem and record["hostname"] == meta["hostname"]
        run = re.search(r"runId=([0-9a-f-]{36})", record["message"])
        if run:
            traces.setdefault(run.group(1), set()).add(record["traceId"])
    assert all(len(ids) == 1 for ids in traces.values()) and len(traces) == 2
    messages = [r["message"] for r in records]
    assert any(m.startswith(f"session turn created: runId={hammer.run_id} sessionId="
                            f"{hammer.session_id} sessionKey={hammer.key} agentId=main "
                            "channel=webchat trigger=user") for m in messages)
    start_line = f"embedded run tool start: runId={hammer.run_id}"
    starts = [m for m in messages if m.startswith(start_line)]
    assert len(starts) == hammer.tool_calls
    warnings = [r for r in records if r["message"].startswith("Loop warning: exec called")]
    assert [w["message"] for w in warnings] == [
        "Loop warning: exec called 10 times with identical arguments",
        "Loop warning: exec called 20 times with identical arguments"]
    assert {w["traceId"] for w in warnings} == traces[hammer.run_id]


def test_loop_warnings_follow_the_pattern(make_sim):
    sim = make_sim(loop_warnings=True)
    for name in ("poll", "pingpong", "unknown_tool"):
        sim.add_session(name)
    sim.run(calls=33, rate=None)
    headlines = [json.loads(line)["message"] for line in sim.log.path.read_text().splitlines()
                 if '"agents/loop-detection' in line]
    assert headlines == ["Polling loop warning: process repeated 10 times"]


def test_loop_warnings_are_off_by_default(make_sim):
    sim = make_sim()
    sim.add_session("hammer")
    sim.run(calls=25, rate=None)
    assert "Loop warning" not in sim.log.path.read_text()


# -- CLI --

def test_cli_prints_the_ground_truth(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "monitor.demo.sim", "--state-dir", str(tmp_path), "--scenarios",
         "hammer,healthy", "--calls", "20", "--rate", "0", "--log", str(tmp_path / "gw.log")],
        cwd=REPO, capture_output=True, text=True, timeout=60, check=True)
    summary = json.loads(result.stdout)
    assert [s["scenario"] for s in summary["sessions"]] == ["hammer", "healthy"]
    assert sum(s["tool_calls"] for s in summary["sessions"]) == 20
    conn = read_db(Path(summary["path"]))
    assert conn.execute("SELECT count(*) FROM session_nodes").fetchone()[0] == 2


# -- live behaviour --

def test_a_read_only_reader_sees_events_live_and_in_order(tmp_path):
    sim = Simulator(tmp_path, log_path=None)
    session = sim.add_session("hammer")
    sim.step(session)
    stop = threading.Event()
    writer = threading.Thread(target=sim.run, kwargs={"calls": 40, "rate": 200.0,
                                                      "stop_event": stop})
    writer.start()
    conn = read_db(sim.path)
    seen: list[int] = []
    deadline = time.monotonic() + 10
    try:
        while time.monotonic() < deadline:
            after = seen[-1] if seen else -1
            rows = conn.execute("SELECT seq FROM transcript_events WHERE session_id=? AND seq>?"
                                " ORDER BY seq", (session.session_id, after)).fetchall()
            seen.extend(seq for (seq,) in rows)
            if not writer.is_alive() and not rows:
                break
    finally:
        stop.set()
        writer.join()
        sim.close()
    assert seen == list(range(session.events)) and session.tool_calls == 41


def test_end_session_from_another_thread_while_running(tmp_path):
    sim = Simulator(tmp_path, log_path=tmp_path / "gw.log")
    victim = sim.add_session("hammer", key="agent:main:victim")
    other = sim.add_session("pingpong")
    stop = threading.Event()
    runner = threading.Thread(target=sim.run, kwargs={"rate": 500.0, "stop_event": stop})
    runner.start()
    try:
        deadline = time.monotonic() + 10
        while victim.tool_calls < 5 and time.monotonic() < deadline:
            time.sleep(0.005)
        assert sim.end_session("agent:main:victim")
        frozen = victim.tool_calls
        target = other.tool_calls + 5
        while other.tool_calls < target and time.monotonic() < deadline:
            time.sleep(0.005)
    finally:
        stop.set()
        runner.join(timeout=10)
        sim.close()
    assert not runner.is_alive()
    assert victim.status == "killed" and victim.tool_calls == frozen
    assert other.tool_calls >= target and other.status == "running"


def test_run_stops_after_duration(tmp_path):
    with Simulator(tmp_path) as sim:
        sim.add_session("drift")
        began = time.monotonic()
        written = sim.run(duration=0.3, rate=50.0)
        elapsed = time.monotonic() - began
    assert 0.25 <= elapsed < 1.5 and 5 <= written <= 20


def test_the_package_imports_no_ui_and_no_readers():
    code = ("import sys, monitor.demo.sim; print([m for m in sys.modules"
            " if m.split('.')[0] in ('textual', 'rich') or m.startswith('monitor.sources')])")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                            text=True, timeout=60, check=True)
    assert result.stdout.strip() == "[]"


# -- long runs: bounded disk --

def test_prune_keeps_the_newest_rows_of_each_event_table(make_sim):
    sim = make_sim()
    sim.add_session("hammer")
    sim.run(calls=40, rate=None)
    with read_db(sim.path) as conn:
        before = conn.execute("SELECT rowid, session_id, seq FROM transcript_events "
                              "ORDER BY rowid").fetchall()
    deleted = sim.store.writer.prune(keep_rows=10)
    with read_db(sim.path) as conn:
        after = conn.execute("SELECT rowid, session_id, seq FROM transcript_events "
                             "ORDER BY rowid").fetchall()
    assert after == before[-10:]
    assert deleted >= len(before) - 10
    sim.run(calls=5, rate=None)
    with read_db(sim.path) as conn:
        newest = conn.execute("SELECT max(rowid), max(seq) FROM transcript_events").fetchone()
    assert newest[0] > before[-1][0] and newest[1] > before[-1][2]


def test_rotate_renames_the_log_and_goes_on_in_a_new_file(make_sim):
    sim = make_sim(loop_warnings=True)
    sim.add_session("hammer")
    sim.run(calls=10, rate=None)
    written = sim.log.path.read_text()
    rotated = sim.log.rotate()
    assert rotated.name == "openclaw.log.1" and rotated.read_text() == written
    sim.run(calls=10, rate=None)
    fresh = sim.log.path.read_text()
    assert fresh and not written.endswith(fresh) and fresh.count("\n") >= 1
    assert rotated.read_text() == written

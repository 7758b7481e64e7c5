"""Bad input never crashes a source: it is counted where it was found and what follows flows.

Each case writes good records, the bad thing, then more good records, and checks that the
source's ``errors`` and ``summary()["error_samples"]`` name the path and the offset (files) or
``session_id:seq`` (SQLite), that the good records after it arrive, and that a condition that
persists is reported once, not on every poll. The CLI cases run ``python -m monitor replay``
over such a state dir.
"""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import zstandard
from chaos_writer import AGENT_DDL, assistant_tool_call, dumps, navigation_json, session_header

from monitor.events import GatewayNotice, SessionInfo, SourceError, SourceNotice, ToolCall
from monitor.live import run_live
from monitor.pipeline import Monitor
from monitor.records import ErrorRecord
from monitor.sources.checkpoint import FAILURE_REPORT_SECONDS, CheckpointSaver, CheckpointStore
from monitor.sources.gateway_log import GatewayLogSource
from monitor.sources.legacy import LegacySessionsSource
from monitor.sources.sourceset import RESCAN_SECONDS, SourceSet
from monitor.sources.sqlite_agent import SqliteAgentSource
from monitor.sources.tail import FileFollower

TEN_MB = 10 * 1024 * 1024
DEEP_JSON = b"[" * 100_000 + b"]" * 100_000     # json.loads raises RecursionError on it
SID = "11111111-2222-3333-4444-555555555555"
REPO = Path(__file__).resolve().parent.parent


def call_line(call_id: str) -> bytes:
    return (dumps(assistant_tool_call(call_id, 0)) + "\n").encode()


def log_line(text: str) -> bytes:
    record = {"0": '{"subsystem":"test"}', "1": text, "_meta": {"logLevelName": "INFO"}}
    return (json.dumps(record) + "\n").encode()


def call_ids(events: list) -> list[str]:
    return [e.call_id for e in events if isinstance(e, ToolCall)]


def errors_of(events: list) -> list[SourceError]:
    return [e for e in events if isinstance(e, SourceError)]


def poll_until(source, condition, seconds: float = 10.0) -> list:
    """Poll until ``condition(all events so far)`` holds; return the events."""
    seen: list = []
    deadline = time.monotonic() + seconds
    while True:
        seen.extend(source.poll())
        if condition(seen):
            return seen
        assert time.monotonic() < deadline, f"condition not met; got {seen[-5:]}"
        time.sleep(0.05)


# -------------------------------------------------------------------- bad lines in files

BAD_TRANSCRIPT_LINES = {
    "invalid-json": (b'{"type":"message","message":{"role":', "invalid JSON"),
    "invalid-utf8": (b'{"type":"message","note":"\xff\xfe\xc3"}', "invalid UTF-8"),
    "nul-byte": (b'{"type":"mess\x00age"}', "NUL byte"),
    "unknown-type": (b'{"type":"hologram","id":"h1"}', "unknown entry type"),
    "not-an-object": (b"[1, 2, 3]", "not a JSON object"),
    "message-without-object": (b'{"type":"message","message":"hi"}', "without a message"),
    "ten-megabyte-line": (b'{"type":"message","junk":"' + b"x" * TEN_MB, "invalid JSON"),
    "nested-too-deeply": (b'{"type":"message","message":' + DEEP_JSON + b"}", "nested too deeply"),
}


@pytest.mark.parametrize("kind", list(BAD_TRANSCRIPT_LINES))
def test_bad_transcript_line_is_counted_at_its_offset_and_later_calls_flow(
        tmp_path: Path, kind: str) -> None:
    bad, message = BAD_TRANSCRIPT_LINES[kind]
    transcript = tmp_path / "s1.jsonl"
    transcript.write_bytes(call_line("c1"))
    bad_offset = transcript.stat().st_size
    with open(transcript, "ab") as handle:
        handle.write(bad + b"\n" + call_line("c2"))
    source = LegacySessionsSource(str(tmp_path), "main")
    events = source.poll()
    assert call_ids(events) == ["c1", "c2"]
    [error] = errors_of(events)
    assert (error.path, error.where) == (str(transcript), f"offset {bad_offset}")
    assert message in error.message
    summary = source.summary()
    assert summary["errors"] == 1 and summary["events"] == 4
    assert summary["error_samples"] == [
        {"path": str(transcript), "where": f"offset {bad_offset}", "message": error.message}]
    with open(transcript, "ab") as handle:
        handle.write(call_line("c3"))
    events = source.poll()
    assert call_ids(events) == ["c3"] and errors_of(events) == []
    assert source.errors == 1


BAD_LOG_LINES = {
    "invalid-json": (b'{"0":"{\\"subsystem\\":', "invalid JSON"),
    "invalid-utf8": (b'{"1":"caf\xe9"}', "invalid UTF-8"),
    "nul-byte": (b'{"1":"a\x00b"}', "NUL byte"),
    "not-tslog": (b'{"level":"info"}', "not a tslog record"),
    "not-an-object": (b'"just a string"', "not a JSON object"),
    "ten-megabyte-line": (b"y" * TEN_MB, "invalid JSON"),
    "nested-too-deeply": (b'{"0":' + DEEP_JSON + b', "1":"x"}', "nested too deeply"),
}


@pytest.mark.parametrize("kind", list(BAD_LOG_LINES))
def test_bad_log_line_is_counted_at_its_offset_and_later_lines_flow(
        tmp_path: Path, kind: str) -> None:
    bad, message = BAD_LOG_LINES[kind]
    log = tmp_path / "gw.log"
    log.write_bytes(log_line("first"))
    bad_offset = log.stat().st_size
    with open(log, "ab") as handle:
        handle.write(bad + b"\n" + log_line("second"))
    source = GatewayLogSource(str(log))
    events = source.poll()
    assert [e.message for e in events if isinstance(e, GatewayNotice)] == ["first", "second"]
    [error] = errors_of(events)
    assert (error.path, error.where) == (str(log), f"offset {bad_offset}")
    assert message in error.message
    assert source.summary()["error_samples"][0]["where"] == f"offset {bad_offset}"
    with open(log, "ab") as handle:
        handle.write(log_line("third"))
    assert [e.message for e in source.poll() if isinstance(e, GatewayNotice)] == ["third"]
    assert (source.events, source.errors) == (3, 1)


def test_line_over_the_length_limit_is_skipped_even_when_written_in_pieces(
        tmp_path: Path) -> None:
    path = tmp_path / "big.log"
    path.write_bytes(b"before\n")
    follower = FileFollower(str(path), max_line_bytes=1 << 20)
    assert [line.data for line in follower.poll()] == [b"before"]
    with open(path, "ab") as handle:
        handle.write(b"z" * (3 << 20))
    assert follower.poll() == []
    with open(path, "ab") as handle:
        handle.write(b"z" * (7 << 20) + b"\nafter\n")
    lines = follower.poll()
    assert [(line.data, line.offset) for line in lines] == [(b"after", 7 + TEN_MB + 1)]
    [notice] = [n for n in follower.take_notices() if n.error]
    assert notice.where == "offset 7" and "longer than" in notice.message
    assert follower.pending_bytes == 0


# ------------------------------------------------------------------- unreadable files

def test_chmod_000_transcript_is_an_error_for_a_normal_user(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads mode-000 files; the unopenable-path cases below cover this")
    transcript = tmp_path / "locked.jsonl"
    transcript.write_bytes(call_line("c1"))
    transcript.chmod(0)
    (tmp_path / "ok.jsonl").write_bytes(call_line("ok1"))
    source = LegacySessionsSource(str(tmp_path), "main")
    events = source.poll() + source.poll()
    assert call_ids(events) == ["ok1"]
    [error] = errors_of(events)
    assert error.path == str(transcript) and "Permission denied" in error.message


def make_unreadable(sessions: Path, kind: str) -> Path:
    """A transcript name that cannot be read even by root."""
    path = sessions / f"{kind}.jsonl"
    if kind == "directory":
        path.mkdir()
    elif kind == "symlink-loop":
        path.symlink_to(path.name)
    return path


@pytest.mark.parametrize("kind", ["directory", "symlink-loop"])
def test_unreadable_transcript_is_one_error_and_the_others_flow(tmp_path: Path,
                                                                 kind: str) -> None:
    broken = make_unreadable(tmp_path, kind)
    good = tmp_path / "good.jsonl"
    good.write_bytes(call_line("c1"))
    source = LegacySessionsSource(str(tmp_path), "main")
    events = source.poll()
    assert call_ids(events) == ["c1"]
    [error] = errors_of(events)
    assert error.path == str(broken)
    for call in ("c2", "c3"):
        with open(good, "ab") as handle:
            handle.write(call_line(call))
        events = source.poll()
        assert call_ids(events) == [call]
        assert errors_of(events) == [], "a lasting condition is reported once, not per poll"
    assert source.errors == 1


@pytest.mark.parametrize("kind", ["invalid-json", "directory"])
def test_unreadable_session_index_is_one_error_and_transcripts_flow(tmp_path: Path,
                                                                    kind: str) -> None:
    index = tmp_path / "sessions.json"
    if kind == "directory":
        index.mkdir()
    else:
        index.write_text('{"agent:main:main": {"sessionId": ')
    transcript = tmp_path / "s1.jsonl"
    transcript.write_bytes(call_line("c1"))
    source = LegacySessionsSource(str(tmp_path), "main")
    events = source.poll()
    assert call_ids(events) == ["c1"]
    [error] = errors_of(events)
    assert error.path == str(index) and error.where == "sessions.json"
    with open(transcript, "ab") as handle:
        handle.write(call_line("c2"))
    events = source.poll()
    assert call_ids(events) == ["c2"] and errors_of(events) == []
    if kind == "invalid-json":
        index.write_text('{"agent:main:main": {"sessionId": "s1", "status": "running"}}')
        assert [e.key for e in source.poll() if isinstance(e, SessionInfo)] == [
            "agent:main:main"]
    assert source.errors == 1


def test_log_path_that_is_a_directory_is_one_error(tmp_path: Path) -> None:
    log = tmp_path / "gw.log"
    log.mkdir()
    source = GatewayLogSource(str(log))
    events = source.poll() + source.poll() + source.poll()
    [error] = errors_of(events)
    assert error.path == str(log) and "directory" in error.message.lower()
    assert source.errors == 1


# ------------------------------------------------------------------------------ SQLite

class AgentDb:
    """A small agent DB in OpenClaw's schema (v23 subset), written like the gateway does."""

    def __init__(self, path: Path, *, ddl: str = AGENT_DDL, journal: str = "WAL") -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.conn = sqlite3.connect(path, isolation_level=None)
        self.conn.executescript(ddl)
        self.conn.execute(f"PRAGMA journal_mode = {journal}")
        self.compressor = zstandard.ZstdCompressor(level=1, write_checksum=True)

    def session(self, sid: str = SID, key: str = "agent:main:main") -> None:
        self.conn.execute(
            "INSERT INTO session_nodes (session_key, current_session_id, entry_json,"
            " entry_valid, updated_at, status) VALUES (?, ?, '{}', 1, 1, 'running')", (key, sid))
        self.conn.execute(
            "INSERT INTO session_windows (session_id, session_key, created_at, updated_at)"
            " VALUES (?, ?, 1, 1)", (sid, key))
        self.row(0, session_header(sid), sid=sid)

    def row(self, seq: int, entry: dict | None = None, *, sid: str = SID,
            zstd: bytes | None = None, raw: str | None = None) -> None:
        """One transcript row: ``entry`` as JSON text, ``raw`` text as is, or a zstd blob."""
        text = raw if raw is not None else dumps(entry)
        if zstd is None:
            self.conn.execute("INSERT INTO transcript_events (session_id, seq, event_json,"
                              " created_at) VALUES (?, ?, ?, 1)", (sid, seq, text))
            return
        self.conn.execute(
            "INSERT INTO transcript_events (session_id, seq, event_json, created_at, event_zstd,"
            " event_utf8_bytes, navigation_json) VALUES (?, ?, NULL, 1, ?, ?, ?)",
            (sid, seq, zstd, len(text.encode()), navigation_json(
                {"type": "message", "id": "x", "parentId": None, "timestamp": "t", **(entry or {})},
                len(text.encode()))))

    def call(self, seq: int, *, sid: str = SID, compressed: bool = False) -> None:
        entry = assistant_tool_call(f"call-{seq}", seq)
        blob = self.compressor.compress(dumps(entry).encode()) if compressed else None
        self.row(seq, entry, sid=sid, zstd=blob)

    def close(self) -> None:
        self.conn.close()


def test_bad_sqlite_rows_are_counted_by_seq_and_later_rows_flow(tmp_path: Path) -> None:
    db = AgentDb(tmp_path / "agent.sqlite")
    db.session()
    db.call(1)
    good = assistant_tool_call("call-2", 2)
    blob = db.compressor.compress(dumps(good).encode())
    db.row(2, good, zstd=blob[: len(blob) // 2])
    db.call(3, compressed=True)
    db.row(4, raw='{"type":"message","message":')
    db.row(5, raw='{"type":"hologram"}')
    db.row(6, {"type": "x"}, zstd=b"\x00not zstd at all")
    db.call(7)
    source = SqliteAgentSource(str(db.path), "main")
    events = source.poll()
    assert call_ids(events) == ["call-1", "call-3", "call-7"]
    errors = errors_of(events)
    assert [e.where for e in errors] == [f"{SID}:{seq}" for seq in (2, 4, 5, 6)]
    assert "event_zstd" in errors[0].message and "event JSON" in errors[1].message
    assert "unknown entry type" in errors[2].message and "event_zstd" in errors[3].message
    assert [s["where"] for s in source.summary()["error_samples"]] == [e.where for e in errors]
    db.call(8)
    events = source.poll()
    assert call_ids(events) == ["call-8"] and errors_of(events) == []
    assert source.errors == 4
    db.close()


def test_newer_schema_with_an_extra_column_is_read(tmp_path: Path) -> None:
    ddl = AGENT_DDL.replace("PRAGMA user_version = 23;", "PRAGMA user_version = 99;").replace(
        "  navigation_json TEXT,\n", "  navigation_json TEXT,\n  future_column BLOB,\n")
    db = AgentDb(tmp_path / "agent.sqlite", ddl=ddl)
    assert "future_column" in {r[1] for r in db.conn.execute(
        "PRAGMA table_info(transcript_events)")}
    db.session()
    db.call(1)
    db.call(2, compressed=True)
    source = SqliteAgentSource(str(db.path), "main")
    events = source.poll()
    assert call_ids(events) == ["call-1", "call-2"]
    assert source.errors == 0
    assert any("v99" in e.message and "newer" in e.message
               for e in events if isinstance(e, SourceNotice))
    db.close()


def test_transcript_table_without_event_json_is_one_error_and_sessions_still_read(
        tmp_path: Path) -> None:
    ddl = AGENT_DDL.replace("PRAGMA user_version = 23;", "PRAGMA user_version = 99;").replace(
        "  event_json TEXT,\n", "  event_text TEXT,\n").replace(
        "(event_json IS NOT NULL AND event_zstd IS NULL)", "event_zstd IS NULL").replace(
        "event_json IS NULL AND ", "")
    db = AgentDb(tmp_path / "agent.sqlite", ddl=ddl)
    db.conn.execute(
        "INSERT INTO session_nodes (session_key, current_session_id, entry_json, entry_valid,"
        " updated_at, status) VALUES ('agent:main:main', ?, '{}', 1, 1, 'running')", (SID,))
    db.conn.execute("INSERT INTO transcript_events (session_id, seq, event_text, created_at)"
                    " VALUES (?, 1, 'x', 1)", (SID,))
    source = SqliteAgentSource(str(db.path), "main")
    events = source.poll() + source.poll() + source.poll()
    [error] = errors_of(events)
    assert "event_json" in error.message and error.where == "transcript_events"
    assert [(e.key, e.session_id) for e in events if isinstance(e, SessionInfo)] == [
        ("agent:main:main", SID)]
    assert source.errors == 1
    db.close()


def test_exclusive_lock_is_busy_not_an_error_and_rows_flow_after_it(tmp_path: Path) -> None:
    db = AgentDb(tmp_path / "agent.sqlite", journal="DELETE")
    db.session()
    db.call(1)
    source = SqliteAgentSource(str(db.path), "main")
    assert call_ids(source.poll()) == ["call-1"]
    db.conn.execute("BEGIN EXCLUSIVE")
    db.call(2)
    assert source.poll() == [] and source.poll() == []
    assert source.busy_retries >= 2 and source.errors == 0
    db.conn.execute("COMMIT")
    assert call_ids(source.poll()) == ["call-2"]
    assert source.errors == 0
    db.close()


def test_exclusive_lock_at_first_open_is_busy_not_an_error(tmp_path: Path) -> None:
    db = AgentDb(tmp_path / "agent.sqlite", journal="DELETE")
    db.session()
    db.call(1)
    db.conn.execute("BEGIN EXCLUSIVE")
    source = SqliteAgentSource(str(db.path), "main")
    assert call_ids(source.poll() + source.poll()) == []
    assert source.errors == 0 and source.busy_retries >= 2
    db.conn.execute("COMMIT")
    assert call_ids(source.poll()) == ["call-1"]
    assert source.errors == 0
    db.close()


def test_long_write_transaction_in_wal_mode_is_invisible_until_commit(tmp_path: Path) -> None:
    db = AgentDb(tmp_path / "agent.sqlite")
    db.session()
    db.call(1)
    source = SqliteAgentSource(str(db.path), "main")
    assert call_ids(source.poll()) == ["call-1"]
    db.conn.execute("BEGIN IMMEDIATE")
    for seq in range(2, 50):
        db.call(seq)
    assert call_ids(source.poll()) == []
    db.conn.execute("COMMIT")
    assert call_ids(source.poll()) == [f"call-{seq}" for seq in range(2, 50)]
    assert source.errors == 0
    db.close()


def test_database_that_appears_after_start_is_found(tmp_path: Path) -> None:
    (tmp_path / "agents" / "main" / "sessions").mkdir(parents=True)
    sources = SourceSet(state_dir=str(tmp_path))
    assert [s.kind for s in sources.sources] == ["jsonl"]
    assert sources.poll() == []
    db = AgentDb(tmp_path / "agents" / "main" / "agent" / "openclaw-agent.sqlite")
    db.session()
    db.call(1)
    events = poll_until(sources, lambda seen: call_ids(seen) == ["call-1"],
                        seconds=RESCAN_SECONDS + 10)
    assert errors_of(events) == []
    db.call(2)
    assert call_ids(sources.poll()) == ["call-2"]
    db.close()
    sources.close()


def test_database_replaced_underneath_is_reopened_without_duplicates(tmp_path: Path) -> None:
    path = tmp_path / "agent.sqlite"
    db = AgentDb(path, journal="DELETE")
    db.session()
    db.call(1)
    db.call(2)
    source = SqliteAgentSource(str(path), "main")
    assert call_ids(source.poll()) == ["call-1", "call-2"]
    db.call(3)
    db.close()
    replacement = AgentDb(tmp_path / "new.sqlite", journal="DELETE")
    replacement.conn.execute(f"ATTACH '{path}' AS old")
    for table in ("session_nodes", "session_windows", "transcript_events"):
        replacement.conn.execute(f"INSERT INTO main.{table} SELECT * FROM old.{table}")
    replacement.conn.execute("DETACH old")
    replacement.call(4)
    replacement.close()
    os.replace(tmp_path / "new.sqlite", path)
    events = source.poll()
    assert call_ids(events) == ["call-3", "call-4"]
    assert any("replaced" in e.message for e in events if isinstance(e, SourceNotice))
    assert source.errors == 0


def test_database_replaced_by_one_with_an_older_index_has_its_index_read(
        tmp_path: Path) -> None:
    """Another database moved to the path (a backup restored, a fresh install copied in):
    its session rows are dated before the last one's, and are read all the same."""
    path = tmp_path / "agent.sqlite"
    db = AgentDb(path, journal="DELETE")
    db.session(key="agent:main:before")
    db.conn.execute("UPDATE session_nodes SET updated_at = ?", (int(time.time() * 1000),))
    db.conn.execute("UPDATE session_windows SET updated_at = ?", (int(time.time() * 1000),))
    db.close()
    source = SqliteAgentSource(str(path), "main")
    assert {e.key for e in source.poll() if isinstance(e, SessionInfo)} == {"agent:main:before"}
    other_sid = "66666666-7777-8888-9999-000000000000"
    replacement = AgentDb(tmp_path / "new.sqlite", journal="DELETE")
    replacement.session(sid=other_sid, key="agent:main:restored")
    replacement.call(1, sid=other_sid)
    replacement.close()
    os.replace(tmp_path / "new.sqlite", path)
    events = source.poll()
    assert call_ids(events) == ["call-1"]
    assert {(e.key, e.session_id) for e in events if isinstance(e, SessionInfo)} == {
        ("agent:main:restored", other_sid)}
    assert source.errors == 0
    source.close()


def test_database_replaced_by_garbage_is_one_error_until_it_is_good_again(
        tmp_path: Path) -> None:
    path = tmp_path / "agent.sqlite"
    db = AgentDb(path, journal="DELETE")
    db.session()
    db.call(1)
    db.close()
    source = SqliteAgentSource(str(path), "main")
    assert call_ids(source.poll()) == ["call-1"]
    garbage = tmp_path / "garbage"
    garbage.write_bytes(b"this is not a database " * 200)
    os.replace(garbage, path)
    events = source.poll() + source.poll() + source.poll()
    [error] = errors_of(events)
    assert "not a database" in error.message
    path.unlink()
    db = AgentDb(path, journal="DELETE")
    db.session()
    db.call(1)
    db.call(2)
    db.close()
    events = source.poll()
    assert call_ids(events) == ["call-2"]
    assert source.errors == 1


def test_corrupt_database_is_one_error_until_the_file_changes(tmp_path: Path) -> None:
    path = tmp_path / "agent.sqlite"
    db = AgentDb(path, journal="DELETE")
    db.session()
    for seq in range(1, 400):
        db.call(seq)
    db.close()
    pristine = path.read_bytes()
    page = 4096
    assert len(pristine) > 10 * page
    path.write_bytes(pristine[: 5 * page] + b"\xab" * (3 * page) + pristine[8 * page:])
    source = SqliteAgentSource(str(path), "main")
    events = source.poll() + source.poll() + source.poll()
    [error] = errors_of(events)
    assert "malformed" in error.message
    assert call_ids(events) == []
    repaired = tmp_path / "repaired.sqlite"
    repaired.write_bytes(pristine)
    os.replace(repaired, path)
    assert call_ids(source.poll()) == [f"call-{seq}" for seq in range(1, 400)]
    assert source.errors == 1


# --------------------------------------------------------------------------------- CLI

def run_cli(*args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "monitor", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=str(REPO))


def bad_state_dir(root: Path) -> tuple[Path, Path, dict]:
    """A state dir (legacy transcripts + agent DB) and a log, each with bad records between
    good ones. Returns (state dir, log, errors expected per source kind)."""
    sessions = root / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / "sessions.json").write_text(json.dumps(
        {"agent:main:legacy": {"sessionId": "legacy-1", "status": "running"}}))
    lines = [call_line("j1")] + [bad + b"\n" for bad, _ in BAD_TRANSCRIPT_LINES.values()
                                 if len(bad) < TEN_MB] + [call_line("j2")]
    (sessions / "legacy-1.jsonl").write_bytes(b"".join(lines))
    db = AgentDb(root / "agents" / "main" / "agent" / "openclaw-agent.sqlite")
    db.session()
    db.call(1)
    db.row(2, {"type": "x"}, zstd=b"\x28\xb5\x2f\xfd truncated")
    db.row(3, raw="{not json")
    db.row(5, raw=DEEP_JSON.decode())
    db.call(4, compressed=True)
    db.close()
    log = root / "gw.log"
    log.write_bytes(log_line("one") + b"".join(
        bad + b"\n" for bad, _ in BAD_LOG_LINES.values() if len(bad) < TEN_MB) + log_line("two"))
    expected = {"jsonl": len(lines) - 2, "sqlite": 3, "gateway-log": len(BAD_LOG_LINES) - 1}
    return root, log, expected


def test_replay_cli_over_bad_input_exits_0_and_counts_errors_per_source(
        tmp_path: Path) -> None:
    state, log, expected = bad_state_dir(tmp_path / "state")
    result = run_cli("replay", "--json", "--state-dir", str(state), "--log", str(log))
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    document = json.loads(result.stdout)
    assert {s["kind"]: s["errors"] for s in document["sources"]} == expected
    calls = {s["session_id"]: s["tool_calls"] for s in document["sessions"]}
    assert calls == {"legacy-1": 2, SID: 2}


def test_deeply_nested_index_and_checkpoint_are_errors_not_crashes(tmp_path: Path) -> None:
    state, log, _ = bad_state_dir(tmp_path / "state")
    index = state / "agents" / "main" / "sessions" / "sessions.json"
    index.write_bytes(b'{"agent:main:legacy":' + DEEP_JSON + b"}")
    result = run_cli("replay", "--json", "--state-dir", str(state), "--log", str(log))
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    document = json.loads(result.stdout)
    assert {s["session_id"]: s["tool_calls"] for s in document["sessions"]}["legacy-1"] == 2
    checkpoint = tmp_path / "checkpoint.json"
    checkpoint.write_bytes(DEEP_JSON)
    result = run_cli("watch", "--headless", "--json", "--seconds", "0.5", "--state-dir",
                     str(state), "--log", str(log), "--checkpoint", str(checkpoint))
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Traceback" not in result.stderr


def test_replay_cli_over_unreadable_paths_finishes(tmp_path: Path) -> None:
    state, log, _ = bad_state_dir(tmp_path / "state")
    sessions = state / "agents" / "main" / "sessions"
    make_unreadable(sessions, "directory")
    make_unreadable(sessions, "symlink-loop")
    garbage_db = state / "agents" / "other" / "agent" / "openclaw-agent.sqlite"
    garbage_db.parent.mkdir(parents=True)
    garbage_db.write_bytes(b"this is not a database " * 200)
    try:
        result = run_cli("replay", "--json", "--state-dir", str(state), "--log", str(log),
                         timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail("replay never finished: an unreadable file is re-reported on every pass")
    assert result.returncode == 0, result.stderr
    errors = {s["path"]: s["errors"] for s in json.loads(result.stdout)["sources"]}
    assert errors[str(sessions)] == len(BAD_TRANSCRIPT_LINES) - 1 + 2
    assert errors[str(garbage_db)] == 1


@pytest.mark.parametrize(("args", "named"), [
    (["/nonexistent/agent.sqlite"], "/nonexistent/agent.sqlite"),
    (["--state-dir", "/nonexistent/state"], "/nonexistent/state"),
    (["--log", "/nonexistent/gw.log"], "--log /nonexistent/gw.log"),
    (["--state-dir", "{state}", "--log", "/nonexistent/gw.log"], "--log /nonexistent/gw.log"),
    (["--log", "{state}"], "--log {state}: not a regular file (a directory)"),
    (["--log", "{fifo}"], "--log {fifo}: not a regular file (a FIFO)"),
    (["{fifo}"], "{fifo}: not a regular file or directory (a FIFO)"),
    (["/dev/zero"], "/dev/zero: not a regular file or directory (a character device)"),
    (["--claude-dir", "/nonexistent/claude"], "--claude-dir /nonexistent/claude: no such"),
    (["--codex-dir", "/nonexistent/codex"], "--codex-dir /nonexistent/codex: no such"),
], ids=["path", "state-dir", "log", "log-beside-state-dir", "log-is-a-dir", "log-is-a-fifo",
        "path-is-a-fifo", "path-is-a-device", "claude-dir", "codex-dir"])
def test_replay_cli_over_a_named_input_it_cannot_read_exits_2_with_one_line(
        args: list[str], named: str, tmp_path: Path) -> None:
    state, _, _ = bad_state_dir(tmp_path / "state")
    os.mkfifo(tmp_path / "fifo")
    places = {"state": str(state), "fifo": str(tmp_path / "fifo")}
    result = run_cli("replay", "--json", *(arg.format(**places) for arg in args), timeout=20)
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert named.format(**places) in result.stderr and "Traceback" not in result.stderr


def test_watch_says_it_waits_for_a_named_log_not_there_yet(tmp_path: Path) -> None:
    state, _, _ = bad_state_dir(tmp_path / "state")
    later = tmp_path / "later" / "gateway.log"
    waiting = run_cli("watch", "--headless", "--no-checkpoint", "--seconds", "0.2",
                      "--state-dir", str(state), "--log", str(later), timeout=20)
    assert waiting.returncode == 0, waiting.stderr
    assert f"--log {later} is not there yet; it is read once it appears" in waiting.stderr


def deep_call_transcript(path: Path, depth: int) -> None:
    """A transcript whose one tool call's arguments nest ``depth`` lists deep: decodable,
    but deep enough to exhaust the stack of any recursive consumer after the decoder."""
    nested = "[" * depth + "]" * depth
    call = dumps(assistant_tool_call("deep", 1)).replace('"arguments":{', '"arguments":{"x":'
                                                         + nested + ",", 1)
    assert nested in call
    path.write_text("\n".join([dumps(session_header(SID)), call,
                               dumps(assistant_tool_call("after", 2))]) + "\n")


def test_deeply_nested_arguments_keep_their_call_and_never_stop_the_dashboards_reader(
        tmp_path: Path) -> None:
    from monitor.config import load_config
    from monitor.ui.factory import _monitor_factory
    from monitor.ui.ingest import IngestLoop

    sessions = tmp_path / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    deep_call_transcript(sessions / f"{SID}.jsonl", 900)
    published = []
    make_monitor = _monitor_factory(str(tmp_path), None, load_config(None), time.time)
    loop = IngestLoop(make_monitor, time.time, published.append, poll_seconds=0.05)
    reader = threading.Thread(target=loop.run)
    reader.start()
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not (published and not published[-1].scanning):
            time.sleep(0.05)
        assert reader.is_alive(), "the ingest thread died"
        assert [row.tool_calls for row in published[-1].rows] == [2]
    finally:
        loop.stop()
        reader.join(5)


def test_a_record_the_pipeline_cannot_fold_is_reported_and_the_rest_flow(
        tmp_path: Path, monkeypatch) -> None:
    from monitor.config import load_config
    from monitor.detect.engine import DetectionEngine
    from monitor.pipeline import Monitor
    from monitor.records import as_json_list

    transcript = tmp_path / "s1.jsonl"
    transcript.write_bytes(b"".join(call_line(f"c{n}") for n in range(1, 4)))
    engine = DetectionEngine(load_config(None))
    observe = engine.observe

    def observe_or_fail(key, agent, event):
        if isinstance(event, ToolCall) and event.call_id == "c2":
            raise RecursionError("maximum recursion depth exceeded")
        return observe(key, agent, event)

    monkeypatch.setattr(engine, "observe", observe_or_fail)
    monitor = Monitor(SourceSet(paths=(str(transcript),), replay=True), engine)
    records = as_json_list(monitor.step() + monitor.step())
    errors = [r for r in records if r["type"] == "error" and r["source"] == "internal"]
    assert len(errors) == 1 and "RecursionError" in errors[0]["message"]
    assert str(transcript) in errors[0]["path"]
    assert sum(s.tool_calls for s in monitor.sessions.values()) == 3
    assert monitor.internal_errors == 1


# ------------------------------------------------------------------------- checkpoint


@pytest.mark.parametrize(("where", "env", "why"), [
    ("{tmp}", {}, "not a regular file (a directory)"),
    ("{fifo}", {}, "not a regular file (a FIFO)"),
    ("/proc/nonexistent/dir/cp.json", {}, "cannot write"),
    (None, {"XDG_STATE_HOME": "/proc/nonexistent"}, "cannot write"),
], ids=["directory", "fifo", "in-a-dir-it-cannot-make", "state-home-it-cannot-make"])
def test_watch_with_a_checkpoint_it_cannot_write_exits_2_with_one_line(
        tmp_path: Path, where: str | None, env: dict, why: str) -> None:
    state, log, _ = bad_state_dir(tmp_path / "state")
    os.mkfifo(tmp_path / "fifo")
    checkpoint = ["--checkpoint", where.format(tmp=tmp_path, fifo=tmp_path / "fifo")] \
        if where else []
    result = subprocess.run(
        [sys.executable, "-m", "monitor", "watch", "--headless", "--seconds", "0.5",
         "--state-dir", str(state), "--log", str(log), *checkpoint], capture_output=True,
        text=True, timeout=30, cwd=str(REPO), env={**os.environ, **env})
    assert result.returncode == 2, result.stderr[-2000:]
    (line,) = result.stderr.splitlines()
    assert line.startswith("clawwatch watch: checkpoint ") and why in line
    assert "--no-checkpoint" in line


class FullDisk(CheckpointStore):
    """A checkpoint on a disk with no space left."""

    def save(self, sources: dict) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")


def test_a_checkpoint_save_that_fails_while_watching_is_reported_once_and_watching_goes_on(
        tmp_path: Path) -> None:
    log = tmp_path / "gw.log"
    log.write_bytes(log_line("one"))
    records: list = []
    monitor = Monitor(SourceSet(log_path=str(log)), None)
    try:
        run_live(monitor, records.extend, seconds=0.5, poll_seconds=0.1,
                 store=FullDisk(str(tmp_path / "cp.json")), catch_up_quietly=False,
                 stop=threading.Event())
    finally:
        monitor.sources.close()
    failures = [r for r in records if isinstance(r, ErrorRecord) and r.source == "checkpoint"]
    assert len(failures) == 1, failures
    assert failures[0].message == \
        f"checkpoint {tmp_path / 'cp.json'}: cannot write: No space left on device"


def test_a_failing_save_is_reported_again_when_it_changes_or_after_a_while(
        tmp_path: Path) -> None:
    now = [0.0]
    saver = CheckpointSaver(FullDisk(str(tmp_path / "cp.json")), clock=lambda: now[0])
    assert "No space left" in saver.save({})
    now[0] = FAILURE_REPORT_SECONDS - 1
    assert saver.save({}) is None
    now[0] = FAILURE_REPORT_SECONDS + 1
    assert "No space left" in saver.save({})
    saver.store = CheckpointStore(str(tmp_path / "cp.json"))
    assert saver.save({}) is None and (tmp_path / "cp.json").exists()
    saver.store = FullDisk(str(tmp_path / "cp.json"))
    assert "No space left" in saver.save({})

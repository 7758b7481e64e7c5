"""A crafted agent DB never stops the reader: rows of the wrong type are reported and skipped.

OpenClaw's tables are ``STRICT``; a database crafted (or written by something else) with the
same schema but without ``STRICT`` and without column types stores whatever it is given: an
``updated_at`` as text, ``entry_json`` as an integer, a ``session_id`` as NULL, an integer or
a blob, a ``seq`` as text or a blob. Each such row must be reported (the database's path and
``table/rowid N``) and skipped while the good sessions' rows flow, through ``replay --json``,
``watch --headless`` and the ``stop --kill`` evidence readers (``monitor/act/exec_calls.py``,
``monitor/act/background_execs.py``).
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from chaos_writer import AGENT_DDL, assistant_tool_call, dumps, session_header
from hypothesis import given
from hypothesis import strategies as st

from monitor import replay_shards
from monitor.act.background_execs import running_background_execs
from monitor.act.exec_calls import recent_exec_calls
from monitor.config import Config
from monitor.detect.engine import DetectionEngine
from monitor.events import SessionInfo, SourceError, ToolCall
from monitor.replay import ReplayInput, replay
from monitor.sources import sqlite_event_rows
from monitor.sources.sqlite_agent import SqliteAgentSource
from monitor.sources.sqlite_ro import BadRow, check_each, check_row

REPO = Path(__file__).resolve().parent.parent
GOOD_SID = "11111111-2222-3333-4444-555555555555"
GOOD_KEY = "agent:main:good"
OTHER_SID = "66666666-7777-8888-9999-000000000000"
OTHER_KEY = "agent:main:other"
NOW_MS = int(time.time() * 1000)


def loose_ddl(*, nullable: bool = False) -> str:
    """OpenClaw's agent schema without ``STRICT`` and without column types (so no affinity
    converts a value either): SQLite stores whatever it is given. ``nullable`` also drops
    the ``NOT NULL`` constraints."""
    ddl = AGENT_DDL.replace(") STRICT;", ");")
    ddl = re.sub(r"^(\s+[a-z_]+) (TEXT|INTEGER|BLOB)\b", r"\1", ddl, flags=re.MULTILINE)
    return re.sub(r"(?<!IS) NOT NULL", "", ddl) if nullable else ddl


def make_db(path: Path, *, nullable: bool = False) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript(loose_ddl(nullable=nullable))
    assert "STRICT" not in conn.execute(
        "SELECT sql FROM sqlite_master WHERE name = 'session_nodes'").fetchone()[0]
    return conn


def add_node(conn, key, sid, *, entry_json="{}", updated_at=NOW_MS) -> None:
    conn.execute("INSERT INTO session_nodes (session_key, current_session_id, entry_json, "
                 "entry_valid, updated_at, status) VALUES (?, ?, ?, 1, ?, 'running')",
                 (key, sid, entry_json, updated_at))


def add_window(conn, sid, key, *, updated_at=NOW_MS) -> None:
    conn.execute("INSERT INTO session_windows (session_id, session_key, created_at, updated_at,"
                 " status, model) VALUES (?, ?, 1, ?, 'running', 'm')", (sid, key, updated_at))


def add_row(conn, sid, seq, entry: dict) -> None:
    conn.execute("INSERT INTO transcript_events (session_id, seq, event_json, created_at) "
                 "VALUES (?, ?, ?, ?)", (sid, seq, dumps(entry), NOW_MS))


def add_session(conn, key: str, sid: str, calls: int) -> None:
    add_node(conn, key, sid)
    add_window(conn, sid, key)
    add_row(conn, sid, 0, session_header(sid))
    for seq in range(1, calls + 1):
        add_row(conn, sid, seq, assistant_tool_call(f"{key}-call-{seq}", seq))


def bad_node_updated_text(conn):
    add_node(conn, OTHER_KEY, OTHER_SID, updated_at="yesterday")


def bad_node_entry_int(conn):
    add_node(conn, OTHER_KEY, OTHER_SID, entry_json=42)


def bad_window_sid_int(conn):
    add_window(conn, 99, OTHER_KEY)


def bad_window_sid_null(conn):
    add_window(conn, None, OTHER_KEY)


def bad_window_updated_text(conn):
    add_window(conn, OTHER_SID, OTHER_KEY, updated_at="x")


def bad_seq_text(conn):
    add_row(conn, GOOD_SID, "zz", assistant_tool_call("bad-call", 99))


def bad_seq_blob(conn):
    add_row(conn, GOOD_SID, b"\x01", assistant_tool_call("bad-call", 99))


def bad_sid_int(conn):
    for seq in range(3):
        add_row(conn, 5, seq, assistant_tool_call(f"bad-call-{seq}", seq))


def bad_sid_blob(conn):
    for seq in range(3):
        add_row(conn, b"\x1b]0;x\x07", seq, assistant_tool_call(f"bad-call-{seq}", seq))


#: Text that is not UTF-8 (a lone continuation byte, then a terminal escape).
NOT_UTF8 = b"sid-\x80\x1b]0;x\x07"


def not_utf8_node_entry(conn):
    conn.execute("INSERT INTO session_nodes (session_key, current_session_id, entry_json, "
                 "entry_valid, updated_at, status) VALUES (?, ?, CAST(? AS TEXT), 1, ?, "
                 "'running')", (OTHER_KEY, OTHER_SID, b'{"x":"\xff"}', NOW_MS))


def not_utf8_window_sid(conn):
    conn.execute("INSERT INTO session_windows (session_id, session_key, created_at, "
                 "updated_at, status, model) VALUES (CAST(? AS TEXT), ?, 1, ?, 'running', "
                 "'m')", (NOT_UTF8, OTHER_KEY, NOW_MS))


def not_utf8_row_sid(conn):
    for seq in range(3):
        conn.execute("INSERT INTO transcript_events (session_id, seq, event_json, created_at) "
                     "VALUES (CAST(? AS TEXT), ?, ?, ?)",
                     (NOT_UTF8, seq, dumps(assistant_tool_call(f"bad-call-{seq}", seq)),
                      NOW_MS))


#: name -> (writes the bad rows, needs NOT NULL dropped, the table the error names)
CASES = {
    "session_nodes.updated_at-text": (bad_node_updated_text, False, "session_nodes"),
    "session_nodes.entry_json-integer": (bad_node_entry_int, False, "session_nodes"),
    "session_windows.session_id-integer": (bad_window_sid_int, False, "session_windows"),
    "session_windows.session_id-null": (bad_window_sid_null, True, "session_windows"),
    "session_windows.updated_at-text": (bad_window_updated_text, False, "session_windows"),
    "transcript_events.seq-text": (bad_seq_text, False, "transcript_events"),
    "transcript_events.seq-blob": (bad_seq_blob, False, "transcript_events"),
    "transcript_events.session_id-integer": (bad_sid_int, False, "transcript_events"),
    "transcript_events.session_id-blob": (bad_sid_blob, False, "transcript_events"),
    "session_nodes.entry_json-not-utf8": (not_utf8_node_entry, False, "session_nodes"),
    "session_windows.session_id-not-utf8": (not_utf8_window_sid, False, "session_windows"),
    "transcript_events.session_id-not-utf8": (not_utf8_row_sid, False, "transcript_events"),
}


def crafted_state(root: Path, case: str) -> tuple[Path, Path]:
    """A state dir whose agent DB holds one good session (3 calls) and the case's bad rows."""
    write_bad, nullable, _ = CASES[case]
    db_path = root / "state" / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    conn = make_db(db_path, nullable=nullable)
    add_session(conn, GOOD_KEY, GOOD_SID, 3)
    write_bad(conn)
    conn.close()
    return root / "state", db_path


def run_cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = dict(os.environ, HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"),
               XDG_STATE_HOME=str(home / ".state"))
    return subprocess.run([sys.executable, "-m", "monitor", *args], capture_output=True,
                          text=True, timeout=60, cwd=str(REPO), env=env)


@pytest.mark.parametrize("case", sorted(CASES))
def test_replay_reports_and_skips_each_row_of_the_wrong_type(tmp_path, case):
    state, db_path = crafted_state(tmp_path, case)
    (tmp_path / "empty.log").write_text("")       # not a log found elsewhere on this machine
    result = run_cli(tmp_path, "replay", "--json", "--state-dir", str(state),
                     "--log", str(tmp_path / "empty.log"))
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    assert result.returncode == 0, result.stderr[-2000:]
    document = json.loads(result.stdout)
    [source] = [s for s in document["sources"] if s["kind"] == "sqlite"]
    assert source["errors"] >= 1
    table = CASES[case][2]
    wheres = [(sample["path"], sample["where"]) for sample in source["error_samples"]]
    assert any(path == str(db_path) and re.fullmatch(rf"{table}/rowid \d+", where)
               for path, where in wheres), wheres
    sessions = {s["key"]: s for s in document["sessions"]}
    assert sessions[GOOD_KEY]["tool_calls"] == 3
    assert sessions[GOOD_KEY]["session_id"] == GOOD_SID


@pytest.mark.parametrize("case", sorted(CASES))
def test_watch_headless_survives_each_row_of_the_wrong_type(tmp_path, case):
    state, _ = crafted_state(tmp_path, case)
    result = run_cli(tmp_path, "watch", "--headless", "--from-start", "--no-checkpoint",
                     "--seconds", "2", "--state-dir", str(state),
                     "--log", str(tmp_path / "no.log"))
    assert "Traceback" not in result.stderr + result.stdout, result.stderr[-2000:]
    assert result.returncode == 0, result.stderr[-2000:]
    assert "row skipped" in result.stdout + result.stderr


def not_utf8_event_state(root: Path) -> tuple[Path, Path]:
    """A state dir in OpenClaw's own (``STRICT``) schema: the good session's third row is
    text that is not UTF-8, a call follows it, and another session follows that one."""
    db_path = root / "state" / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    db_path.parent.mkdir(parents=True)
    conn = sqlite3.connect(db_path, isolation_level=None)
    conn.executescript(AGENT_DDL)
    add_session(conn, GOOD_KEY, GOOD_SID, 2)
    conn.execute("INSERT INTO transcript_events (session_id, seq, event_json, created_at) "
                 "VALUES (?, 3, CAST(? AS TEXT), ?)",
                 (GOOD_SID, b'{"type":"message","x":"\xff\x1b]0;x\x07"}', NOW_MS))
    add_row(conn, GOOD_SID, 4, assistant_tool_call(f"{GOOD_KEY}-call-4", 4))
    add_session(conn, OTHER_KEY, OTHER_SID, 3)
    conn.close()
    return root / "state", db_path


@pytest.mark.parametrize("jobs", [1, 2])
def test_an_event_that_is_not_utf8_loses_only_its_row(tmp_path, monkeypatch, jobs):
    """Python's sqlite3 fails a whole query on such a text: the session's later rows and
    every session read after it were lost, and a replay's shard did not even count it."""
    state, db_path = not_utf8_event_state(tmp_path)
    monkeypatch.setattr(replay_shards, "BYTES_PER_JOB", 1)
    document = replay(ReplayInput(state_dir=str(state), log_path=None), Config(),
                      DetectionEngine, jobs)
    sessions = {s["key"]: s for s in document["sessions"]}
    assert sessions[GOOD_KEY]["tool_calls"] == 3
    assert sessions[OTHER_KEY]["tool_calls"] == 3
    [source] = [s for s in document["sources"] if s["kind"] == "sqlite"]
    assert source["errors"] == 1
    [sample] = source["error_samples"]
    assert (sample["path"], sample["where"]) == (str(db_path), f"{GOOD_SID}:3")
    assert "utf-8" in sample["message"] and "\x1b" not in sample["message"]


def test_kill_evidence_reads_past_text_that_is_not_utf8(tmp_path):
    state, _ = not_utf8_event_state(tmp_path)
    conn = sqlite3.connect(state / "agents" / "main" / "agent" / "openclaw-agent.sqlite")
    conn.execute("INSERT INTO session_nodes (session_key, current_session_id, entry_json, "
                 "entry_valid, updated_at, status) VALUES (CAST(? AS TEXT), ?, '{}', 1, ?, "
                 "'running')", (b"agent:main:\xff", OTHER_SID, NOW_MS))
    conn.commit()
    conn.close()
    calls = {(c.session_key, c.call_id) for c in recent_exec_calls(str(state))}
    assert (GOOD_KEY, f"{GOOD_KEY}-call-4") in calls
    assert (OTHER_KEY, f"{OTHER_KEY}-call-3") in calls


def test_a_utf16_database_is_read_as_text(tmp_path, monkeypatch):
    """SQLite stores a database's text as UTF-16 when it was created so: its event JSON is
    read as text, through the typed decoder (the bytes of a UTF-16 text are JSON only the
    full read takes)."""
    real_parse_entry = sqlite_event_rows.parse_entry

    def full_read(entry, sid, origin):
        assert entry.get("type") != "message", "a message of a UTF-16 database read in full"
        return real_parse_entry(entry, sid, origin)

    monkeypatch.setattr(sqlite_event_rows, "parse_entry", full_read)
    db_path = tmp_path / "openclaw-agent.sqlite"
    conn = sqlite3.connect(db_path, isolation_level=None)
    conn.execute("PRAGMA encoding = 'UTF-16le'")
    conn.executescript(AGENT_DDL)
    add_session(conn, GOOD_KEY, GOOD_SID, 3)
    conn.close()
    source = SqliteAgentSource(str(db_path), "main")
    events = source.poll()
    assert [e.call_id for e in events if isinstance(e, ToolCall)] == [
        f"{GOOD_KEY}-call-{n}" for n in (1, 2, 3)]
    assert not [e for e in events if isinstance(e, SourceError)]
    source.close()


def test_an_agent_dir_named_in_bytes_that_are_not_utf8_is_read(tmp_path):
    """An agent id is a directory's name, and a name is bytes: one that is not UTF-8 reaches
    Python as surrogates, which SQLite's URI must carry as the bytes they stand for."""
    state = tmp_path / "state"
    agent_dir = os.fsdecode(os.fsencode(state) + b"/agents/m\xff/agent")
    try:
        os.makedirs(agent_dir)
    except OSError as exc:          # a file system that takes UTF-8 names only
        pytest.skip(f"no such name here: {exc}")
    conn = sqlite3.connect(os.path.join(agent_dir, "openclaw-agent.sqlite"),
                           isolation_level=None)
    conn.executescript(AGENT_DDL)
    add_session(conn, GOOD_KEY, GOOD_SID, 3)
    conn.close()
    (tmp_path / "empty.log").write_text("")
    result = run_cli(tmp_path, "replay", "--json", "--state-dir", str(state),
                     "--log", str(tmp_path / "empty.log"))
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr[-2000:]
    document = json.loads(result.stdout)
    [session] = [s for s in document["sessions"] if s["key"] == GOOD_KEY]
    assert session["tool_calls"] == 3 and session["agent_id"] == "m\udcff"
    assert "\\udcff" in result.stdout         # escaped: the output is UTF-8
    calls = {c.call_id for c in recent_exec_calls(str(state))}
    assert f"{GOOD_KEY}-call-3" in calls


def test_bad_rows_are_reported_once_and_later_rows_flow(tmp_path):
    """In process, across polls: every bad shape at once, each reported once however often
    it is read again, and rows written afterwards still arrive."""
    db_path = tmp_path / "openclaw-agent.sqlite"
    conn = make_db(db_path)
    add_session(conn, GOOD_KEY, GOOD_SID, 2)
    add_node(conn, "agent:main:n1", "sid-n1", updated_at="yesterday")
    add_node(conn, "agent:main:n2", "sid-n2", entry_json=42)
    add_node(conn, 12345, "sid-n3")
    add_window(conn, 99, "agent:main:w1")
    add_window(conn, "sid-w2", "agent:main:w2", updated_at="x")
    add_window(conn, "sid-w3", b"blob-key")
    bad_seq_text(conn)
    bad_seq_blob(conn)
    bad_sid_int(conn)
    bad_sid_blob(conn)
    source = SqliteAgentSource(str(db_path), "main", sweep_seconds=0)
    events = source.poll()
    errors = [e for e in events if isinstance(e, SourceError)]
    assert [e.call_id for e in events if isinstance(e, ToolCall)] == [
        f"{GOOD_KEY}-call-1", f"{GOOD_KEY}-call-2"]
    assert len(errors) >= 7 and all("row skipped" in e.message for e in errors)
    for _ in range(3):              # read again on every sweep, never reported again
        assert not [e for e in source.poll() if isinstance(e, SourceError)]
    add_row(conn, GOOD_SID, 3, assistant_tool_call(f"{GOOD_KEY}-call-3", 3))
    add_node(conn, "agent:main:late", "late-sid", updated_at=NOW_MS + 10)
    events = source.poll()
    assert [e.call_id for e in events if isinstance(e, ToolCall)] == [f"{GOOD_KEY}-call-3"]
    assert any(getattr(e, "key", None) == "agent:main:late" for e in events)
    assert source.errors == len(errors)
    conn.close()


def test_an_unexpected_failure_on_one_row_is_reported_and_the_poll_goes_on(tmp_path,
                                                                           monkeypatch):
    db_path = tmp_path / "openclaw-agent.sqlite"
    conn = make_db(db_path)
    add_session(conn, GOOD_KEY, GOOD_SID, 3)
    conn.close()
    def failing_on_row_2(real):
        def read(entry, sid, origin):
            if origin.endswith(":2"):
                raise RuntimeError("a bug nobody foresaw")
            return real(entry, sid, origin)
        return read

    for reader in ("typed_events", "parse_entry"):       # the row's typed and full reads
        monkeypatch.setattr(sqlite_event_rows, reader,
                            failing_on_row_2(getattr(sqlite_event_rows, reader)))
    source = SqliteAgentSource(str(db_path), "main")
    events = source.poll()
    assert [e.call_id for e in events if isinstance(e, ToolCall)] == [
        f"{GOOD_KEY}-call-1", f"{GOOD_KEY}-call-3"]
    [error] = [e for e in events if isinstance(e, SourceError)]
    assert error.where == f"{GOOD_SID}:2" and "internal" in error.message
    assert source.seq_cursor[GOOD_SID] == 3


def test_a_window_that_says_what_its_node_says_gives_no_second_record(tmp_path):
    """A session's current window repeats its node (key, status, model, provider): read in
    the same poll it gives no record (folded after the node's it would change nothing); an
    earlier generation's window, and a window that changes later, give their own."""
    db_path = tmp_path / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    db_path.parent.mkdir(parents=True)
    conn = sqlite3.connect(db_path, isolation_level=None)
    conn.executescript(AGENT_DDL)
    conn.execute("INSERT INTO session_nodes (session_key, current_session_id, entry_json, "
                 "entry_valid, updated_at, status) VALUES (?, ?, ?, 1, ?, 'running')",
                 (GOOD_KEY, GOOD_SID, dumps({"model": "m", "modelProvider": "p"}), NOW_MS))
    for sid, status in ((OTHER_SID, "done"), (GOOD_SID, "running")):
        conn.execute("INSERT INTO session_windows (session_id, session_key, created_at, "
                     "updated_at, status, model_provider, model) VALUES (?, ?, 1, ?, ?, 'p', "
                     "'m')", (sid, GOOD_KEY, NOW_MS, status))
    source = SqliteAgentSource(str(db_path), "main")
    infos = [e for e in source.poll() if isinstance(e, SessionInfo)]
    assert [(e.session_id, e.status, e.origin.rsplit("#", 1)[1]) for e in infos] == [
        (GOOD_SID, "running", f"node:{GOOD_KEY}"), (OTHER_SID, "done", f"window:{OTHER_SID}")]
    conn.execute("UPDATE session_windows SET status = 'done', updated_at = ? "
                 "WHERE session_id = ?", (NOW_MS + 1, GOOD_SID))
    infos = [e for e in source.poll() if isinstance(e, SessionInfo)]
    assert [(e.session_id, e.status, e.origin.rsplit("#", 1)[1]) for e in infos] == [
        (GOOD_SID, "done", f"window:{GOOD_SID}")]
    source.close()
    conn.close()


def test_a_row_dated_in_the_far_future_hides_no_later_update(tmp_path):
    """One node and one window with ``updated_at`` at the end of time: the sessions updated
    after them (a run killed, a window ended) are still read, in this run and after a
    restart from a checkpoint saved by a reader that let its watermark jump there."""
    db_path = tmp_path / "openclaw-agent.sqlite"
    conn = make_db(db_path)
    add_session(conn, GOOD_KEY, GOOD_SID, 1)
    far = 2**53 - 1
    add_node(conn, "agent:main:future", "future-sid", updated_at=far)
    add_window(conn, "future-sid", "agent:main:future", updated_at=far)
    source = SqliteAgentSource(str(db_path), "main")
    first = [e for e in source.poll() if isinstance(e, SessionInfo)]
    assert {e.key for e in first} == {GOOD_KEY, "agent:main:future"}
    conn.execute("UPDATE session_nodes SET status = 'killed', updated_at = ? "
                 "WHERE session_key = ?", (int(time.time() * 1000) + 1, GOOD_KEY))
    infos = [e for e in source.poll() if isinstance(e, SessionInfo)]
    assert [(e.key, e.status) for e in infos] == [(GOOD_KEY, "killed")]
    assert not [e for e in source.poll() if isinstance(e, SessionInfo)]
    saved = {**source.checkpoint(), "nodes": far, "windows": far}
    source.close()
    conn.execute("UPDATE session_windows SET status = 'done', updated_at = ? "
                 "WHERE session_id = ?", (int(time.time() * 1000) + 1, GOOD_SID))
    resumed = SqliteAgentSource(str(db_path), "main", resume=saved)
    infos = [e for e in resumed.poll() if isinstance(e, SessionInfo)]
    assert (GOOD_SID, "done") in {(e.session_id, e.status) for e in infos}
    resumed.close()
    conn.close()


def test_a_transcript_table_without_rowid_is_read_once_through(tmp_path):
    """A ``transcript_events`` declared ``WITHOUT ROWID`` (its rows clustered by its primary
    key) has no rowid to search: every read of it failed (``no such column: rowid``) and no
    transcript was read. It is swept instead: each row read once, a bad one reported once."""
    state = tmp_path / "state"
    db_path = state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    db_path.parent.mkdir(parents=True)
    ddl = re.sub(r"(CREATE TABLE IF NOT EXISTS transcript_events \(.*?\)) STRICT;",
                 r"\1 STRICT, WITHOUT ROWID;", AGENT_DDL, flags=re.DOTALL)
    assert "WITHOUT ROWID" in ddl
    conn = sqlite3.connect(db_path, isolation_level=None)
    conn.executescript(ddl)
    add_session(conn, GOOD_KEY, GOOD_SID, 2)
    source = SqliteAgentSource(str(db_path), "main")
    events = source.poll()
    assert [e.call_id for e in events if isinstance(e, ToolCall)] == [
        f"{GOOD_KEY}-call-1", f"{GOOD_KEY}-call-2"]
    assert not [e for e in events if isinstance(e, SourceError)]
    add_session(conn, OTHER_KEY, OTHER_SID, 1)
    add_row(conn, GOOD_SID, 3, assistant_tool_call(f"{GOOD_KEY}-call-3", 3))
    conn.execute("INSERT INTO transcript_events (session_id, seq, event_json, created_at) "
                 "VALUES (?, ?, ?, ?)", (GOOD_SID, 4, "{not json", NOW_MS))
    events = source.poll() + source.poll() + source.poll()
    assert sorted(e.call_id for e in events if isinstance(e, ToolCall)) == [
        f"{GOOD_KEY}-call-3", f"{OTHER_KEY}-call-1"]
    assert [e.where for e in events if isinstance(e, SourceError)] == [f"{GOOD_SID}:4"]
    source.close()
    conn.close()
    (tmp_path / "empty.log").write_text("")
    result = run_cli(tmp_path, "replay", "--json", "--state-dir", str(state),
                     "--log", str(tmp_path / "empty.log"))
    assert result.returncode == 0, result.stderr[-2000:]
    sessions = {s["key"]: s for s in json.loads(result.stdout)["sessions"]}
    assert (sessions[GOOD_KEY]["tool_calls"], sessions[OTHER_KEY]["tool_calls"]) == (3, 1)


def test_compressed_events_are_read_without_a_decoded_size_column(tmp_path):
    """A schema with ``event_zstd`` but no ``event_utf8_bytes``: each compressed event was
    read as 'row has neither event_json nor event_zstd', and its call lost."""
    import zstandard

    db_path = tmp_path / "openclaw-agent.sqlite"
    conn = make_db(db_path)
    conn.executescript("""
        DROP TABLE transcript_events;
        CREATE TABLE transcript_events (session_id TEXT NOT NULL, seq INTEGER NOT NULL,
          event_json TEXT, event_zstd BLOB, created_at INTEGER NOT NULL,
          PRIMARY KEY (session_id, seq));""")
    add_session(conn, GOOD_KEY, GOOD_SID, 1)
    blob = zstandard.ZstdCompressor().compress(
        dumps(assistant_tool_call(f"{GOOD_KEY}-call-2", 2)).encode())
    conn.execute("INSERT INTO transcript_events (session_id, seq, event_zstd, created_at) "
                 "VALUES (?, 2, ?, ?)", (GOOD_SID, blob, NOW_MS))
    source = SqliteAgentSource(str(db_path), "main")
    events = source.poll()
    assert [e.call_id for e in events if isinstance(e, ToolCall)] == [
        f"{GOOD_KEY}-call-1", f"{GOOD_KEY}-call-2"]
    assert not [e for e in events if isinstance(e, SourceError)]
    source.close()
    conn.close()


def test_check_row_accepts_only_the_declared_types():
    spec = (("key", "text"), ("updated_at", "int?"), ("label", "opt-text"))
    assert check_row(("k", 5, 3.5), spec) == ("k", 5, None)
    assert check_row(("k", None, "x"), spec) == ("k", None, "x")
    for row in ((5, 1, None), (None, 1, None), ("k", "1", None), ("k", b"1", None),
                ("k", 1.0, None), ("k", True, None), ("k", -1, None), ("k", 2**63 - 1, None),
                ("k", 1)):
        with pytest.raises(BadRow):
            check_row(row, spec)


SQL_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-2**63, 2**63 - 1),
                       st.integers(0, 2**53 + 2), st.floats(allow_nan=False), st.text(max_size=4),
                       st.binary(max_size=4))


@given(st.lists(st.sampled_from(("int", "int?", "text", "text?", "opt-text")),
                min_size=1, max_size=6).flatmap(
    lambda kinds: st.tuples(st.just(tuple((f"c{at}", kind) for at, kind in enumerate(kinds))),
                            st.lists(SQL_VALUES, min_size=len(kinds) - 1,
                                     max_size=len(kinds) + 1).map(tuple))))
def test_check_row_fast_path_agrees_with_the_value_by_value_check(spec_and_row):
    """The fast path of plain rows gives what the check value by value gives: the same
    row, or the same refusal."""
    spec, row = spec_and_row
    try:
        expected: object = check_each(row, spec)
    except BadRow as exc:
        expected = ("refused", str(exc))
    try:
        got: object = check_row(row, spec)
    except BadRow as exc:
        got = ("refused", str(exc))
    assert got == expected and type(got) is type(expected)


# ------------------------------------------------------------------ stop --kill evidence

TASK_RUNS_LOOSE = """CREATE TABLE task_runs (task_id PRIMARY KEY, task_kind,
  requester_session_key, run_id, task, status, created_at, started_at)"""


def test_kill_evidence_ignores_rows_of_the_wrong_type(tmp_path):
    state = tmp_path / "state"
    conn = make_db(state / "agents" / "main" / "agent" / "openclaw-agent.sqlite",
                   nullable=True)
    exec_call = {"type": "message", "message": {"role": "assistant", "content": [
        {"type": "toolCall", "id": "call-ok", "name": "exec",
         "arguments": {"command": "sleep 600"}}]}}
    add_node(conn, GOOD_KEY, GOOD_SID)
    add_row(conn, GOOD_SID, 1, exec_call)
    conn.execute("INSERT INTO transcript_events (session_id, seq, event_json, created_at) "
                 "VALUES (?, 2, 12, 'noon')", (GOOD_SID,))
    conn.execute("INSERT INTO transcript_events (session_id, seq, event_json, created_at) "
                 "VALUES (?, 3, 1.5, ?)", (GOOD_SID, NOW_MS))
    conn.execute("INSERT INTO transcript_events (session_id, seq, event_json, created_at, "
                 "event_zstd, event_utf8_bytes, navigation_json) "
                 "VALUES (?, 4, NULL, ?, 'not a blob', 10, '{}')", (GOOD_SID, NOW_MS))
    for key, sid in ((12345, "sid-int-key"), (None, "sid-null-key"), ("agent:main:x", 7),
                     ("agent:main:y", b"\x00blob"), (b"blob-key", "sid-blob-key")):
        add_node(conn, key, sid)
        add_row(conn, sid, 1, exec_call)
    add_node(conn, "agent:main:when", "sid-when", updated_at="soon")
    add_row(conn, "sid-when", "one", exec_call)
    conn.close()
    global_db = state / "state" / "openclaw.sqlite"
    global_db.parent.mkdir(parents=True)
    with sqlite3.connect(global_db) as gconn:
        gconn.execute(TASK_RUNS_LOOSE)
        rows = [("t1", "exec", 42, "exec:a", "sleep 1", "running", NOW_MS, NOW_MS),
                ("t2", "exec", b"key", "exec:b", "sleep 1", "running", NOW_MS, NOW_MS),
                ("t3", "exec", "agent:main:t3", 7, 5, "running", "now", b"x"),
                ("t4", "exec", "agent:main:t4", b"exec:c", None, "running", 1e300, None),
                ("t5", "exec", "agent:main:ok", "exec:calm-reef", "sleep 9", "running",
                 NOW_MS, NOW_MS)]
        gconn.executemany("INSERT INTO task_runs VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
    calls = recent_exec_calls(str(state))
    assert {(c.session_key, c.call_id, c.command) for c in calls} >= {
        (GOOD_KEY, "call-ok", "sleep 600")}
    assert all(isinstance(c.session_key, str) for c in calls)
    tasks = {t.session_key: t for t in running_background_execs(str(state))}
    assert tasks["agent:main:ok"].process_session == "calm-reef"
    assert set(tasks) <= {"agent:main:ok", "agent:main:t3", "agent:main:t4"}
    t3 = tasks["agent:main:t3"]
    assert t3.process_session is None and t3.command == "" and t3.started_at is None


def test_kill_evidence_reads_zstd_rows_with_the_source_own_bounds(tmp_path):
    """The evidence reader decompresses ``event_zstd`` with the source's decoder: a good
    blob gives its exec call; one whose frame declares more than an event may hold, or
    that holds more than that, gives none (and the rows after it still count)."""
    import struct

    import zstandard

    from monitor.sources.event_blob import MAX_EVENT_BYTES

    state = tmp_path / "state"
    conn = make_db(state / "agents" / "main" / "agent" / "openclaw-agent.sqlite",
                   nullable=True)
    add_node(conn, GOOD_KEY, GOOD_SID)

    def exec_call(call_id: str, command: str) -> bytes:
        return dumps({"type": "message", "message": {"role": "assistant", "content": [
            {"type": "toolCall", "id": call_id, "name": "exec",
             "arguments": {"command": command}}]}}).encode()

    liar = exec_call("call-liar", "sleep 1")
    declares_more = struct.pack("<IBQ", 0xFD2FB528, 0xE0, MAX_EVENT_BYTES + 1) \
        + ((len(liar) << 3) | 1).to_bytes(3, "little") + liar
    unsized = zstandard.ZstdCompressor(write_content_size=False)
    oversized = unsized.compress(exec_call("call-big", "x" * (MAX_EVENT_BYTES + 10)))
    blobs = ((1, zstandard.ZstdCompressor().compress(exec_call("call-zstd", "sleep 600"))),
             (2, declares_more), (3, oversized))
    for seq, blob in blobs:
        conn.execute("INSERT INTO transcript_events (session_id, seq, event_json, created_at, "
                     "event_zstd, event_utf8_bytes, navigation_json) "
                     "VALUES (?, ?, NULL, ?, ?, 10, '{}')", (GOOD_SID, seq, NOW_MS, blob))
    add_row(conn, GOOD_SID, 4, {"type": "message", "message": {
        "role": "assistant", "content": [{"type": "toolCall", "id": "call-after",
                                          "name": "exec", "arguments": {"command": "ls"}}]}})
    conn.close()
    calls = {c.call_id for c in recent_exec_calls(str(state))}
    assert calls == {"call-zstd", "call-after"}

"""A crafted agent DB cannot hold the reader: a view or virtual table in place of OpenClaw's
tables is refused, a value past the row cap is reported and passed without being read, and
a query in flight ends when the process is told to stop."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from chaos_writer import AGENT_DDL, assistant_tool_call, session_header
from test_hostile_sqlite import NOW_MS, add_node, add_row, add_window

from monitor.act.exec_calls import recent_exec_calls
from monitor.sources import sqlite_open
from monitor.sources.history_reader import HistoryRequest, read_parts
from monitor.sources.sqlite_agent import SqliteAgentSource
from monitor.sources.sqlite_guard import STOP_GRACE_SECONDS, not_plain_tables

REPO = Path(__file__).resolve().parent.parent
SID = "11111111-2222-3333-4444-555555555555"
KEY = "agent:main:main"
ENDLESS = "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n)"


def agent_db(root: Path, ddl: str) -> Path:
    path = root / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    path.parent.mkdir(parents=True)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript(ddl)
    add_node(conn, KEY, SID)
    add_window(conn, SID, KEY)
    conn.close()
    return path


def endless_view_ddl() -> str:
    """OpenClaw's schema with ``transcript_events`` an endless recursive view."""
    ddl = AGENT_DDL.split("CREATE TABLE IF NOT EXISTS transcript_events")[0]
    rest = AGENT_DDL.split("CREATE TABLE IF NOT EXISTS transcript_events")[1]
    ddl += rest[rest.index(";") + 1:].split("CREATE INDEX")[0]
    return ddl + textwrap.dedent(f"""
        CREATE VIEW Transcript_Events(session_id, seq, event_json, event_zstd,
                                      event_utf8_bytes, created_at) AS
          {ENDLESS} SELECT '{SID}', x, '{{"type":"custom"}}', NULL, NULL, {NOW_MS}
          FROM n WHERE x < 0;
    """)


def run_replay(state: Path, tmp_path: Path) -> dict:
    env = dict(os.environ, HOME=str(tmp_path / "home"), XDG_CACHE_HOME=str(tmp_path / "c"))
    result = subprocess.run([sys.executable, "-m", "monitor", "replay", "--json", "--no-cache",
                             "--state-dir", str(state)], capture_output=True, text=True,
                            timeout=60, cwd=str(REPO), env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def sqlite_source(document: dict) -> dict:
    return next(s for s in document["sources"] if s["kind"] == "sqlite")


def test_an_endless_view_in_place_of_the_transcripts_is_refused_at_once(tmp_path) -> None:
    db = agent_db(tmp_path / "state", endless_view_ddl())
    started = time.monotonic()
    source = sqlite_source(run_replay(tmp_path / "state", tmp_path))
    assert time.monotonic() - started < 30
    assert source["errors"] == 1
    message = source["error_samples"][0]["message"]
    assert "not OpenClaw's schema" in message and "transcript_events is a view" in message
    assert recent_exec_calls(str(tmp_path / "state")) == []
    assert db.exists()


def test_an_endless_view_in_place_of_task_runs_is_refused_by_the_kill_evidence(
        tmp_path) -> None:
    """The global DB's ``task_runs`` is read by every kill and hung check: an endless view
    of that name held them until a stop signal came."""
    state = tmp_path / "state"
    global_db = state / "state" / "openclaw.sqlite"
    global_db.parent.mkdir(parents=True)
    conn = sqlite3.connect(global_db)
    conn.execute(f"""
        CREATE VIEW task_runs(requester_session_key, run_id, task, started_at, created_at,
                              task_kind, status) AS
          {ENDLESS} SELECT '{KEY}', 'exec:x', 'sleep 600', 1, 1, 'exec', 'running'
          FROM n WHERE x < 0""")
    conn.close()
    script = ("import sys; from monitor.act.background_execs import running_background_execs;"
              " print(running_background_execs(sys.argv[1]))")
    result = subprocess.run([sys.executable, "-c", script, str(state)], capture_output=True,
                            text=True, timeout=30, cwd=str(REPO))
    assert (result.returncode, result.stdout.strip()) == (0, "[]"), result.stderr


def test_a_virtual_table_or_view_is_named_and_a_table_is_not(tmp_path) -> None:
    conn = sqlite3.connect(tmp_path / "x.sqlite")
    conn.executescript(f"""
        CREATE TABLE session_nodes (a);
        CREATE VIRTUAL TABLE transcript_events USING fts5(session_id, event_json);
        CREATE VIEW session_windows AS {ENDLESS} SELECT x FROM n;
    """)
    assert not_plain_tables(conn, ("session_nodes", "transcript_events", "session_windows",
                                   "absent")) == {"transcript_events": "virtual table",
                                                  "session_windows": "view"}


def oversized_rows_db(root: Path, cap: int) -> tuple[Path, list[int]]:
    """A session of six calls, the second, fourth and fifth past ``cap``; their rowids."""
    db = agent_db(root, AGENT_DDL)
    conn = sqlite3.connect(db, isolation_level=None)
    add_row(conn, SID, 0, session_header(SID))
    big = assistant_tool_call("big", 2)
    big["message"]["content"][0]["arguments"] = {"pad": "x" * cap}
    for seq, entry in enumerate([assistant_tool_call("c1", 1), big,
                                 assistant_tool_call("c3", 3), big, big,
                                 assistant_tool_call("c6", 6)], start=1):
        add_row(conn, SID, seq, entry)
    rowids = [r[0] for r in conn.execute(
        "SELECT rowid FROM transcript_events WHERE length(event_json) > ?", (cap,))]
    conn.close()
    assert len(rowids) == 3
    return db, rowids


def test_a_row_past_the_cap_is_reported_and_its_neighbours_are_read(tmp_path,
                                                                    monkeypatch) -> None:
    cap = 64 * 1024
    db, rowids = oversized_rows_db(tmp_path / "state", cap)
    monkeypatch.setattr(sqlite_open, "MAX_ROW_BYTES", cap)
    source = SqliteAgentSource(str(db), "main")
    records = []
    while True:
        records += source.poll()
        if not source.behind:
            break
    calls = [r.call_id for r in records if type(r).__name__ == "ToolCall"]
    errors = sorted(r.where for r in records if type(r).__name__ == "SourceError")
    assert calls == ["c1", "c3", "c6"]
    assert errors == sorted(f"transcript_events/rowid {rowid}" for rowid in rowids)
    assert source.seq_cursor[SID] == 6
    assert source.transcript_units()[SID][1][-3:] == [7, "6", 7]


def test_a_history_reader_passes_a_row_past_the_cap_as_the_source_does(tmp_path,
                                                                       monkeypatch) -> None:
    cap = 64 * 1024
    db, rowids = oversized_rows_db(tmp_path / "state", cap)
    monkeypatch.setattr(sqlite_open, "MAX_ROW_BYTES", cap)
    parts = []
    request = HistoryRequest(os.getpid(), "sqlite", str(db), "main", False, since=0.0)
    read_parts(request, [(0, SID, SID)], lambda index, part: parts.append(part))
    events = [event for part in parts for event in part.events]
    calls = [e.call_id for e in events if type(e).__name__ == "ToolCall"]
    errors = sorted(e.where for e in events if type(e).__name__ == "SourceError")
    assert calls == ["c1", "c3", "c6"]
    assert errors == sorted(f"transcript_events/rowid {rowid}" for rowid in rowids)
    assert parts[-1].last and parts[-1].state == 6


def test_a_query_in_flight_ends_when_the_process_is_told_to_stop() -> None:
    """A stop signal lets statements run ``STOP_GRACE_SECONDS`` more (a stopping monitor
    reads what is there before its checkpoint), then ends the one still running."""
    script = textwrap.dedent(f"""
        import os, signal, sqlite3, time
        from monitor.live import install_stop_signals
        from monitor.sources.sqlite_guard import guard
        stop = install_stop_signals()
        conn = guard(sqlite3.connect(":memory:"), 1 << 20)
        signalled = time.monotonic()
        os.kill(os.getpid(), signal.SIGTERM)
        print(conn.execute("{ENDLESS} SELECT count(*) FROM (SELECT x FROM n LIMIT 9)")
              .fetchall())
        try:
            conn.execute("{ENDLESS} SELECT count(*) FROM n").fetchall()
        except sqlite3.OperationalError as exc:
            print(exc, stop.is_set(), round(time.monotonic() - signalled, 2))
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=30, cwd=str(REPO))
    within_grace, endless = result.stdout.splitlines()
    assert within_grace == "[(9,)]", result.stdout + result.stderr
    words = endless.split()
    assert words[:2] == ["interrupted", "True"], result.stdout + result.stderr
    assert STOP_GRACE_SECONDS <= float(words[2]) < 2.0

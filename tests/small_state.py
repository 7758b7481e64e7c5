"""A small OpenClaw install on disk for tests that run ``watch`` on one: a state dir with a
legacy transcript and an agent database (both eras), and a gateway log."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

from chaos_writer import AGENT_DDL, assistant_tool_call, dumps, session_header

SID = "11111111-2222-3333-4444-555555555555"
DB_SID = "66666666-7777-8888-9999-000000000000"


def make_state(root: Path, calls: int = 3) -> tuple[Path, Path]:
    """A state dir (a legacy transcript, an agent DB) and a gateway log under ``root``."""
    sessions = root / "state" / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / f"{SID}.jsonl").write_text("\n".join(
        [dumps(session_header(SID))]
        + [dumps(assistant_tool_call(f"c{n}", n)) for n in range(calls)]) + "\n")
    (sessions / "sessions.json").write_text(json.dumps(
        {"agent:main:main": {"sessionId": SID, "updatedAt": int(time.time() * 1000)}}))
    db = root / "state" / "agents" / "sq" / "agent" / "openclaw-agent.sqlite"
    db.parent.mkdir(parents=True)
    conn = sqlite3.connect(db, isolation_level=None)
    conn.executescript(AGENT_DDL)
    now = int(time.time() * 1000)
    conn.execute("INSERT INTO session_nodes (session_key, current_session_id, entry_json, "
                 "entry_valid, updated_at, status) VALUES (?, ?, '{}', 1, ?, 'running')",
                 ("agent:sq:main", DB_SID, now))
    conn.execute("INSERT INTO session_windows (session_id, session_key, created_at, "
                 "updated_at, status, model) VALUES (?, ?, 1, ?, 'running', 'm')",
                 (DB_SID, "agent:sq:main", now))
    entries = [session_header(DB_SID)] + [assistant_tool_call(f"s{n}", n)
                                          for n in range(1, calls + 1)]
    for seq, entry in enumerate(entries):
        conn.execute("INSERT INTO transcript_events (session_id, seq, event_json, created_at) "
                     "VALUES (?, ?, ?, ?)", (DB_SID, seq, dumps(entry), now))
    conn.close()
    log = root / "gw.log"
    log.write_text(json.dumps({"0": '{"subsystem":"test"}', "1": "hello",
                               "_meta": {"logLevelName": "INFO"}}) + "\n")
    return root / "state", log

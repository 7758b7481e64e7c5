"""Fixtures shared by several test files: fake gateway trees of real processes and a
look-alike shell outside any tree (the process-control tests), and generated state dirs of
both eras (the replay tests)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from test_act_processes import FakeGatewayTree
from test_cli_agents_process import FakeClis

GENERATED_BAD_TRANSCRIPTS = 8
pytest_plugins = ["teardown_on_sigterm"]


@pytest.fixture(autouse=True)
def machine_apart(tmp_path_factory, monkeypatch):
    """Every test, and every process it starts, sees none of this machine's Claude Code or
    Codex sessions nor its gateway's log, and writes no replay cache under the real home: the
    tests that want them point these variables (or the flags) somewhere themselves."""
    apart = tmp_path_factory.getbasetemp() / "machine-apart"
    monkeypatch.setenv("CLAWWATCH_LOG_DIRS", str(apart / "no-gateway-logs"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(apart / "no-claude"))
    monkeypatch.setenv("CODEX_HOME", str(apart / "no-codex"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(apart / "cache"))


@pytest.fixture
def tree_factory(tmp_path):
    trees = []

    def make(*commands: str) -> FakeGatewayTree:
        tree = FakeGatewayTree(list(commands), str(tmp_path / "state"))
        trees.append(tree)
        return tree

    yield make
    for tree in trees:
        tree.close()


@pytest.fixture
def clis(tmp_path):
    """Fake Claude Code / Codex CLI processes (tests/test_cli_agents_process.py), all ended
    afterwards."""
    factory = FakeClis(tmp_path)
    yield factory
    factory.close()


@pytest.fixture
def sigterms(monkeypatch):
    """Each SIGTERM this process sends, as ``("pid", pid)`` or ``("group", pgid)``; the
    signals are still sent."""
    sent: list[tuple[str, int]] = []
    kill, killpg = os.kill, os.killpg

    def recording_kill(pid, signum):
        if signum == signal.SIGTERM:
            sent.append(("pid", pid))
        kill(pid, signum)

    def recording_killpg(pgid, signum):
        if signum == signal.SIGTERM:
            sent.append(("group", pgid))
        killpg(pgid, signum)

    monkeypatch.setattr(os, "kill", recording_kill)
    monkeypatch.setattr(os, "killpg", recording_killpg)
    return sent


@pytest.fixture
def lookalike():
    """An exec-marked shell running ``sleep`` in its own group, outside any gateway tree."""
    proc = subprocess.Popen(["/bin/bash", "--noprofile", "--norc", "-c", "sleep 302; true"],
                            start_new_session=True, env={**os.environ, "OPENCLAW_SHELL": "exec"})
    deadline = time.monotonic() + 10
    while not psutil.Process(proc.pid).children():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    yield psutil.Process(proc.pid)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(5)


def generate_state_dirs(out: Path) -> Path:
    """Both eras of ``bench/gen_large_state.py`` under ``out`` (80 sessions: work, chat,
    every kind of loop, OpenClaw's loop lines in the log), with a bad line or row added to
    ``GENERATED_BAD_TRANSCRIPTS`` sessions. (The index names each transcript by its path
    under ``out``: a copy of the dirs would read both.)"""
    generator = Path(__file__).resolve().parent.parent / "bench" / "gen_large_state.py"
    subprocess.run([sys.executable, str(generator), "--out", str(out), "--sessions", "80",
                    "--big-mb", "1"], check=True, capture_output=True)
    sessions = out / "legacy" / "agents" / "main" / "sessions"
    for path in sorted(sessions.glob("*.jsonl"))[:GENERATED_BAD_TRANSCRIPTS]:
        with path.open("ab") as handle:
            handle.write(b'{"type": "message", "message": \n{"type": "no-such-entry"}\n')
    db = out / "sqlite" / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    with sqlite3.connect(db) as conn:
        sids = [row[0] for row in conn.execute(
            "SELECT DISTINCT session_id FROM transcript_events ORDER BY session_id LIMIT ?",
            (GENERATED_BAD_TRANSCRIPTS,))]
        for sid in sids:
            top = conn.execute("SELECT max(seq) FROM transcript_events WHERE session_id = ?",
                               (sid,)).fetchone()[0]
            conn.execute("INSERT INTO transcript_events (session_id, seq, event_json, "
                         "created_at) VALUES (?, ?, ?, 0)", (sid, top + 1, "{not json"))
    return out


@pytest.fixture(scope="session")
def generated_state_dirs(tmp_path_factory) -> Path:
    """``generate_state_dirs``, once per run: read-only."""
    return generate_state_dirs(tmp_path_factory.mktemp("gen"))

"""A watch restarted after the gateway moved to the next day's log file resumes.

Without ``logging.file`` the gateway writes ``openclaw-YYYY-MM-DD.log`` and moves to the next
day's file at midnight. A watch stopped on one day and started on the next must resume from
the checkpoint it saved: the calls made while it was stopped are reported, the earlier day's
lines written after its checkpoint are read, and the new day's file is read from its start.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from chaos_writer import assistant_tool_call, dumps
from hostile_world import log_line
from small_state import SID, make_state

REPO = Path(__file__).resolve().parent.parent


def loop_line(key: str) -> str:
    return log_line(1_765_000_000, "error", "diagnostic", (
        f"tool loop: sessionId=unknown sessionKey={key} tool=exec level=critical "
        "action=block detector=generic_repeat count=10 "
        "message=\"CRITICAL: Called exec with identical outcomes 10 times.\""))


def watch(state: Path, logs: Path, xdg: Path, seconds: str) -> list[dict]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENCLAW_", "CLAWWATCH_"))}
    env.update(CLAWWATCH_LOG_DIRS=str(logs), XDG_STATE_HOME=str(xdg), HOME=str(xdg))
    result = subprocess.run(
        [sys.executable, "-m", "monitor", "--state-dir", str(state), "watch", "--headless",
         "--json", "--poll", "0.2", "--seconds", seconds],
        capture_output=True, text=True, timeout=60, cwd=str(REPO), env=env)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_a_watch_restarted_on_the_next_days_log_resumes_its_checkpoint(tmp_path):
    state, _ = make_state(tmp_path)
    logs, xdg = tmp_path / "logs", tmp_path / "xdg"
    logs.mkdir()
    day6, day7 = logs / "openclaw-2026-12-06.log", logs / "openclaw-2026-12-07.log"
    day6.write_text(loop_line("agent:main:early"))
    watch(state, logs, xdg, "1")
    with day6.open("a") as handle:
        handle.write(loop_line("agent:main:late"))
    transcript = state / "agents" / "main" / "sessions" / f"{SID}.jsonl"
    with transcript.open("a") as handle:
        handle.write(dumps(assistant_tool_call("while-stopped", 10)) + "\n")
    day7.write_text(loop_line("agent:main:next-day"))
    os.utime(day7, (day6.stat().st_mtime + 60,) * 2)
    records = watch(state, logs, xdg, "1.5")
    assert [r["call_id"] for r in records if r.get("type") == "tool_call"] == ["while-stopped"]
    assert sorted(r["key"] for r in records if r.get("type") == "finding") == [
        "agent:main:late", "agent:main:next-day"]
    assert len(list((xdg / "clawwatch" / "checkpoints").glob("*.json"))) == 1

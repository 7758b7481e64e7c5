"""The command line: discovery failures, audited dashboard actions."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from monitor.act.api import DryRunController
from monitor.act.audit import AuditedController, AuditLog


def run_clawwatch(*args: str, home) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENCLAW_", "CLAWWATCH_"))}
    env.update(HOME=str(home), TMPDIR=str(home), XDG_STATE_HOME=str(home / "state"))
    return subprocess.run([sys.executable, "-m", "monitor", *args], capture_output=True,
                          text=True, env=env, timeout=60)


def test_no_openclaw_exits_2_naming_the_paths_tried_and_the_demo(tmp_path):
    result = run_clawwatch(home=tmp_path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert str(tmp_path / ".openclaw") in result.stderr
    assert "--state-dir" in result.stderr and "clawwatch demo" in result.stderr


def test_watch_without_openclaw_is_a_setup_error(tmp_path):
    result = run_clawwatch("watch", "--headless", "--seconds", "1", home=tmp_path)
    assert result.returncode == 2 and "no OpenClaw found" in result.stderr


def test_audited_controller_writes_attempt_and_result(tmp_path):
    audit_path = tmp_path / "audit.jsonl"
    controller = AuditedController(DryRunController(), AuditLog(str(audit_path)))
    result = controller.stop("agent:main:x", trigger="generic_repeat")
    controller.kill("agent:main:x")
    entries = [json.loads(line) for line in audit_path.read_text().splitlines()]
    assert [(e["event"], e["action"]) for e in entries] == [
        ("attempt", "abort"), ("result", "abort"), ("attempt", "kill"), ("result", "kill")]
    assert entries[1]["ok"] is result.ok and entries[0]["trigger"] == "generic_repeat"
    assert all(e["ts"] and e["key"] == "agent:main:x" for e in entries)

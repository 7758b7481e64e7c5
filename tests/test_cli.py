"""The command line: discovery failures, out-of-range number flags, audited dashboard
actions."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from monitor.act.api import DryRunController
from monitor.act.audit import AuditedController, AuditLog
from monitor.cli_parser import build_parser


def run_clawwatch(*args: str, home) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENCLAW_", "CLAWWATCH_")) or k == "CLAWWATCH_LOG_DIRS"}
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


#: (command line, number flag, values it refuses): a poll of 0 spins a core, a NaN deadline
#: never comes, a negative rate runs unthrottled, a huge timeout overflows.
OUT_OF_RANGE = [(["watch", "--headless"], "--poll", ("0", "-1", "inf")),
                (["watch", "--headless"], "--seconds", ("nan", "-1")),
                (["demo", "--headless"], "--seconds", ("inf",)),
                (["demo", "--headless"], "--rate", ("-5", "nan", "1e308")),
                (["stop", "agent:main:x"], "--timeout", ("nan", "1e300", "-1", "soon"))]


@pytest.mark.parametrize(("command", "flag", "value"),
                         [(command, flag, value) for command, flag, values in OUT_OF_RANGE
                          for value in values])
def test_a_number_flag_outside_its_range_is_refused_naming_the_range(command, flag, value,
                                                                     capsys):
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args([*command, flag, value])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {flag}: {value!r}" in err and "Traceback" not in err
    assert "give a number from" in err or "is not a number" in err


def test_number_flags_in_range_are_taken_as_given():
    args = build_parser().parse_args(["watch", "--poll", "0.2", "--seconds", "3"])
    assert (args.poll, args.seconds) == (0.2, 3.0)
    assert build_parser().parse_args(["demo", "--rate", "16"]).rate == 16.0
    assert build_parser().parse_args(["stop", "k", "--timeout", "0.5"]).timeout == 0.5

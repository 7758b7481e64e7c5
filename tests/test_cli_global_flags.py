"""Global options before or after the sub-command (issue 10, item 3).

``clawwatch --act off demo`` used to drop ``--act``: the sub-command's default None
overwrote the top-level value. Now a global option means the same on either side (after
the sub-command wins when given twice), and one a sub-command does not use is refused with
exit 2.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from monitor.cli import build_parser, main

CASES = [  # (sub-command and its positional arguments, option, value)
    (["demo", "--headless"], "--act", "off"),
    (["demo"], "--config", "/tmp/c.yaml"),
    (["demo"], "--theme", "light"),
    (["watch", "--headless"], "--act", "dry-run"),
    (["watch"], "--theme", "night"),
    (["watch", "--headless"], "--state-dir", "/srv/oc"),
    (["watch", "--headless"], "--gateway", "ws://127.0.0.1:1"),
    (["watch", "--headless"], "--log", "/var/log/oc.log"),
    (["watch", "--headless"], "--config", "/tmp/c.yaml"),
    (["watch", "--headless"], "--profile", "work"),
    (["replay"], "--state-dir", "/srv/oc"),
    (["replay"], "--log", "/var/log/oc.log"),
    (["replay"], "--config", "/tmp/c.yaml"),
    (["stop", "agent:main:x"], "--gateway", "ws://127.0.0.1:1"),
    (["stop", "agent:main:x"], "--state-dir", "/srv/oc"),
    (["config", "check"], "--config", "/tmp/c.yaml"),
]


def parsed(argv: list[str]):
    return vars(build_parser().parse_args(argv))


@pytest.mark.parametrize(("command", "option", "value"), CASES)
def test_a_global_option_counts_before_and_after_the_sub_command(command, option, value):
    dest = option.lstrip("-").replace("-", "_")
    before = parsed([option, value, *command])
    after = parsed([*command, option, value])
    assert before[dest] == value
    assert after[dest] == value


def test_given_on_both_sides_the_one_after_the_sub_command_wins():
    assert parsed(["--act", "auto", "demo", "--act", "off"])["act"] == "off"
    assert parsed(["--state-dir", "/a", "replay", "--state-dir", "/b"])["state_dir"] == "/b"


@pytest.mark.parametrize("argv", [
    ["--state-dir", "/srv/oc", "demo"],
    ["--log", "/x.log", "demo", "--headless"],
    ["--gateway", "ws://h:1", "demo"],
    ["--act", "auto", "replay"],
    ["--theme", "dark", "stop", "agent:main:x"],
    ["--act", "off", "stop", "agent:main:x"],
    ["--state-dir", "/srv/oc", "config", "check"],
])
def test_a_global_option_the_sub_command_does_not_use_is_refused(argv, capsys):
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    assert "does not apply" in capsys.readouterr().err


def env_for(tmp_path, **extra) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENCLAW_", "CLAWWATCH_")) or k == "CLAWWATCH_LOG_DIRS"}
    env.update(HOME=str(tmp_path), TMPDIR=str(tmp_path), XDG_STATE_HOME=str(tmp_path / "x"),
               **extra)
    return env


def test_act_off_before_demo_performs_no_action_although_the_config_says_auto(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "monitor", "--act", "off", "demo", "--headless", "--json",
         "--rate", "16", "--seconds", "14"],
        capture_output=True, text=True, timeout=120,
        env=env_for(tmp_path, CLAWWATCH_ACTIONS__MODE="auto"))
    assert result.returncode == 0, result.stderr[-2000:]
    records = [json.loads(line) for line in result.stdout.splitlines()]
    criticals = [r for r in records if r["type"] == "finding" and r["level"] == "critical"]
    assert criticals, "no critical: auto would have had nothing to act on"
    assert [r for r in records if r["type"] == "action"] == []


def test_state_dir_before_replay_is_read(tmp_path):
    from test_ui_scenes import write_world

    world = write_world("flags", root=tmp_path)
    world.sim.close()
    result = subprocess.run(
        [sys.executable, "-m", "monitor", "--state-dir", str(world.state_dir), "--log",
         str(world.log_path), "replay", "--json"],
        capture_output=True, text=True, timeout=120, env=env_for(tmp_path))
    assert result.returncode == 0, result.stderr[-2000:]
    keys = {s["key"] for s in json.loads(result.stdout)["sessions"]}
    assert "agent:main:night-hammer" in keys

"""The demo's Claude Code session: a real ``claude``-looking process loops, clawwatch sees the
loop, stops it with a real SIGINT through ``RoutingController``, and nothing is left over.

Real parts only: the demo runs as a subprocess (``python -m monitor demo --headless``) with
the config ``tests/test_demo.py`` uses; the fake CLI (``monitor.demo.claude_cli``) and its
Bash calls carry ``MARK_ENV=<demo root>``, which is how they are found here.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import psutil
import pytest

from monitor.act.cli_agents import find_cli
from monitor.act.cli_controller import CliAgentController
from monitor.config import load_config
from monitor.demo import DemoWorld
from monitor.demo.claude_cli import MARK_ENV
from tests.test_demo import DemoRun, gone, wait_until

INTERRUPTED = "[Request interrupted by user for tool use]"


def marked(prefix: str) -> list[psutil.Process]:
    """Live processes whose ``MARK_ENV`` is under ``prefix`` (a demo's fake CLI and tools)."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get(MARK_ENV, "").startswith(prefix) \
                    and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (psutil.Error, OSError):
            continue
    return found


def fake_clis(named: list[psutil.Process]) -> list[psutil.Process]:
    """Of the processes named like the fake CLI, the CLIs themselves: a tool call it forked
    carries its name until it execs, and has a CLI for its parent."""
    pids = {proc.pid for proc in named}
    found = []
    for proc in named:
        try:
            if proc.ppid() not in pids:
                found.append(proc)
        except psutil.Error:                # a tool call that ended meanwhile
            continue
    return found


def claude_key(run: DemoRun) -> str | None:
    keys = [r["key"] for r in run.of("session") if r["key"].startswith("claude-code:")]
    return keys[0] if keys else None


@pytest.mark.timeout(120)
def test_headless_demo_stops_the_looping_claude_code_session_and_leaves_nothing(tmp_path):
    run = DemoRun(tmp_path, "--seconds", "15", "--act", "auto")
    assert run.first.wait(30), "the demo printed nothing"
    assert wait_until(lambda: marked(str(tmp_path)), 10), "no fake claude process"
    named = [p for p in marked(str(tmp_path)) if "claude" in p.name()]
    cli = fake_clis(named)
    assert len(cli) == 1, named
    fake = cli[0]
    assert fake.cmdline()[-6:-4] == ["-p", "Keep checking the project directory until it "
                                           "changes."]
    assert wait_until(lambda: claude_key(run) and run.of("action", claude_key(run)), 40), \
        "no action on the Claude Code session"
    assert wait_until(lambda: gone(fake), 5), "the fake claude outlived the stop"

    code, stderr = run.finish(timeout=60)
    assert code == 0, stderr
    assert "Traceback" not in stderr
    key = claude_key(run)
    session = run.of("session", key)[0]
    assert session["agent_id"] == "claude-code"
    assert session["label"].endswith("/loop-project")
    criticals = [f for f in run.of("finding", key)
                 if f["detector"] == "generic_repeat" and f["level"] == "critical"]
    assert criticals and criticals[0]["tool"] == "Bash", run.of("finding", key)
    actions = run.of("action", key)
    first = actions[0]
    # the demo's overlay maps generic_repeat to kill: for a CLI that is "end its tool groups,
    # then SIGINT the CLI" (the stop key sends the SIGINT alone: see the test below)
    assert first["ok"] is True and first["trigger"] == "generic_repeat", first
    assert first["action"] in ("kill", "abort", "stop-text"), first
    assert "SIGINT" in first["detail"] and "it exited" in first["detail"], first
    assert f"claude-code pid {fake.pid}" in first["detail"] or str(fake.pid) in first["detail"]
    assert not [a for a in actions if not a["ok"]], actions
    assert wait_until(lambda: not marked(str(tmp_path)), 5), marked(str(tmp_path))
    assert run.leftovers() == []


@pytest.mark.timeout(60)
@pytest.mark.parametrize("how", ["sigterm", "sigkill"])
def test_the_fake_claude_never_outlives_the_demo(tmp_path, how):
    run = DemoRun(tmp_path)
    assert run.first.wait(30), "the demo printed nothing"
    assert wait_until(lambda: marked(str(tmp_path)), 10), "no fake claude process"
    started = marked(str(tmp_path))
    if how == "sigterm":
        run.proc.send_signal(signal.SIGTERM)
        code, stderr = run.finish(timeout=30)
        assert code == 0, stderr
        assert run.leftovers() == []
    else:
        run.proc.kill()   # no cleanup code runs: the fake sees its stdin pipe close
        run.finish(timeout=30)
    assert wait_until(lambda: all(gone(proc) for proc in started), 10)
    assert wait_until(lambda: not marked(str(tmp_path)), 5), marked(str(tmp_path))


@pytest.fixture
def world(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    demo = DemoWorld(rate=8).start()
    yield demo
    demo.close()


@pytest.mark.timeout(60)
def test_the_stop_key_path_sends_sigint_through_the_routing_controller(world, tmp_path):
    claude = world.claude
    assert world.claude_dirs == (str(claude.projects_dir),)
    assert world.discovered().claude_dirs == [str(claude.projects_dir)]
    assert wait_until(lambda: claude.transcript.exists()
                      and claude.transcript.read_text().count('"tool_result"') >= 2, 10)
    lines = [json.loads(line) for line in claude.transcript.read_text().splitlines()]
    calls = [block for line in lines if line["type"] == "assistant"
             for block in line["message"]["content"] if block["type"] == "tool_use"]
    assert {call["name"] for call in calls} == {"Bash"}
    assert len({call["input"]["command"] for call in calls}) == 1, "the same command"
    assert all(line["cwd"] == str(claude.project) for line in lines if "cwd" in line)

    lookup = find_cli(CliAgentController(claude_dirs=world.claude_dirs).session(
        world.claude_key)[0])
    assert lookup.process is not None and lookup.process.pid == claude.pid, lookup.reason
    assert f"argv names session {claude.session_id}" in lookup.reason

    config = load_config(None, world.config_env({}))
    controller = world.controller(config)
    try:
        assert controller.for_key(world.claude_key) is controller.cli
        result = controller.stop(world.claude_key, trigger="test")
    finally:
        controller.close()
    assert result.ok, result.detail
    assert "sent SIGINT" in result.detail and "it exited" in result.detail, result.detail
    # the kernel has it dead (a zombie at least); reaping it is this process's part
    assert claude.popen.wait(timeout=2) is not None
    assert not claude.alive()
    last = json.loads(claude.transcript.read_text().splitlines()[-1])
    assert last["type"] == "user" and last["message"]["content"][0]["text"] in (
        INTERRUPTED, "[Request interrupted by user]")
    world.close()
    assert not marked(str(Path(world.root)))

"""The real Claude Code and Codex CLIs, driven into a tool loop offline, found and stopped.

Each client runs against tests/e2e/scripted_models.py, which answers every turn with the same
shell call: ``ls <project>`` for the first ``QUICK_CALLS`` calls, then ``tail -f /dev/null``
(a tool process that lives until it is ended). Once the transcript holds at least
``MIN_TOOL_CALLS`` calls and a tool process runs, ``monitor.act.cli_agents`` must find the
client's process from the session alone, and ``monitor.act.cli_agent_signals`` must stop it
with SIGINT (the ``-p``/``exec`` run exits and its tool processes are gone) or kill its tool
groups (the client goes on looping) and then the client itself. Nothing of the run may be
left behind.

Needs the pinned installs from ``tests/e2e/install_cli_agents.sh``; skipped (with the reason)
when they are missing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import psutil
import pytest

from monitor.act import cli_agent_signals as sig
from monitor.act.cli_agents import CliSession, find_cli

from .cli_agents_lab import RealClient, ScriptedModel, missing_install, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

SOURCES = ("claude-code", "codex")
MIN_TOOL_CALLS = 10
QUICK_CALLS = 12
LOOP_TIMEOUT = 90.0
STRONG_TIE = {"claude-code": "environment names session",   # its Bash tool's environment
              "codex": "holds the transcript"}               # the rollout it keeps open


@pytest.fixture(params=SOURCES)
def looping(request, tmp_path):
    """A real client looping on a live ``tail`` tool call: ``(client, session, target)``."""
    source = request.param
    reason = missing_install(source)
    if reason:
        pytest.skip(reason)
    lab = tmp_path / "lab"
    lab.mkdir()
    project = lab / "project"
    with ScriptedModel(lab, "--command", f"ls {project}", "--then-command", "tail -f /dev/null",
                       "--after", str(QUICK_CALLS), "--delay", "0.05") as model:
        client = RealClient(source, lab, model)
        try:
            client.start()
            wait_for(lambda: (client.tool_calls() >= MIN_TOOL_CALLS
                              or client.proc.poll() is not None),
                     f"{MIN_TOOL_CALLS} tool calls in the {source} transcript", LOOP_TIMEOUT)
            assert client.proc.poll() is None, (
                f"{source} exited ({client.proc.returncode}): {client.stderr.read_text()[-2000:]}")
            transcript = client.transcript()
            session = CliSession(source, client.session_id(transcript), str(transcript),
                                 str(project))
            target = (client.proc.pid, psutil.Process(client.proc.pid).create_time())
            wait_for(lambda: _tail_running(session, target), "the looping tail tool process",
                     LOOP_TIMEOUT)
            yield client, session, target
        finally:
            client.close()


def _tail_running(session: CliSession, target: tuple[int, float]) -> list[sig.ToolGroup]:
    groups = sig.tool_groups(session, target)
    return [group for group in groups if any(_is_tail(pid) for pid in group.member_pids)]


def _is_tail(pid: int) -> bool:
    try:
        return psutil.Process(pid).cmdline()[:1] == ["tail"]
    except psutil.Error:
        return False


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def test_the_real_client_is_found_and_sigint_ends_its_run(looping):
    client, session, target = looping
    assert client.tool_calls() >= MIN_TOOL_CALLS
    found = find_cli(session)
    assert found.target == target, found.reason
    assert STRONG_TIE[session.source] in found.reason, found.reason
    groups = sig.tool_groups(session, target)
    assert "tail -f /dev/null" in [group.command for group in groups], groups
    assert all(group.marked for group in groups), "tools carry the session id"
    members = {pid for group in groups for pid in group.member_pids}

    outcome = sig.stop_cli(session, target)
    assert outcome.ok and outcome.signalled == [target[0]], outcome.detail
    assert sig.wait_exit(target, 30), f"{session.source} did not exit on SIGINT"
    wait_for(lambda: not any(_alive(pid) for pid in members), "the tool processes to end", 15)
    assert client.lab_processes() == [], "something of the run outlived it"


def test_killing_the_tools_leaves_the_client_looping_then_kill_ends_it(looping):
    client, session, target = looping
    first = _tail_running(session, target)
    members = {pid for group in first for pid in group.member_pids}
    outcomes = sig.kill_tools(session, target, grace=3.0)
    assert outcomes and all(outcome.ok for outcome in outcomes), outcomes
    assert not any(_alive(pid) for pid in members)
    assert sig.wait_exit(target, 0) is False, "killing the tools must not end the client"

    old = {group.pid for group in first}
    again = wait_for(lambda: [group for group in _tail_running(session, target)
                              if group.pid not in old],
                     "the client to start the next tool call", LOOP_TIMEOUT)
    members = {pid for group in again for pid in group.member_pids}
    outcomes = sig.kill_tools(session, target, grace=3.0, include_cli=True)
    assert outcomes and all(outcome.ok for outcome in outcomes), outcomes
    assert sig.wait_exit(target, 10)
    assert not any(_alive(pid) for pid in members)
    assert client.lab_processes() == [], "something of the run outlived it"


# ------------------------------------------------------- clawwatch watch --act auto stops it

WATCH_FLAG = {"claude-code": "--claude-dir", "codex": "--codex-dir"}


def _watch_accepts(flag: str) -> bool:
    done = subprocess.run([sys.executable, "-m", "monitor", "watch", "--help"],
                          capture_output=True, text=True, timeout=60)
    return flag in done.stdout


@pytest.mark.parametrize("source", SOURCES)
def test_watch_act_auto_stops_a_real_looping_client(source, tmp_path):
    """``clawwatch watch --headless --json --act auto --claude-dir …`` beside a real client
    looping on ``ls``: the loop goes critical, clawwatch stops the client (SIGINT through
    ``monitor.act.cli_controller``), the run exits and nothing of it is left."""
    reason = missing_install(source)
    if reason:
        pytest.skip(reason)
    flag = WATCH_FLAG[source]
    if not _watch_accepts(flag):
        pytest.skip(f"clawwatch watch does not accept {flag} yet")
    lab = tmp_path / "lab"
    lab.mkdir()
    project = lab / "project"
    audit = tmp_path / "audit.jsonl"
    config = tmp_path / "clawwatch.yaml"
    config.write_text("actions:\n  mode: auto\n  on_critical: stop\n"
                      f"  audit_log: {audit}\n")
    with ScriptedModel(lab, "--command", f"ls {project}", "--delay", "0.05") as model:
        client = RealClient(source, lab, model)
        sessions = client.config / ("projects" if source == "claude-code" else "sessions")
        sessions.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "HOME": str(tmp_path / "user"),
               "XDG_STATE_HOME": str(tmp_path / "state"),
               "XDG_CONFIG_HOME": str(tmp_path / "config")}
        repo = Path(__file__).resolve().parents[2]
        stderr_path = tmp_path / "watch.stderr"
        with open(stderr_path, "w") as stderr_file:
            watch = subprocess.Popen(
                [sys.executable, "-m", "monitor", "watch", "--headless", "--json", "--act",
                 "auto", "--config", str(config), "--source", source, flag, str(sessions),
                 "--seconds", "150"],
                cwd=repo, env=env, stdout=subprocess.PIPE, stderr=stderr_file, text=True,
                start_new_session=True)
        records: list[dict] = []

        def read() -> None:
            for line in watch.stdout:
                try:
                    records.append(json.loads(line))
                except ValueError:
                    continue

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        try:
            wait_for(lambda: "caught up on the history" in stderr_path.read_text(),
                     "the watcher to catch up before the first entry", 60)
            client.start()
            action = wait_for(lambda: next((r for r in records if r.get("type") == "action"
                                            and str(r.get("key")).startswith(source + ":")),
                                           None),
                              f"clawwatch to act on the {source} loop", LOOP_TIMEOUT)
            assert action["ok"] is True, action
            assert f"sent SIGINT to the {source} CLI (pid {client.proc.pid})" \
                in action["detail"], action
            transcript = client.transcript()
            assert action["key"] == f"{source}:{client.session_id(transcript)}"
            wait_for(lambda: client.proc.poll() is not None, f"{source} to exit", 30)
            wait_for(lambda: client.lab_processes() == [], "the run's processes to end", 15)
        finally:
            watch.terminate()
            try:
                watch.wait(15)
            except subprocess.TimeoutExpired:
                watch.kill()
                watch.wait(5)
            stderr = stderr_path.read_text()
            client.close()
        findings = [r for r in records if r.get("type") == "finding"
                    and r.get("level") == "critical"]
        assert findings, f"no critical finding; stderr:\n{stderr[-3000:]}"
        results = [json.loads(line) for line in audit.read_text().splitlines()
                   if '"result"' in line]
        assert [(e["key"], e["ok"], e["mode"]) for e in results] == [
            (action["key"], True, "auto")], results

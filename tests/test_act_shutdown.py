"""Stopping clawwatch while an action runs: within 2 s, no CLI left frozen, no kill left
half-way.

Real parts only: the fake CLIs of tests/test_cli_agents_process.py (real processes; their
tool ignores SIGTERM, so a kill would wait out its whole grace), a loopback gateway that
accepts connections and never answers (tests/test_act_gateway.py's ``stall-http``), and
``clawwatch stop`` / ``clawwatch watch`` run as processes and sent real signals.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest
from test_act_gateway import TOKEN, FakeGateway, listening_controller
from test_cli_agent_actions import tools_gone, with_cwd
from test_cli_agents_process import Fake, FakeClis, alive, wait_for
from test_kill_conflicts import Transcripts
from test_productive_run import write_state_dir

from monitor.act import processes as pt
from monitor.act.audit import AuditLog
from monitor.act.cli_controller import CliAgentController, split_key
from monitor.act.cli_freeze import freeze, frozen_pids, thaw
from monitor.act.loop import ActionLoop
from monitor.act.policy import DROPPED, ActionPolicy
from monitor.config import load_config
from monitor.demo.sim.scenarios import hammer
from monitor.records import FindingRecord

pytestmark = pytest.mark.timeout(120)
REPO = Path(__file__).resolve().parents[1]
#: The promise: every command ends within 2 s of a stop signal.
STOP_BOUND_SECONDS = 2.0
#: A kill grace no test may wait out: ending in time proves the grace was cut short.
LONG_GRACE = 60
STUBBORN_TOOL = "trap '' TERM; while true; do sleep 1; done"


def frozen(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_STOPPED
    except psutil.Error:
        return False


def clean_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items()
           if not name.startswith(("OPENCLAW_", "CLAWWATCH_")) or name == "CLAWWATCH_LOG_DIRS"}
    env.update(HOME=str(tmp_path / "user"), XDG_STATE_HOME=str(tmp_path / "xdg-state"),
               XDG_CONFIG_HOME=str(tmp_path / "xdg-config"), **extra)
    return env


def audit_entries(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() \
        else []


def watch_stopped_when(tmp_path: Path, args: list[str], ready, what: str, *, env=None,
                       closing=None) -> tuple[float, str, str]:
    """Run ``clawwatch watch --headless --json ARGS``, send SIGTERM once ``ready()`` holds,
    and return (seconds it took to end, its stdout, its stderr); ``closing`` is closed last."""
    watch = subprocess.Popen(
        [sys.executable, "-m", "monitor", "watch", "--headless", "--json", "--from-start",
         "--no-checkpoint", "--poll", "0.2", *args],
        cwd=REPO, env=env or clean_env(tmp_path), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    elapsed, out, err = terminated_when(watch, ready, what, closing=closing)
    assert watch.returncode == 0, err
    return elapsed, out, err


def terminated_when(popen: subprocess.Popen, ready, what: str, *, closing=None
                    ) -> tuple[float, str, str]:
    """Send ``popen`` SIGTERM once ``ready()`` holds; (seconds it took to end, its stdout,
    its stderr). ``closing`` is closed last."""
    try:
        wait_for(ready, what, timeout=60)
        popen.send_signal(signal.SIGTERM)
        elapsed = ended_within(popen, 10)
        out, err = popen.communicate()
    finally:
        if popen.poll() is None:
            popen.kill()
        if closing is not None:
            closing.close()
    return elapsed, out, err


def ended_within(popen: subprocess.Popen, seconds: float) -> float:
    """Seconds ``popen`` took to end (at most ``seconds``; killed and failed beyond)."""
    started = time.monotonic()
    try:
        popen.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        popen.kill()
        popen.wait()
        pytest.fail(f"still running {seconds:g} s after the stop signal")
    return time.monotonic() - started


# ------------------------------------------------------------------ clawwatch stop --kill

def start_stop_kill(fake: Fake, tmp_path: Path) -> subprocess.Popen:
    """``clawwatch stop claude-code:<id> --kill`` on ``fake``, with a grace no test waits
    out; its output is text, in pipes."""
    config = tmp_path / "clawwatch.yaml"
    config.write_text(f"actions: {{kill_grace_seconds: {LONG_GRACE}}}\n")
    env = clean_env(tmp_path, CLAUDE_CONFIG_DIR=str(tmp_path / "home" / "claude-code"))
    return subprocess.Popen([sys.executable, "-m", "monitor", "stop", "--config", str(config),
                             f"claude-code:{fake.session.session_id}", "--kill"],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stop_signal_during_stop_kill_sigkills_the_tools_and_resumes_the_cli(
        clis: FakeClis, tmp_path, signum):
    fake = with_cwd(clis.start("claude-code", tool=STUBBORN_TOOL))
    stop = start_stop_kill(fake, tmp_path)
    try:
        wait_for(lambda: frozen(fake.pid), "the CLI frozen by the kill")
        stop.send_signal(signum)
        elapsed = ended_within(stop, 10)
        out, err = stop.communicate()
    finally:
        if stop.poll() is None:
            stop.kill()
    assert elapsed < STOP_BOUND_SECONDS
    assert not frozen(fake.pid), "the CLI was left stopped (SIGSTOP)"
    assert stop.returncode == 0, err
    assert "done" in out and "1 tool group(s) killed" in out
    assert tools_gone(fake)
    wait_for(lambda: fake.received() == ["SIGINT"], "the CLI to handle its SIGINT")


def test_a_cli_frozen_when_clawwatch_is_sigkilled_is_resumed_by_its_guard(clis: FakeClis,
                                                                         tmp_path):
    fake = with_cwd(clis.start("claude-code", tool=STUBBORN_TOOL))
    stop = start_stop_kill(fake, tmp_path)
    try:
        wait_for(lambda: frozen(fake.pid), "the CLI frozen by the kill")
    finally:
        stop.kill()
        stop.communicate()
    wait_for(lambda: not frozen(fake.pid), "the guard to resume the CLI",
             timeout=STOP_BOUND_SECONDS)


def test_two_overlapping_freezes_of_one_cli_hold_it_until_both_thaw():
    """Two kills of one CLI may overlap (the dashboard's ``K`` beside ``--act auto``): the
    first to finish must not resume the CLI while the other still ends its tools, nor leave
    its guard process behind."""
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        first, second = psutil.Process(sleeper.pid), psutil.Process(sleeper.pid)
        freeze(first)
        freeze(second)
        wait_for(lambda: frozen(sleeper.pid), "the freeze")
        thaw(first)
        assert frozen(sleeper.pid), "resumed while the other kill still holds it"
        assert frozen_pids() == [sleeper.pid]
        thaw(second)
        wait_for(lambda: not frozen(sleeper.pid), "the CLI to run again")
        assert frozen_pids() == []
        wait_for(lambda: not [child for child in psutil.Process().children()
                              if "clawwatch-thaw-guard" in child.cmdline()],
                 "every guard to have ended")
    finally:
        sleeper.kill()
        sleeper.wait()


# ------------------------------------------------------- the action loop (watch, dashboard)

def kill_finding(key: str) -> FindingRecord:
    """A critical of the session ``key`` names; a CLI session's is named by the id its key
    ends with, as the pipeline names it (the policy acts on no key routing elsewhere)."""
    routed = split_key(key)
    return FindingRecord(ts="2026-12-05T00:00:00.000Z", key=key,
                         session_id=routed[1] if routed else key,
                         detector="generic_repeat", level="critical", count=20, tool="Bash",
                         at_call=21, message="generic_repeat critical")


@pytest.mark.parametrize("kill_cli", [False, True], ids=["interrupt-cli", "end-cli"])
def test_closing_the_action_loop_mid_kill_finishes_the_kill_at_once(clis: FakeClis, tmp_path,
                                                                     kill_cli):
    fake = with_cwd(clis.start("claude-code", tool=STUBBORN_TOOL))
    key = f"claude-code:{fake.session.session_id}"
    path = tmp_path / "clawwatch.yaml"
    path.write_text("actions: {mode: auto, on_critical: kill}\n")
    controller = CliAgentController(claude_dirs=[str(tmp_path / "home/claude-code/projects")],
                                    codex_dirs=[], kill_grace=LONG_GRACE, kill_cli=kill_cli)
    policy = ActionPolicy(load_config(str(path), env={}), controller,
                          audit=AuditLog(str(tmp_path / "audit.jsonl")))
    loop = ActionLoop(policy)
    assert loop.process([kill_finding(key)]) == []
    wait_for(lambda: frozen(fake.pid), "the CLI frozen by the kill")
    started = time.monotonic()
    records = loop.close()
    assert time.monotonic() - started < STOP_BOUND_SECONDS
    assert [(record.key, record.action, record.ok) for record in records] == [(key, "kill", True)]
    assert tools_gone(fake)
    assert not frozen(fake.pid) and frozen_pids() == []
    assert alive(fake.pid) is not kill_cli


def test_the_end_of_a_watch_lets_a_stop_under_way_finish_unless_a_signal_comes(tmp_path):
    """``--seconds`` running out is no stop signal: a gateway stop waiting on its answer
    gets it and succeeds; a signal during that wait ends it at once, cancelled."""
    gateway = FakeGateway("hold-call")
    path = tmp_path / "clawwatch.yaml"
    path.write_text("actions: {mode: auto, on_critical: stop}\n")
    try:
        for signalled in (False, True):
            gateway.release.clear()
            loop = ActionLoop(ActionPolicy(load_config(str(path), env={}),
                                           listening_controller(gateway.url, TOKEN),
                                           audit=AuditLog(str(tmp_path / "audit.jsonl"))))
            key = f"agent:main:loop{int(signalled)}"
            loop.process([kill_finding(key)])
            wait_for(lambda key=key: any(params.get("sessionKey") == key
                                         for _, params in gateway.requests),
                     "the stop under way")
            stop = threading.Event()
            if signalled:
                stop.set()
            else:
                threading.Timer(0.5, gateway.release.set).start()
            started = time.monotonic()
            loop.finish(stop, limit=30)
            [record] = [r for r in loop.close() if r.key == key]
            assert time.monotonic() - started < STOP_BOUND_SECONDS
            assert record.ok is not signalled, record.detail
            assert ("clawwatch is stopping" in record.detail) is signalled
    finally:
        gateway.release.set()
        gateway.close()


def test_watch_act_auto_ends_within_2_s_of_sigterm_with_a_gateway_that_never_answers(tmp_path):
    """Three looping sessions, three stop actions: the first waits on a gateway that takes
    the connection and never answers, the other two are queued behind it."""
    loops = [dataclasses.replace(hammer(limit=40), name=f"hammer{n}") for n in range(3)]
    state_dir, log = write_state_dir(tmp_path, "legacy", loops)
    gateway = FakeGateway("stall-http")
    audit = tmp_path / "xdg-state" / "clawwatch" / "audit.jsonl"
    env = clean_env(tmp_path, CLAWWATCH_ACTIONS__ON_CRITICAL="stop")
    elapsed, out, _ = watch_stopped_when(
        tmp_path, ["--act", "auto", "--state-dir", str(state_dir), "--log", str(log),
                   "--gateway", gateway.url],
        lambda: sum(entry["event"] == "attempt" for entry in audit_entries(audit)) == 3
        and gateway.connections, "three actions under way", env=env, closing=gateway)
    assert elapsed < STOP_BOUND_SECONDS
    events = sorted(entry["event"] for entry in audit_entries(audit)
                    if entry["event"] != "suppressed")     # the cooldown's, not actions
    assert events == ["attempt"] * 3 + ["dropped"] * 2 + ["result"]
    actions = [record for record in map(json.loads, out.splitlines())
               if record["type"] == "action"]
    assert sorted(record["detail"] == DROPPED for record in actions) == [False, True, True]
    assert not any(record["ok"] for record in actions)
    cancelled = next(record for record in actions if record["detail"] != DROPPED)
    assert "cancelled: clawwatch is stopping" in cancelled["detail"]


def test_watch_ends_within_2_s_of_sigterm_with_webhooks_queued_to_a_receiver_that_stalls(
        tmp_path):
    """Every critical of three loops is posted to a receiver that takes the request and
    never answers (5 retries of 10 s each): the queue cannot drain, and the stop still comes
    in time."""
    from test_act_webhooks import Receiver

    loops = [dataclasses.replace(hammer(limit=40), name=f"hammer{n}") for n in range(3)]
    state_dir, log = write_state_dir(tmp_path, "legacy", loops)
    receiver = Receiver(stall=threading.Event())
    config = tmp_path / "config.yaml"
    config.write_text(json.dumps({"alerts": {"webhooks": [
        {"url": receiver.url, "timeout_seconds": 10, "retries": 5, "min_level": "warning"}]}}))
    elapsed, _, _ = watch_stopped_when(
        tmp_path, ["--config", str(config), "--state-dir", str(state_dir), "--log", str(log)],
        lambda: receiver.requests, "a webhook posted", closing=receiver)
    assert elapsed < STOP_BOUND_SECONDS


def test_a_stop_signal_during_stop_kill_of_gateway_exec_shells_sigkills_them_at_once(
        tree_factory, tmp_path):
    """``clawwatch stop KEY --kill`` on an OpenClaw exec shell that survives SIGTERM (its
    trap notes each one; the sleeps it starts are new members of its group): SIGTERM to
    clawwatch during a grace of a minute ends the grace, the whole group is SIGKILLed, and
    clawwatch ends within 2 s saying so."""
    noted = tmp_path / "got-term"
    tree = tree_factory(f"trap 'echo x >> {noted}' TERM; while true; do sleep 0.2; done")
    (shell,) = pt.exec_shells(tree.proc)
    members = [proc.pid for proc in pt.group_snapshot(shell.pid)]
    db = Transcripts(tmp_path / "state")
    db.call("agent:main:loop", "call-1", shell.command, shell.create_time - 0.2)
    db.close()
    gateway = FakeGateway("ok")
    config = tmp_path / "clawwatch.yaml"
    config.write_text(f"actions: {{kill_grace_seconds: {LONG_GRACE}}}\n")
    env = clean_env(tmp_path, OPENCLAW_GATEWAY_TOKEN=TOKEN,
                    OPENCLAW_GATEWAY_PID=str(tree.proc.pid))
    stop = subprocess.Popen([sys.executable, "-m", "monitor", "stop", "--config", str(config),
                             "--state-dir", str(tmp_path / "state"), "--gateway", gateway.url,
                             "agent:main:loop", "--kill"],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    elapsed, out, err = terminated_when(stop, noted.exists,
                                        "the exec shell to get the kill's SIGTERM",
                                        closing=gateway)
    assert elapsed < STOP_BOUND_SECONDS
    assert stop.returncode == 0, err
    assert "1 killed by clawwatch" in out
    wait_for(lambda: not any(alive(pid) for pid in members), "the group gone", timeout=2)
    assert not pt.group_snapshot(shell.pid)

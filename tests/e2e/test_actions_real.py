"""Stopping and killing for real: clawwatch against a real OpenClaw gateway whose own loop
detection is OFF, so nothing but clawwatch ends the loops (the run time-out is far away).

* ``--act auto`` with ``on_critical: stop``: a hammer run is aborted within 2 s of its
  first critical finding; the session row ends ``killed`` with ``abortedLastRun``; the
  audit log holds the action. The same with a token budget as the only trigger.
* ``clawwatch stop KEY`` with each method on a looping run, and exit 0 on an idle session.
* ``stop --kill`` on an exec that spawns ``sleep`` children (one of them orphaned) leaves
  none of them alive, nor a background exec that outlived its run, while a look-alike
  process outside the gateway tree and another session's exec are untouched.

The watch side runs ``tests/e2e/act_watch.py`` (the CLI's watch pipeline plus
``monitor.act.loop.build_action_loop``); ``stop`` runs ``monitor.act.cli_stop.stop_main``.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from contextlib import closing
from pathlib import Path

import psutil
import pytest

from monitor.act import processes as pt
from monitor.act.cli_stop import stop_main
from monitor.act.exec_calls import recent_exec_calls

from .gateway import RealGateway

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

REPO_ROOT = Path(__file__).resolve().parents[2]
ABORT_WITHIN_S = 2.0


@pytest.fixture(scope="module")
def open_gateway(openclaw_install):
    """A gateway with OpenClaw's loop detection OFF (runs end only by time-out: 240 s)."""
    gateway = RealGateway(loop_detection=False, run_timeout_seconds=240)
    with gateway:
        yield gateway
    leftovers = gateway.leftover_processes()
    assert not leftovers, f"processes outlived the gateway: {leftovers}"


def tag() -> str:
    return uuid.uuid4().hex[:8]


def session_row(gateway: RealGateway, key: str) -> tuple[str | None, dict]:
    uri = f"file:{gateway.agent_db}?mode=ro"
    with closing(sqlite3.connect(uri, uri=True, timeout=5)) as conn:
        row = conn.execute("SELECT status, entry_json FROM session_nodes WHERE session_key = ?",
                           (key,)).fetchone()
    if row is None:
        return None, {}
    return row[0], json.loads(row[1] or "{}")


def wait_row_aborted(gateway: RealGateway, key: str, timeout: float = 20.0) -> tuple[str, dict]:
    deadline = time.monotonic() + timeout
    while True:
        status, entry = session_row(gateway, key)
        if status == "killed" and entry.get("abortedLastRun") is True:
            return status, entry
        if time.monotonic() > deadline:
            return status, entry
        time.sleep(0.2)


def wait_tool_events(gateway: RealGateway, run_id: str, count: int, timeout: float,
                     phase: str = "start") -> list[dict]:
    """The run's first ``count`` tool events of ``phase``."""
    seen: list[dict] = []

    def enough(frame: dict) -> bool:
        payload = frame.get("payload") or {}
        if (frame.get("event") == "agent" and payload.get("runId") == run_id
                and payload.get("stream") == "tool"
                and (payload.get("data") or {}).get("phase") == phase):
            seen.append(payload["data"])
        return len(seen) >= count

    found = gateway.client.wait_event(enough, timeout=timeout)
    assert found is not None, f"run {run_id}: {len(seen)} of {count} tool {phase} events"
    return seen


def stop_env(gateway: RealGateway, tmp_path: Path) -> dict:
    return {**gateway.gateway_env(), "OPENCLAW_BIN": str(gateway.openclaw_entry),
            "XDG_STATE_HOME": str(tmp_path / "xdg")}


def run_stop(gateway: RealGateway, tmp_path: Path, key: str, *, method: str | None = None,
             kill: bool = False) -> tuple[int, dict, float]:
    args = argparse.Namespace(session_key=key, kill=kill, method=method, state_dir=None,
                              profile=None, log=None, gateway=None, config=None, json=True,
                              timeout=None)
    out, err = io.StringIO(), io.StringIO()
    started = time.monotonic()
    code = stop_main(args, out=out, err=err, env=stop_env(gateway, tmp_path))
    elapsed = time.monotonic() - started
    lines = [json.loads(line) for line in out.getvalue().splitlines() if line.strip()]
    assert lines, f"stop printed nothing; stderr: {err.getvalue()}"
    return code, lines[0], elapsed


def audit_entries(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


class Watcher:
    """``act_watch`` in a subprocess; lines are kept with their wall-clock arrival time."""

    def __init__(self, gateway: RealGateway, config: Path, seconds: float = 150) -> None:
        argv = [sys.executable, "-m", "tests.e2e.act_watch", "--config", str(config),
                "--act", "auto", "--seconds", str(seconds), "--poll", "0.5",
                "--hung-interval", "1"]
        self.stderr = open(config.with_suffix(".stderr"), "w")
        self.proc = subprocess.Popen(argv, cwd=REPO_ROOT, env=gateway.gateway_env(),
                                     stdout=subprocess.PIPE, stderr=self.stderr, text=True,
                                     start_new_session=True)
        self.lines: list[tuple[float, dict]] = []
        self._cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            if line.strip():
                with self._cond:
                    self.lines.append((time.time(), json.loads(line)))
                    self._cond.notify_all()

    def wait_for(self, predicate, timeout: float) -> tuple[float, dict] | None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                hit = next(((at, r) for at, r in self.lines if predicate(r)), None)
                remaining = deadline - time.monotonic()
                if hit or remaining <= 0 or self.proc.poll() is not None:
                    return hit
                self._cond.wait(min(remaining, 0.5))

    def close(self) -> str:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.stderr.close()
        return Path(self.stderr.name).read_text(errors="replace")[-3000:]


def check_auto_stop(gateway: RealGateway, tmp_path: Path, config_text: str, *,
                    expect_detector: str, run_opts: dict) -> None:
    audit_path = tmp_path / "audit.jsonl"
    config = tmp_path / "clawwatch.yaml"
    config.write_text(config_text + f"  audit_log: {audit_path}\n")
    watcher = Watcher(gateway, config)
    try:
        ready = watcher.wait_for(lambda r: r.get("message") == "caught up", timeout=60)
        assert ready is not None, "act_watch did not start"
        key = f"agent:main:e2e-auto-{tag()}"
        run_id = gateway.start_run("hammer", key, **run_opts)
        critical = watcher.wait_for(lambda r: r.get("type") == "finding" and r.get("key") == key
                                    and r.get("level") == "critical", timeout=120)
        assert critical is not None, "no critical finding"
        seen_at, finding = critical
        end = gateway.wait_run_end(run_id, timeout=30)
        action = watcher.wait_for(lambda r: r.get("type") == "action" and r.get("key") == key,
                                  timeout=15)
    finally:
        stderr = watcher.close()
    assert finding["detector"] == expect_detector, finding
    assert end.get("aborted") is True, end
    ended_at = end.get("endedAt") / 1000.0
    print(f"{expect_detector}: run ended {ended_at - seen_at:+.3f} s after the critical line")
    assert ended_at - seen_at < ABORT_WITHIN_S, (
        f"run ended {ended_at - seen_at:.2f} s after the critical finding was printed")
    assert action is not None, f"no action line; stderr:\n{stderr}"
    record = action[1]
    assert (record["action"], record["ok"], record["trigger"]) == (
        "abort", True, expect_detector), record
    assert run_id in record["detail"]
    status, entry = wait_row_aborted(gateway, key)
    assert (status, entry.get("abortedLastRun")) == ("killed", True), (status, entry)
    results = [e for e in audit_entries(audit_path)
               if e.get("key") == key and e.get("event") == "result"]
    assert len(results) == 1 and results[0]["ok"] is True and results[0]["mode"] == "auto"
    assert results[0]["trigger"]["detector"] == expect_detector


def test_auto_mode_stops_a_hammer_loop_on_its_critical(open_gateway, tmp_path):
    check_auto_stop(open_gateway, tmp_path,
                    "actions:\n  mode: auto\n  on_critical: stop\n  stop_method: abort\n",
                    expect_detector="generic_repeat", run_opts={})


def test_auto_mode_stops_a_run_over_its_token_budget(open_gateway, tmp_path):
    # The fake model's prompts are ~body/4 tokens (thousands each): a 30k budget is crossed
    # after a few calls, long before any loop detector could reach critical.
    check_auto_stop(open_gateway, tmp_path,
                    "budgets:\n  session_tokens: 30000\n"
                    "actions:\n  mode: auto\n  on_critical: alert\n"
                    "  triggers: {\"token_budget:critical\": stop}\n",
                    expect_detector="token_budget", run_opts={"delay": 0.3})


@pytest.mark.parametrize("method", ["abort", "stop-text", "cli"])
def test_stop_each_method_on_a_looping_run(open_gateway, tmp_path, method):
    key = f"agent:main:e2e-stop-{method}-{tag()}"
    run_id = open_gateway.start_run("hammer", key, delay=0.2)
    wait_tool_events(open_gateway, run_id, 3, timeout=90)
    code, record, elapsed = run_stop(open_gateway, tmp_path, key, method=method)
    assert code == 0, record
    assert record["ok"] is True and record["action"] == method
    assert f"aborted run {run_id}" in record["detail"], record
    end = open_gateway.wait_run_end(run_id, timeout=30)
    assert end.get("aborted") is True, end
    status, entry = wait_row_aborted(open_gateway, key)
    assert (status, entry.get("abortedLastRun")) == ("killed", True)
    assert elapsed < (60 if method == "cli" else 15)
    entries = audit_entries(tmp_path / "xdg" / "clawwatch" / "audit.jsonl")
    assert [e["event"] for e in entries] == ["attempt", "result"] and entries[1]["ok"] is True


def test_stop_exits_0_on_an_idle_session(open_gateway, tmp_path):
    key = f"agent:main:e2e-idle-{tag()}"
    run_id = open_gateway.start_run("normal", key)
    open_gateway.wait_run_end(run_id, timeout=90)
    code, record, _ = run_stop(open_gateway, tmp_path, key)
    assert code == 0 and record["ok"] is True
    assert "no active run (session idle)" in record["detail"]


def group_of(pid: int) -> list[psutil.Process]:
    """Every live process in ``pid``'s process group (the exec shell and its children)."""
    members = []
    for proc in psutil.process_iter():
        try:
            if os.getpgid(proc.pid) == pid and proc.status() != psutil.STATUS_ZOMBIE:
                members.append(proc)
        except (OSError, psutil.Error):
            continue
    return members


def alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def attribution_report(gateway: RealGateway, key: str) -> dict:
    """What the kill's evidence looks like now: for a failure message."""
    found = pt.find_gateway(url=gateway.url, state_dir=str(gateway.state_dir))
    shells = pt.exec_shells(found) if found else []
    calls = [c for c in recent_exec_calls(str(gateway.state_dir)) if c.session_key == key]
    return {"gateway": found.pid if found else None,
            "shells": [(s.pid, round(s.create_time, 2), s.command[:60]) for s in shells],
            "calls": [(c.call_id, round(c.ts, 2), c.command[:60]) for c in calls]}


@pytest.fixture
def snapshotless_gateway(openclaw_install):
    """A gateway whose exec shells run without a shell snapshot (its capture failed or is off);
    for the one test that needs it, so it does not run beside the module's gateway after."""
    gateway = RealGateway(loop_detection=False, run_timeout_seconds=240, shell_snapshot=False)
    with gateway:
        yield gateway
    assert not gateway.leftover_processes()


def test_stop_kill_leaves_none_of_the_runs_processes(open_gateway, tmp_path):
    check_stop_kill(open_gateway, tmp_path)


def test_stop_kill_proves_ownership_of_a_shell_started_without_a_snapshot(
        snapshotless_gateway, tmp_path):
    check_stop_kill(snapshotless_gateway, tmp_path)


def check_stop_kill(gateway: RealGateway, tmp_path) -> None:
    """``stop --kill`` ends exactly the session's exec group: not a look-alike, not another
    session's shell."""
    command = "echo started; sleep 301 & (sleep 302 &); sleep 303; echo never"
    key, other_key = f"agent:main:e2e-kill-{tag()}", f"agent:main:e2e-bystander-{tag()}"
    lookalike = subprocess.Popen(["/bin/bash", "--noprofile", "--norc", "-c", command],
                                 start_new_session=True, stdout=subprocess.DEVNULL,
                                 env={**os.environ, "OPENCLAW_SHELL": "exec"})
    try:
        run_id = gateway.start_run("sleepy", key, cmd=command)
        other_run = gateway.start_run("sleepy", other_key, cmd="echo b; sleep 310")
        (update,) = wait_tool_events(gateway, run_id, 1, timeout=90, phase="update")
        (other_update,) = wait_tool_events(gateway, other_run, 1, timeout=90,
                                           phase="update")
        shell_pid = update["partialResult"]["details"]["pid"]
        def sleeps() -> list[str]:
            found = []
            for proc in group_of(shell_pid):
                try:
                    if proc.name() == "sleep":
                        found.append(" ".join(proc.cmdline()))
                except psutil.Error:
                    continue
            return sorted(found)

        deadline = time.monotonic() + 10
        while len(sleeps()) < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert sleeps() == ["sleep 301", "sleep 302", "sleep 303"]
        gateway_process = pt.find_gateway(url=gateway.url,
                                          state_dir=str(gateway.state_dir))
        assert {s.pid: s.command for s in pt.exec_shells(gateway_process)}.get(shell_pid) \
            == command
        members = group_of(shell_pid)
        bystanders = group_of(other_update["partialResult"]["details"]["pid"])
        lookalike_procs = [psutil.Process(lookalike.pid),
                           *psutil.Process(lookalike.pid).children()]
        code, record, _ = run_stop(gateway, tmp_path, key, kill=True)
        assert code == 0, record
        assert record["action"] == "kill" and record["ok"] is True
        assert shell_pid in record["pids"], (record, attribution_report(gateway, key))
        assert not [p.pid for p in members if alive(p)], "a process of the run survived"
        end = gateway.wait_run_end(run_id, timeout=30)
        assert end.get("aborted") is True
        assert all(alive(p) for p in lookalike_procs), "the look-alike was touched"
        assert all(alive(p) for p in bystanders), "another session's exec was touched"
    finally:
        os.killpg(lookalike.pid, signal.SIGKILL)
        lookalike.wait(5)
        gateway.call("chat.abort", {"sessionKey": other_key})


def test_stop_kill_ends_a_background_exec_that_outlived_its_run(open_gateway, tmp_path):
    key = f"agent:main:e2e-bg-{tag()}"
    run_id = open_gateway.start_run("poll", key, cmd="sleep 311")
    (result,) = wait_tool_events(open_gateway, run_id, 1, timeout=90, phase="result")
    pid = result["result"]["details"]["pid"]
    wait_tool_events(open_gateway, run_id, 3, timeout=60)
    open_gateway.call("chat.abort", {"sessionKey": key})
    open_gateway.wait_run_end(run_id, timeout=30)
    members = group_of(pid)
    assert members, "the background exec did not outlive its run"
    code, record, _ = run_stop(open_gateway, tmp_path, key, kill=True)
    assert code == 0, record
    assert "no active run" in record["detail"] and "1 killed by clawwatch" in record["detail"]
    assert not [p.pid for p in members if alive(p)]


SEED_COMMAND = 'until curl -sf http://127.0.0.1:9/ >/dev/null; do echo "Waiting..."; sleep 1; done'


def test_the_seed_case_is_found_hung_and_killed(open_gateway, tmp_path):
    """One exec that never returns and prints the same line forever: no call repeats, so
    only ``hung_process`` sees it; OpenClaw backgrounds it after 10 s and the run ends, and
    the loop would go on writing "Waiting..." for ever. The policy kills it."""
    audit_path = tmp_path / "audit.jsonl"
    config = tmp_path / "clawwatch.yaml"
    config.write_text("detection:\n  hung_process: {warning_seconds: 6, critical_seconds: 12}\n"
                      "actions:\n  mode: auto\n  on_critical: alert\n"
                      "  triggers: {\"hung_process:critical\": kill}\n"
                      f"  audit_log: {audit_path}\n")
    watcher = Watcher(open_gateway, config)
    try:
        assert watcher.wait_for(lambda r: r.get("message") == "caught up", timeout=60)
        key = f"agent:main:e2e-seed-{tag()}"
        run_id = open_gateway.start_run("sleepy", key, cmd=SEED_COMMAND, max=1)
        (update,) = wait_tool_events(open_gateway, run_id, 1, timeout=90, phase="update")
        members = group_of(update["partialResult"]["details"]["pid"])
        end = open_gateway.wait_run_end(run_id, timeout=60)
        assert end.get("aborted") is not True and [p for p in members if alive(p)], (
            "the exec should have been backgrounded and outlived its run")
        critical = watcher.wait_for(
            lambda r: r.get("type") == "finding" and r.get("key") == key
            and r.get("detector") == "hung_process" and r.get("level") == "critical", 60)
        action = watcher.wait_for(lambda r: r.get("type") == "action" and r.get("key") == key,
                                  timeout=30)
    finally:
        stderr = watcher.close()
    assert critical is not None, f"no hung_process critical; stderr:\n{stderr}"
    assert "repeated the same output" in critical[1]["message"], critical
    assert action is not None and action[1]["action"] == "kill" and action[1]["ok"], action
    assert not [p.pid for p in members if alive(p)], "the hung loop survived"
    warnings = [r for _, r in watcher.lines if r.get("type") == "finding"
                and r.get("key") == key and r.get("detector") == "hung_process"]
    assert [r["level"] for r in warnings] == ["warning", "critical"]

"""``clawwatch demo``: the headless demo really stops and kills, and leaves nothing behind.

Real parts only: the demo runs as a subprocess (its simulator, its gateway endpoint on
127.0.0.1, its ``sleep`` exec children), and the endpoint is spoken to with the same
``GatewayClient`` the actions use.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from datetime import datetime
from pathlib import Path

import psutil
import pytest

from monitor.act.gateway_client import GatewayClient
from monitor.act.gateway_errors import GatewayAuthError
from monitor.demo import DEMO_SCENARIOS, DemoWorld

KEYS = dict(DEMO_SCENARIOS)
LOOPING = ("hammer", "pingpong", "poll", "rotation")
RATE = "16"   # turns per second: every looping session turns critical in ~8 s, even when slowed


def demo_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENCLAW_", "CLAWWATCH_")) or k == "CLAWWATCH_LOG_DIRS"}
    env.update(HOME=str(tmp_path), TMPDIR=str(tmp_path), XDG_STATE_HOME=str(tmp_path / "xdg"))
    return env


def exec_children(pid: int) -> list[psutil.Process]:
    """The demo's exec shells and their members (everything marked OPENCLAW_SHELL=exec)."""
    found = []
    for proc in psutil.Process(pid).children(recursive=True):
        try:
            if proc.environ().get("OPENCLAW_SHELL") == "exec":
                found.append(proc)
        except psutil.Error:
            continue
    return found


def gone(proc: psutil.Process) -> bool:
    try:
        return not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def wait_until(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


class DemoRun:
    """``python -m monitor demo --headless --json …`` with its records read as they come."""

    def __init__(self, tmp_path: Path, *args: str) -> None:
        self.tmp_path = tmp_path
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "monitor", "demo", "--headless", "--json", "--rate", RATE,
             *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=demo_env(tmp_path), cwd=Path(__file__).resolve().parents[1])
        self.records: list[dict] = []
        self.first = threading.Event()
        self.children: list[psutil.Process] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.stderr: list[str] = []
        self.errors = threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr),
                                       daemon=True)
        self.errors.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.records.append(json.loads(line))
            if not self.first.is_set():
                self.children = exec_children(self.proc.pid)
                self.first.set()

    def finish(self, timeout: float) -> tuple[int, str]:
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise
        self.reader.join(timeout=5)
        self.errors.join(timeout=5)
        return self.proc.returncode, "".join(self.stderr)

    def of(self, kind: str, key: str | None = None) -> list[dict]:
        return [r for r in self.records if r["type"] == kind and (key is None or r["key"] == key)]

    def leftovers(self) -> list[Path]:
        return sorted(self.tmp_path.glob("clawwatch-demo-*"))


def ts(record: dict) -> datetime:
    return datetime.fromisoformat(record["ts"].replace("Z", "+00:00"))


@pytest.mark.timeout(120)
def test_headless_demo_auto_acts_stops_and_kills_then_cleans_up(tmp_path):
    run = DemoRun(tmp_path, "--seconds", "20", "--act", "auto")
    assert run.first.wait(30), "the demo printed nothing"
    children = run.children
    assert len({proc.pid for proc in children}) >= 4, "one exec child per looping session"
    code, stderr = run.finish(timeout=60)
    assert code == 0, stderr
    assert "Traceback" not in stderr

    for scenario in LOOPING:
        criticals = [f for f in run.of("finding", KEYS[scenario]) if f["level"] == "critical"]
        assert criticals, f"no critical for {scenario}"
    assert not [f for f in run.of("finding", KEYS["healthy"]) if f["level"] == "critical"]
    assert not run.of("action", KEYS["healthy"])
    assert any(f["detector"] == "token_budget" for f in run.of("finding", KEYS["burner"]))

    actions = run.of("action")
    assert not [a for a in actions if not a["ok"]], actions
    # the demo's Claude Code loop is stopped through its process (tests/test_demo_claude_code.py)
    actions = [a for a in actions if not a["key"].startswith("claude-code:")]
    stops = [a for a in actions if a["action"] in ("abort", "stop-text")]
    kills = [a for a in actions if a["action"] == "kill"]
    assert stops and kills, actions
    for action in actions:
        key = action["key"]
        # the simulated run really stopped: killed in the index, no call after the action
        final = run.of("session", key)[-1]
        assert final["status"] == "killed" and final["aborted_last_run"] is True, final
        assert all(ts(call) <= ts(action) for call in run.of("tool_call", key)), key

    by_pid = {proc.pid: proc for proc in children}
    killed = [pid for kill in kills for pid in kill["pids"]]
    assert killed and set(killed) <= set(by_pid), (killed, sorted(by_pid))
    assert any("killed by clawwatch" in kill["detail"] and "1 killed" in kill["detail"]
               for kill in kills), kills
    assert all(gone(by_pid[pid]) for pid in killed)
    assert wait_until(lambda: all(gone(proc) for proc in children), 5)
    assert run.leftovers() == []


@pytest.mark.timeout(60)
def test_sigterm_ends_the_demo_with_its_children_and_temp_dir(tmp_path):
    run = DemoRun(tmp_path)
    assert run.first.wait(30), "the demo printed nothing"
    children = run.children
    assert children and run.leftovers()
    run.proc.send_signal(signal.SIGTERM)
    code, stderr = run.finish(timeout=30)
    assert code == 0, stderr
    assert "Traceback" not in stderr
    assert wait_until(lambda: all(gone(proc) for proc in children), 5)
    assert run.leftovers() == []


@pytest.fixture
def world(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    demo = DemoWorld(rate=4).start()
    yield demo
    demo.close()


def test_endpoint_refuses_a_wrong_token_and_stops_a_run_with_slash_stop(world):
    gateway = world.gateway
    with pytest.raises(GatewayAuthError) as refused:
        GatewayClient(gateway.url, "not-the-token", attempts=1).call("health")
    assert gateway.token not in str(refused.value)

    events: list[dict] = []
    client = GatewayClient(gateway.url, gateway.token, attempts=1, on_event=events.append)
    try:
        rows = {row["key"]: row for row in client.sessions_list()}
        assert set(rows) == set(KEYS.values())
        key = KEYS["pingpong"]
        assert rows[key]["hasActiveRun"] is True
        child = gateway.live_children(key)[0]

        stopped = client.send_stop(key)
        assert stopped["aborted"] is True and stopped["runIds"] == rows[key]["activeRunIds"]
        assert any(frame["payload"].get("stream") == "lifecycle"
                   and frame["payload"]["data"].get("phase") == "end"
                   for frame in events if frame["event"] == "agent")
        session = world.simulator.session(key)
        assert session.ended and session.status == "killed" and session.aborted
        calls = session.tool_calls
        assert wait_until(lambda: gone(psutil.Process(child.pid))
                          if psutil.pid_exists(child.pid) else True, 5)
        hammer = world.simulator.session(KEYS["hammer"])
        turns = hammer.tool_calls
        assert wait_until(lambda: hammer.tool_calls >= turns + 3, 10)
        assert world.simulator.session(key).tool_calls == calls, "a stopped run went on"

        again = client.send_stop(key)
        assert again == {"ok": True, "aborted": False, "runIds": []}
        assert client.sessions_abort(key)["status"] == "no-active-run"
        row = client.session_row(key)
        assert row["hasActiveRun"] is False and row["abortedLastRun"] is True
    finally:
        client.close()


def test_abort_leaves_a_background_exec_running(world):
    key = KEYS["poll"]
    child = world.gateway.live_children(key)[0]
    assert child.background
    client = GatewayClient(world.gateway.url, world.gateway.token, attempts=1)
    try:
        assert client.chat_abort(key)["aborted"] is True
    finally:
        client.close()
    assert child.alive(), "a background exec outlives the abort, as in OpenClaw"


@pytest.mark.timeout(60)
def test_exec_children_do_not_outlive_a_killed_demo(tmp_path):
    run = DemoRun(tmp_path)
    assert run.first.wait(30), "the demo printed nothing"
    children = run.children
    assert children
    run.proc.kill()   # SIGKILL: no cleanup code runs; the children notice by themselves
    run.finish(timeout=30)
    assert wait_until(lambda: all(gone(proc) for proc in children), 10)

"""``clawwatch watch --json`` tailing a real OpenClaw gateway while a looping run is in progress.

Every tool call the run makes must come out as one ``tool_call`` line (matched by call id
against plain SQL over the agent DB), and the first of them while the run is still going.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from . import truth

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

REPO_ROOT = Path(__file__).resolve().parents[2]
WATCH_SECONDS = 40


class LineCollector:
    """Reads a process's stdout on a thread; keeps ``(arrival monotonic time, line)``."""

    def __init__(self, stream):
        self.lines: list[tuple[float, str]] = []
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream) -> None:
        for line in stream:
            with self._cond:
                self.lines.append((time.monotonic(), line.rstrip("\n")))
                self._cond.notify_all()

    def records(self) -> list[tuple[float, dict]]:
        with self._cond:
            return [(at, json.loads(line)) for at, line in self.lines if line.strip()]

    def wait_for(self, predicate, timeout: float) -> bool:
        """Wait until ``predicate(records)`` holds; False on timeout."""
        deadline = time.monotonic() + timeout
        while not predicate(self.records()):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            with self._cond:
                self._cond.wait(min(remaining, 0.5))
        return True

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)


def tool_call_lines(records, session_id: str) -> list[tuple[float, dict]]:
    return [(at, r) for at, r in records
            if r.get("type") == "tool_call" and r.get("session_id") == session_id]


def test_watch_reports_every_tool_call_of_a_live_run(real_gateway, tmp_path):
    stderr_path = tmp_path / "watch.stderr"
    argv = [sys.executable, "-m", "monitor", "watch", "--headless", "--json",
            "--state-dir", str(real_gateway.state_dir), "--log", str(real_gateway.log_path),
            "--seconds", str(WATCH_SECONDS), "--from-start", "--no-checkpoint"]
    with open(stderr_path, "w") as stderr:
        watch = subprocess.Popen(argv, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=stderr,
                                 text=True, start_new_session=True)
    try:
        collector = LineCollector(watch.stdout)
        key = f"agent:main:e2e-watch-hammer-{uuid.uuid4().hex[:8]}"
        # Slow replies stretch the run (~10 s) well past watch's start-up.
        run_id = real_gateway.start_run("hammer", key, tag=key.rsplit(":", 1)[1], delay=0.4)
        end = real_gateway.wait_run_end(run_id, timeout=120)
        run_ended_at = time.monotonic()
        truths = truth.wait_quiescent(real_gateway.agent_db)
        session = next(t for t in truths.values() if t.key == key)
        expected_ids = set(session.call_ids)
        collector.wait_for(
            lambda records: expected_ids <= {r["call_id"] for _, r in
                                             tool_call_lines(records, session.session_id)},
            timeout=20)
        if watch.poll() is None:
            watch.send_signal(signal.SIGINT)
        returncode = watch.wait(timeout=20)
        collector.join(5)
    finally:
        if watch.poll() is None:
            watch.kill()
            watch.wait()
    stderr_tail = stderr_path.read_text(errors="replace")[-2000:]
    assert returncode == 0, f"watch exited {returncode}; stderr:\n{stderr_tail}"
    assert end["phase"] == "error", f"hammer run was not stopped by loop detection: {end}"
    assert session.tool_calls >= 20 and set(session.tools) == {"exec"}, session

    records = collector.records()
    for _, record in records:
        assert isinstance(record.get("type"), str) and isinstance(record.get("ts"), str), record
    lines = tool_call_lines(records, session.session_id)
    got_ids = [r["call_id"] for _, r in lines]
    missing = [cid for cid in session.call_ids if cid not in got_ids]
    assert not missing, (f"{len(missing)} of {session.tool_calls} tool calls missing from watch "
                         f"output, first {missing[:3]}; stderr:\n{stderr_tail}")
    assert sorted(got_ids) == sorted(session.call_ids), "duplicate or foreign tool_call lines"
    assert [r["name"] for _, r in lines] == ["exec"] * session.tool_calls
    assert all(r.get("key") == key for _, r in lines), [r.get("key") for _, r in lines]
    assert [r.get("at_call") for _, r in lines] == list(range(1, session.tool_calls + 1))
    assert lines[0][0] < run_ended_at, "no tool_call line arrived while the run was in progress"

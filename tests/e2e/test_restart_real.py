"""Restart without forgetting, on a real OpenClaw gateway: ``clawwatch watch`` is stopped
(SIGTERM) at call 15 of a hammer loop and started again on its checkpoint. Between them the
two runs report every tool call once and the same findings, at the same calls, as one
uninterrupted read of the run (``replay``), none twice.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from collections import Counter
from pathlib import Path

import pytest

from . import truth
from .cli_agents_lab import wait_for
from .test_watch_real import LineCollector, tool_call_lines

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

REPO_ROOT = Path(__file__).resolve().parents[2]
STOP_AT_CALL = 15


def start_watch(gateway, checkpoint: Path, stderr_path: Path) -> subprocess.Popen:
    argv = [sys.executable, "-m", "monitor", "watch", "--headless", "--json", "--poll", "0.2",
            "--state-dir", str(gateway.state_dir), "--log", str(gateway.log_path),
            "--checkpoint", str(checkpoint)]
    with open(stderr_path, "a") as stderr:
        return subprocess.Popen(argv, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=stderr,
                                text=True, start_new_session=True,
                                env={**os.environ, "PYTHONFAULTHANDLER": "1"})


def where_it_waits(watch: subprocess.Popen, collector: LineCollector, stderr_path: Path,
                   key: str) -> str:
    """What a watch that did not report in time printed, and its threads' stacks
    (faulthandler dumps them on SIGABRT)."""
    records = [r for _, r in collector.records()]
    calls = [r.get("at_call") for r in records
             if r.get("type") == "tool_call" and r.get("key") == key]
    watch.send_signal(signal.SIGABRT)
    watch.wait(timeout=10)
    return (f"{len(records)} records {Counter(r.get('type') for r in records)}; "
            f"calls of the run {calls}; last {records[-3:]}\n"
            + stderr_path.read_text()[-6000:])


def stop(watch: subprocess.Popen, collector: LineCollector) -> int:
    watch.send_signal(signal.SIGTERM)
    code = watch.wait(timeout=10)
    collector.join(5)
    return code


def detector_findings(records: list[dict], session_id: str) -> list[tuple]:
    """(detector, level, count, at_call) of clawwatch's own detectors (OpenClaw's log lines
    are another source: the log resumes at its checkpoint)."""
    return [(r["detector"], r["level"], r["count"], r["at_call"]) for r in records
            if r.get("type") == "finding" and r.get("session_id") == session_id
            and r["detector"] != "gateway_loop_notice"]


def test_a_restart_mid_loop_neither_misses_nor_repeats(real_gateway, tmp_path):
    checkpoint = tmp_path / "watch.checkpoint.json"
    stderr_path = tmp_path / "watch.stderr"
    key = f"agent:main:e2e-restart-{uuid.uuid4().hex[:8]}"
    first = start_watch(real_gateway, checkpoint, stderr_path)
    second = None
    try:
        first_lines = LineCollector(first.stdout)
        # What the first watch reads while it catches up quietly is never reported.
        wait_for(lambda: "caught up on the history" in stderr_path.read_text(),
                 "the first watch to catch up", 60)
        run_id = real_gateway.start_run("hammer", key, tag=key.rsplit(":", 1)[1], delay=0.5)

        def calls_of_the_run(records) -> list[dict]:
            return [r for _, r in records if r.get("type") == "tool_call" and r["key"] == key]

        assert first_lines.wait_for(lambda rs: len(calls_of_the_run(rs)) >= STOP_AT_CALL, 90), \
            stderr_path.read_text()[-2000:]
        assert stop(first, first_lines) == 0
        before = [r for _, r in first_lines.records()]
        second = start_watch(real_gateway, checkpoint, stderr_path)
        second_lines = LineCollector(second.stdout)
        end = real_gateway.wait_run_end(run_id, timeout=120)
        truths = truth.wait_quiescent(real_gateway.agent_db)
        session = next(t for t in truths.values() if t.key == key)
        assert second_lines.wait_for(
            lambda rs: len(calls_of_the_run(rs)) + len(calls_of_the_run(
                [(0, r) for r in before])) >= session.tool_calls, 180), \
            where_it_waits(second, second_lines, stderr_path, key)
        assert stop(second, second_lines) == 0
        after = [r for _, r in second_lines.records()]
    finally:
        for watch in (first, second):
            if watch is not None and watch.poll() is None:
                watch.kill()
                watch.wait()
    assert end["phase"] == "error", end
    assert STOP_AT_CALL < session.tool_calls

    reported = [r for _, r in tool_call_lines([(0, r) for r in before + after],
                                              session.session_id)]
    assert sorted(r["call_id"] for r in reported) == sorted(session.call_ids), \
        "every tool call once across the restart"
    assert [r["at_call"] for r in reported] == list(range(1, session.tool_calls + 1)), \
        "call numbers go on across the restart"

    replay = subprocess.run(
        [sys.executable, "-m", "monitor", "replay", "--json", "--no-cache", "--state-dir",
         str(real_gateway.state_dir)], cwd=REPO_ROOT, capture_output=True, text=True,
        check=True)
    (uninterrupted,) = [s for s in json.loads(replay.stdout)["sessions"] if s["key"] == key]
    expected = [(f["detector"], f["level"], f["count"], f["at_call"])
                for f in uninterrupted["findings"] if f["detector"] != "gateway_loop_notice"]
    got = detector_findings(before, session.session_id) + \
        detector_findings(after, session.session_id)
    assert any(level == "critical" and at_call > STOP_AT_CALL
               for _, level, _, at_call in expected), expected
    assert not [f for f, n in Counter(got).items() if n > 1], "a finding repeated"
    assert got == expected

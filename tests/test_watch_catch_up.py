"""A first ``watch`` catches up on the history quietly and says on stderr when it is done:
what is written from then on is reported, what was there before is not."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from pathlib import Path

from chaos_writer import assistant_tool_call, dumps
from small_state import SID, make_state

from monitor.demo.sim.scenarios import Scenario, ToolStep
from monitor.demo.sim.simulator import Simulator

REPO = Path(__file__).resolve().parent.parent


class Lines:
    """A stream's lines, read on a thread; ``wait_for`` awaits one that matches."""

    def __init__(self, stream) -> None:
        self.lines: list[str] = []
        self._arrived = threading.Condition()
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream) -> None:
        for line in stream:
            with self._arrived:
                self.lines.append(line)
                self._arrived.notify_all()

    def wait_for(self, predicate, timeout: float) -> str | None:
        with self._arrived:
            self._arrived.wait_for(lambda: any(map(predicate, self.lines)), timeout)
            return next(filter(predicate, self.lines), None)


def test_a_first_watch_says_when_it_has_caught_up_and_reports_what_comes_after(tmp_path):
    state, log = make_state(tmp_path)
    watch = subprocess.Popen(
        [sys.executable, "-m", "monitor", "watch", "--headless", "--json", "--no-checkpoint",
         "--poll", "0.1", "--state-dir", str(state), "--log", str(log)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True)
    try:
        stdout, stderr = Lines(watch.stdout), Lines(watch.stderr)
        note = stderr.wait_for(lambda line: "caught up" in line, 60)
        assert note is not None and note.startswith(
            "clawwatch watch: caught up on the history (2 sessions, "), stderr.lines
        transcript = state / "agents" / "main" / "sessions" / f"{SID}.jsonl"
        with open(transcript, "a") as appended:
            appended.write(dumps(assistant_tool_call("after", 9)) + "\n")
        assert stdout.wait_for(lambda line: '"after"' in line, 30), stdout.lines
        watch.send_signal(signal.SIGTERM)
        assert watch.wait(timeout=10) == 0
    finally:
        if watch.poll() is None:
            watch.kill()
            watch.wait()
    calls = [r["call_id"] for r in map(json.loads, stdout.lines) if r["type"] == "tool_call"]
    assert calls == ["after"], "the history is not reported, what follows is"
    assert len([line for line in stderr.lines if "caught up" in line]) == 1


def test_a_from_start_watch_reports_the_history_and_announces_no_catch_up(tmp_path):
    state, log = make_state(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "monitor", "watch", "--headless", "--json", "--no-checkpoint",
         "--from-start", "--seconds", "0.5", "--state-dir", str(state), "--log", str(log)],
        cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "caught up" not in done.stderr
    calls = [r["call_id"] for r in map(json.loads, done.stdout.splitlines())
             if r["type"] == "tool_call"]
    assert sorted(calls) == ["c0", "c1", "c2", "s1", "s2", "s3"]


def _same_call_forever(env):
    while True:
        yield ToolStep("exec", {"command": "ls"}, "same")


def test_a_loop_under_way_when_a_first_watch_starts_is_reported_once_it_has_caught_up(
        tmp_path):
    """What the catch-up raised quietly and still holds (a session looping now) is reported
    when it ends, marked ``caught_up``, and the actions take it as they take any finding; a
    session that ended is not reported, and calls that come after are reported as ever."""
    sim = Simulator(tmp_path / "state", agent_id="main")
    sim.add_session(Scenario("hammer", "go", 1000, _same_call_forever), key="agent:main:hammer")
    sim.add_session(Scenario("ended", "go", 1000, _same_call_forever), key="agent:main:ended")
    sim.run(calls=50, rate=0)
    sim.end_session("agent:main:ended", status="done", aborted=False)
    config = tmp_path / "clawwatch.yaml"
    config.write_text("actions:\n  on_loop_critical: stop\n")
    watch = subprocess.Popen(
        [sys.executable, "-m", "monitor", "watch", "--headless", "--json", "--no-checkpoint",
         "--poll", "0.1", "--state-dir", str(tmp_path / "state"), "--config", str(config),
         "--act", "dry-run"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True)
    try:
        stdout, stderr = Lines(watch.stdout), Lines(watch.stderr)
        assert stderr.wait_for(lambda line: "caught up" in line, 60), stderr.lines
        assert stdout.wait_for(lambda line: '"action"' in line, 30), stdout.lines
        sim.run(calls=2, rate=0)
        assert stdout.wait_for(lambda line: '"tool_call"' in line, 30), stdout.lines
        watch.send_signal(signal.SIGTERM)
        assert watch.wait(timeout=10) == 0
    finally:
        sim.close()
        if watch.poll() is None:
            watch.kill()
            watch.wait()
    records = [json.loads(line) for line in stdout.lines]
    findings = [r for r in records if r["type"] == "finding"]
    assert {r["key"] for r in findings} == {"agent:main:hammer"}, findings
    assert all(r["caught_up"] is True for r in findings)
    assert ("generic_repeat", "critical") in {(r["detector"], r["level"]) for r in findings}
    assert len(findings) == len({(r["detector"], r["message"]) for r in findings})
    actions = [r for r in records if r["type"] == "action"]
    assert [(r["key"], r["action"], r["dry_run"]) for r in actions] == [
        ("agent:main:hammer", "abort", True)], actions
    assert records.index(findings[-1]) < min(
        i for i, r in enumerate(records) if r["type"] == "tool_call")

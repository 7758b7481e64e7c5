"""A session keeps its newest findings only, but counts every one it ever produced.

A simulated hammer session (real SQLite agent DB, real gateway log with OpenClaw's
loop-warning lines) produces more findings than the cap, which is lowered here so a
short run exceeds it. The replay document reports the total, and the dashboard row
is rebuilt when a finding arrives while the kept list is already full.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from monitor import session_state
from monitor.config import Config
from monitor.demo.sim.session import FakeClock
from monitor.demo.sim.simulator import Simulator
from monitor.detect.engine import DetectionEngine
from monitor.pipeline import Monitor
from monitor.records import as_json_list
from monitor.snapshot_builder import SnapshotBuilder
from monitor.sources.sourceset import SourceSet

KEPT = 6


@pytest.fixture
def hammer(tmp_path):
    clock = FakeClock(tick=1.0)
    sim = Simulator(tmp_path / "state", log_path=tmp_path / "gw.log", clock=clock,
                    loop_warnings=True)
    session = sim.add_session("hammer", key="agent:main:hammer")
    sim.run(calls=160, rate=0)
    yield sim, session, tmp_path
    sim.close()


def replayed(tmp_path, *, quiet: bool) -> tuple[Monitor, list[dict]]:
    monitor = Monitor(SourceSet(state_dir=str(tmp_path / "state"),
                                log_path=str(tmp_path / "gw.log"), replay=True),
                      DetectionEngine(Config()))
    monitor.quiet = quiet
    records: list[dict] = []
    while True:
        step = as_json_list(monitor.step())
        records += step
        if not step and not monitor.sources.behind:
            break
    return monitor, [r for r in records if r["type"] == "finding"]


def test_a_session_keeps_its_newest_findings_and_counts_all(hammer, monkeypatch):
    _, session, tmp_path = hammer
    monkeypatch.setattr(session_state, "FINDINGS_KEPT", KEPT)
    monitor, emitted = replayed(tmp_path, quiet=False)
    state = monitor.sessions[session.session_id]
    produced = [r for r in emitted if r["session_id"] == session.session_id]
    assert len(produced) > KEPT + 3
    assert state.findings_total == len(produced)
    assert len(state.findings) == KEPT
    newest = [{k: r[k] for k in ("detector", "level", "count", "at_call", "message")}
              for r in produced[-KEPT:]]
    assert [{k: f.as_json()[k] for k in newest[0]} for f in state.findings] == newest

    document = json.loads(json.dumps(monitor.report()))
    reported = next(s for s in document["sessions"] if s["session_id"] == session.session_id)
    assert reported["findings_total"] == len(produced)
    assert len(reported["findings"]) == KEPT


def test_replay_cli_reports_the_total_beside_the_findings(hammer):
    _, session, tmp_path = hammer
    result = subprocess.run(
        [sys.executable, "-m", "monitor", "replay", "--state-dir", str(tmp_path / "state"),
         "--log", str(tmp_path / "gw.log"), "--json"],
        capture_output=True, text=True, check=True, timeout=120)
    sessions = json.loads(result.stdout)["sessions"]
    reported = next(s for s in sessions if s["session_id"] == session.session_id)
    assert reported["findings_total"] == len(reported["findings"]) > KEPT
    assert reported["findings_total"] <= session_state.FINDINGS_KEPT


def test_dashboard_row_changes_when_a_finding_arrives_at_the_cap(hammer, monkeypatch):
    sim, session, tmp_path = hammer
    monkeypatch.setattr(session_state, "FINDINGS_KEPT", KEPT)
    monitor = Monitor(SourceSet(state_dir=str(tmp_path / "state"),
                                log_path=str(tmp_path / "gw.log")),
                      DetectionEngine(Config()))
    builder = SnapshotBuilder(monitor, lambda: sim.clock.now)
    monitor.quiet = True
    while monitor.step() or builder.feed.backlog:
        pass
    builder.finish_scan()
    state = monitor.sessions[session.session_id]
    assert len(state.findings) == KEPT
    before = builder.build().row(session.session_id)
    assert before.alerts == state.findings_total

    # One more OpenClaw loop line: a finding, but no tool call and no new transcript event.
    total, calls, last_ts = state.findings_total, state.tool_calls, state.last_ts
    sim.log.loop_warning(sim.clock(), session.run_trace, tool="exec", count=10_000,
                         session_id=session.session_id, session_key=session.key)
    monitor.quiet = False
    emitted: list[dict] = []
    for _ in range(20):  # polls until the appended line is read (a few at most)
        step = as_json_list(monitor.step())
        builder.absorb(step)
        emitted += [r for r in step if r["type"] == "finding"]
        if emitted:
            break
    assert len(emitted) == 1
    assert state.findings_total == total + 1
    assert (len(state.findings), state.tool_calls, state.last_ts) == (KEPT, calls, last_ts)
    after = builder.build().row(session.session_id)
    assert after.alerts == total + 1
    assert after.worst_count == 10_000


def test_a_long_loop_keeps_the_newest_findings_at_the_real_cap(tmp_path):
    """At the shipped cap: a hammer loop long enough to outgrow it (OpenClaw warns every
    tenth call) keeps exactly the newest ``FINDINGS_KEPT`` and still counts them all."""
    sim = Simulator(tmp_path / "state", log_path=tmp_path / "gw.log",
                    clock=FakeClock(tick=1.0), loop_warnings=True)
    sim.store.writer.autocommit = False
    session = sim.add_session("hammer", key="agent:main:hammer")
    sim.run(calls=12 * session_state.FINDINGS_KEPT, rate=0)
    sim.close()
    monitor, emitted = replayed(tmp_path, quiet=False)
    produced = [r for r in emitted if r["session_id"] == session.session_id]
    assert len(produced) > session_state.FINDINGS_KEPT
    reported = next(s for s in monitor.report()["sessions"]
                    if s["session_id"] == session.session_id)
    assert reported["findings_total"] == len(produced)
    assert reported["findings"] == [
        {k: r[k] for k in ("detector", "level", "count", "tool", "at_call", "message")}
        for r in produced[-session_state.FINDINGS_KEPT:]]

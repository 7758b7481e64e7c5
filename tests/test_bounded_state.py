"""Per-session and per-monitor memory stays bounded however many events a session writes.

Each test drives a session past one bound, through the real path where it can (an agent
DB in OpenClaw's schema read by ``SourceSet`` into ``Monitor`` + ``DetectionEngine``), and
checks that the container stops growing while detection keeps working. Bounds are lowered
with ``monkeypatch`` where the real one would take thousands of runs to reach.
"""

from __future__ import annotations

import itertools
import sys

import pytest
from test_detect_support import Script

from monitor import pipeline
from monitor.config import Config
from monitor.demo.sim import transcript as tx
from monitor.demo.sim.session import FakeClock
from monitor.demo.sim.simulator import Simulator
from monitor.demo.sim.sqlite_writer import SqliteAgentWriter
from monitor.demo.sim.stores import sqlite_path
from monitor.detect import engine as engine_module
from monitor.detect.budgets import BUCKETS_PER_WINDOW, SERIES_POINTS
from monitor.detect.engine import DetectionEngine
from monitor.detect.findings import Finding
from monitor.detect.outcomes import OUTCOME_PARAM_KEYS, outcome_of, outcome_params
from monitor.detect.session_state import MAX_GATE_KEYS, MAX_PENDING_CALLS, BoundedGate
from monitor.detect.tool_call_hashing import tool_params
from monitor.events import GatewayNotice, UserMessage
from monitor.pipeline import Monitor
from monitor.sources.sourceset import SourceSet


class AgentDb:
    """Writes OpenClaw transcripts with as many runs as a test needs into a real agent DB."""

    def __init__(self, state_dir) -> None:
        self.writer = SqliteAgentWriter(sqlite_path(state_dir, "main"), autocommit=False)
        self.clock = FakeClock(tick=1.0)
        self.ids = itertools.count(1)
        self.parent: dict[str, str] = {}

    def _append(self, session_id: str, entry: dict) -> None:
        self.writer.append_event(session_id, entry, created_at=tx.to_ms(self.clock.now))
        self.parent[session_id] = entry["id"]

    def session(self, key: str, session_id: str) -> None:
        now = self.clock()
        self.writer.upsert_session(key, session_id, {"sessionId": session_id}, "running",
                                   created_at=tx.to_ms(now), updated_at=tx.to_ms(now))
        self.writer.append_event(session_id, tx.session_header(session_id, now, "/work"),
                                 created_at=tx.to_ms(now))
        self.parent[session_id] = session_id

    def prompt(self, session_id: str, run_id: str) -> None:
        now = self.clock()
        self._append(session_id, tx.user_message(f"u{next(self.ids)}", now, "go on", run_id,
                                                 now))

    def call(self, session_id: str, run_id: str, tool: str, arguments: dict, *,
             result: str | None) -> None:
        """One assistant turn calling ``tool``; its result unless ``result`` is None."""
        call_id = f"call_{next(self.ids):06d}"
        now = self.clock()
        self._append(session_id, tx.assistant_message(
            f"a{next(self.ids)}", self.parent[session_id], now,
            content=[tx.tool_call_item(call_id, tool, arguments)],
            model_usage=tx.usage(1000, 20), stop_reason="toolUse", started_ts=now,
            response_id=f"r{next(self.ids)}", run_id=run_id, provider="fake", model="m",
            api="openai-completions"))
        if result is not None:
            self._append(session_id, tx.tool_result(
                f"t{next(self.ids)}", self.parent[session_id], self.clock(), call_id=call_id,
                tool=tool, text=result, details=None, is_error=False, run_id=run_id))

    def commit(self) -> None:
        self.writer.commit()

    def close(self) -> None:
        self.writer.close()


def drain(monitor: Monitor) -> list[dict]:
    records = monitor.step()
    while monitor.sources.behind:
        records += monitor.step()
    return records


@pytest.fixture
def agent_db(tmp_path):
    db = AgentDb(tmp_path / "state")
    yield db
    db.close()


def watching(tmp_path, log_path=None) -> Monitor:
    """The monitor ``watch`` builds (``cmd_watch``), over ``tmp_path/state``."""
    sources = SourceSet(state_dir=str(tmp_path / "state"),
                        log_path=str(log_path) if log_path else None)
    return Monitor(sources, DetectionEngine(Config()))


# ------------------------------------------------------------------ the monitor's run index

def test_the_monitor_remembers_only_the_most_recently_seen_runs(tmp_path, agent_db,
                                                               monkeypatch):
    """A session starts a run per prompt: the run index must not grow with the prompts,
    and a long run that is still writing must outlive the many short ones around it."""
    kept = 8
    monkeypatch.setattr(pipeline, "RUNS_KEPT", kept)
    agent_db.session("agent:main:cron", "sess-cron")
    agent_db.session("agent:main:long", "sess-long")
    agent_db.prompt("sess-long", "run-long")
    agent_db.commit()
    monitor = watching(tmp_path)
    drain(monitor)
    for number in range(5 * kept):
        run = f"run-cron-{number:03d}"
        agent_db.prompt("sess-cron", run)
        agent_db.call("sess-cron", run, "read", {"path": f"notes/{number}.md"}, result="ok")
        agent_db.call("sess-long", "run-long", "exec", {"command": f"make step{number}"},
                      result="done")
        agent_db.commit()
        drain(monitor)
        assert len(monitor.run_to_session) <= kept

    assert monitor.run_to_session["run-long"] == "sess-long"
    assert monitor.run_to_session[f"run-cron-{5 * kept - 1:03d}"] == "sess-cron"
    assert "run-cron-000" not in monitor.run_to_session
    assert monitor.sessions["sess-cron"].tool_calls == 5 * kept


def test_the_engine_run_index_and_orphan_notices_stay_bounded(monkeypatch):
    monkeypatch.setattr(engine_module, "MAX_RUN_INDEX", 16)
    monkeypatch.setattr(engine_module, "MAX_ORPHAN_NOTICES", 16)
    engine = DetectionEngine(Config())
    for number in range(100):
        engine.observe("agent:main:a", "main", UserMessage("sess-a", f"run-{number}",
                                                           1_800_000_000.0 + number, 8))
        line = f"Loop warning: exec called {10 + number} times with identical arguments"
        found = engine.observe(f"agent:main:gone-{number}", "main", GatewayNotice(
            "WARN", "agents/loop-detection", line, 1_800_000_000.0 + number,
            session_key=f"agent:main:gone-{number}"))
        assert [f.detector for f in found] == ["gateway_loop_notice"]
    assert len(engine._run_to_session) == 16
    assert engine._run_to_session["run-99"] == "sess-a"
    assert len(engine._orphan_notices) == 16


# ------------------------------------------------------------------ calls awaiting a result

def test_calls_whose_result_never_comes_are_capped_and_keep_no_arguments(tmp_path, agent_db):
    """Aborted runs leave calls without results; a ``write`` carries a whole file."""
    agent_db.session("agent:main:writer", "sess-w")
    agent_db.prompt("sess-w", "run-w")
    big = "x" * 5_000
    for number in range(MAX_PENDING_CALLS + 40):
        agent_db.call("sess-w", "run-w", "write", {"path": f"out/{number}.txt", "content": big},
                      result=None)
    agent_db.call("sess-w", "run-w", "process", {"action": "poll", "sessionId": "s1"},
                  result=None)
    agent_db.prompt("sess-w", "run-w")       # commits the last batch to the history
    agent_db.commit()
    monitor = watching(tmp_path)
    drain(monitor)

    state = monitor.engine._sessions["sess-w"]
    assert len(state.pending) == MAX_PENDING_CALLS
    assert all(call.params == {} for call in list(state.pending.values())[:-1])
    assert next(reversed(state.pending.values())).params == {"action": "poll"}


@pytest.mark.parametrize(("tool", "params"), [
    ("process", {"action": "poll", "sessionId": "brisk-crest", "timeout": 5000}),
    ("process", {"action": "log", "sessionId": "brisk-crest", "offset": 10}),
    ("process", {"sessionId": "brisk-crest"}),
    ("message", {"action": "send", "to": "#ops", "text": "deploy done"}),
    ("message", {"action": "read", "channel": "#ops"}),
    ("slack", {"to": "#ops", "text": "hi"}),
    ("sessions_send", {"sessionKey": "agent:main:x", "message": "hi"}),
    ("exec", {"command": "ls"}),
    ("write", {"path": "a.txt", "content": "x" * 100}),
    ("read", "not-an-object"),
])
def test_the_kept_params_give_the_same_outcome_as_the_whole_params(tool, params):
    details = {"status": "running", "aggregated": "", "messageId": "m-1", "ts": 17,
               "channel": "#ops", "ok": True}
    kept = outcome_params(tool_params(params))
    assert kept is None or set(kept) <= set(OUTCOME_PARAM_KEYS)
    for is_error in (False, True):
        whole = outcome_of(tool, params, is_error=is_error, details=details, text="no news",
                           is_veto=False)
        assert outcome_of(tool, kept, is_error=is_error, details=details, text="no news",
                          is_veto=False) == whole


# ------------------------------------------------------------------ report gates

def test_a_gate_keeps_its_bound_and_forgets_the_pattern_left_alone_longest():
    gate = BoundedGate()
    assert gate.passes("burn_rate", 1)
    for number in range(4 * MAX_GATE_KEYS):
        assert gate.passes(f"run-1:generic:exec:{number:04d}", 1)
        assert len(gate.marks) <= MAX_GATE_KEYS
        if number % 8 == 0:
            assert not gate.passes("burn_rate", 1)      # still above warning: not again
    assert not gate.passes("burn_rate", 1)
    assert "run-1:generic:exec:0000" not in gate.marks
    assert gate.passes("burn_rate", 2)


def test_a_session_past_the_gate_bound_does_not_report_a_live_pattern_twice():
    """One long run that goes from one stuck command to the next: every command opens a
    new no-progress episode (a new pattern), far more than a gate holds, while the run's
    iteration budget pattern stays live. Its warning and critical come once each."""
    import dataclasses

    from monitor.config.sections import IterationBudgetConfig

    config = Config()   # the iteration budget has no critical by default: set one
    config = dataclasses.replace(config, detection=dataclasses.replace(
        config.detection, iteration_budget=IterationBudgetConfig(critical_tool_calls=200)))
    script = Script(DetectionEngine(config))
    commands = 0
    while script.calls < 200 + 11 * (MAX_GATE_KEYS + 8):
        commands += 1
        for _ in range(11):     # the 11th identical call: no-progress streak 10, a warning
            script.exec(f"cat /var/log/job-{commands}.log", "(still nothing)\n")
    episodes = {f.pattern for f in script.findings if f.detector == "session_no_progress"}
    assert len(episodes) > MAX_GATE_KEYS + 8
    state = script.engine._sessions[script.session_id]
    for gate in (state.warning_buckets, state.critical_buckets, state.levels):
        assert len(gate.marks) <= MAX_GATE_KEYS
    assert [(level, count) for level, count, _ in script.of("iteration_budget")] == \
        [("warning", 100), ("critical", 200)]


# ------------------------------------------------------------------ the findings themselves

def test_kept_findings_share_their_key_tool_and_pattern(tmp_path):
    """The index row and each gateway line bring the key and tool as fresh strings; the
    findings a looping session keeps must not each hold a copy."""
    clock = FakeClock(tick=1.0)
    sim = Simulator(tmp_path / "state", log_path=tmp_path / "gw.log", clock=clock,
                    loop_warnings=True)
    try:
        session = sim.add_session("hammer", key="agent:main:hammer")
        monitor = watching(tmp_path, tmp_path / "gw.log")
        for _ in range(12):
            sim.run(calls=10, rate=0)
            drain(monitor)
    finally:
        sim.close()
    findings = monitor.sessions[session.session_id].findings
    notices = [f for f in findings if f.detector == "gateway_loop_notice"]
    assert len(notices) >= 10
    assert len({id(f.session_key) for f in findings}) == 1
    assert len({id(f.tool) for f in notices}) == 1
    assert len({id(f.pattern) for f in notices}) == len({f.pattern for f in notices}) == 1


def test_interning_keeps_the_values():
    key = "".join(["agent:main:", "x"])
    finding = Finding(key, "s", "burn_rate", "warning", 3, None, 0, "m", "burn_rate", None)
    assert finding.session_key == key and finding.tool is None
    assert finding.session_key is sys.intern("agent:main:x")


# ------------------------------------------------------------------ a long session, end to end

def test_a_long_looping_session_keeps_every_container_at_its_bound(tmp_path):
    """bench_soak's scenarios, past the history window: another stretch of each loop
    leaves every container the size it was."""
    clock = FakeClock(tick=1.0)
    sim = Simulator(tmp_path / "state", log_path=tmp_path / "gw.log", clock=clock,
                    loop_warnings=True)
    sim.store.writer.autocommit = False
    names = ("rotation", "drift", "burner", "hammer", "pingpong", "poll")
    try:
        sessions = [sim.add_session(name, key=f"agent:main:{name}") for name in names]
        monitor = watching(tmp_path, tmp_path / "gw.log")

        def sizes() -> dict:
            out = {"runs": len(monitor.run_to_session)}
            for sim_session in sessions:
                state = monitor.engine._sessions[sim_session.session_id]
                name = sim_session.scenario.name
                out.update({
                    f"{name}.records": len(state.records),
                    f"{name}.run_counts": len(state.run_counts),
                    f"{name}.pending": len(state.pending),
                    f"{name}.recent_call_keys": len(state.recent_call_keys),
                    f"{name}.handled_vetoes": len(state.handled_vetoes),
                    f"{name}.progress": len(state.progress),
                    f"{name}.iterations": len(state.iterations.runs),
                    f"{name}.series": len(state.burn.series),
                    f"{name}.gates": sum(len(gate.marks) for gate in (
                        state.warning_buckets, state.critical_buckets, state.levels)),
                })
            return out

        seen = []
        for _ in range(3):
            for _ in range(70):
                for sim_session in sessions:
                    sim.step(sim_session)
            sim.store.writer.commit()
            drain(monitor)
            seen.append(sizes())
            burn = [len(monitor.engine._sessions[s.session_id].burn.samples) for s in sessions]
            assert max(burn) <= 4 * BUCKETS_PER_WINDOW
    finally:
        sim.close()
    assert seen[1] == seen[2], "a container grew after the history window was full"
    assert max(seen[2].values()) <= max(SERIES_POINTS, Config().detection.history_size)


def test_the_legacy_index_keeps_only_what_the_listing_reads(tmp_path):
    """``sessions.json`` entries have some thirty fields each; after their records are
    given, a source keeps only ``sessionFile`` (10,003 sessions kept whole were ~22 MB)."""
    import json

    from monitor.sources.legacy import LegacySessionsSource

    sessions = tmp_path / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    entry = {f"field{n}": "x" * 20 for n in range(30)}
    (sessions / "sessions.json").write_text(json.dumps({
        "agent:main:a": {**entry, "sessionId": "a", "sessionFile": "a.jsonl"},
        "agent:main:b": {**entry, "sessionId": "b"}}))
    source = LegacySessionsSource(str(sessions), "main")
    records = source.read_index()
    assert sorted(r.session_id for r in records) == ["a", "b"]
    assert source._index == {"agent:main:a": {"sessionFile": "a.jsonl"}, "agent:main:b": {}}

"""Replay and live ingest against the simulator's ground truth, in both storage eras."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import pytest

from monitor.demo.sim.simulator import Simulator
from monitor.pipeline import Monitor
from monitor.records import as_json_list
from monitor.sources.sourceset import SourceSet

ALL_SCENARIOS = ("hammer", "pingpong", "poll", "unknown_tool", "rotation", "drift", "heavy",
                 "healthy", "burner")


def simulate(tmp_path, era: str, calls: int = 150, **options) -> list[dict]:
    sim = Simulator(tmp_path / "state", era=era, log_path=tmp_path / "gw.log", **options)
    for name in ALL_SCENARIOS:
        sim.add_session(name, key=f"agent:main:{name}")
    sim.run(calls=calls, rate=0)
    expected = sim.expected()
    sim.close()
    return expected


def by_session(sessions: list[dict]) -> dict[str, tuple]:
    return {s["session_id"]: (s["key"], s["tool_calls"], s["tools"], s["tokens"])
            for s in sessions}


@pytest.mark.parametrize("era", ["sqlite", "legacy"])
def test_replay_equals_ground_truth(tmp_path, era):
    expected = simulate(tmp_path, era)
    result = subprocess.run(
        [sys.executable, "-m", "monitor", "replay", "--state-dir", str(tmp_path / "state"),
         "--log", str(tmp_path / "gw.log"), "--json"],
        capture_output=True, text=True, check=True)
    document = json.loads(result.stdout)
    assert by_session(document["sessions"]) == by_session(expected)
    kinds = {s["kind"]: s for s in document["sources"]}
    assert set(kinds) == {"gateway-log", "sqlite" if era == "sqlite" else "jsonl"}
    assert all(s["errors"] == 0 and s["events"] > 0 for s in document["sources"])


def test_sqlite_replay_decodes_zstd_rows(tmp_path):
    simulate(tmp_path, "sqlite", calls=60)
    import sqlite3

    db = tmp_path / "state" / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    with sqlite3.connect(db) as conn:
        compressed = conn.execute(
            "SELECT count(*) FROM transcript_events WHERE event_zstd IS NOT NULL").fetchone()[0]
    assert compressed > 0
    monitor = Monitor(SourceSet(state_dir=str(tmp_path / "state")))
    monitor.step()
    source = monitor.sources.sources[0]
    total_rows = sum(source.seq_cursor[sid] + 1 for sid in source.seq_cursor)
    with sqlite3.connect(db) as conn:
        assert total_rows == conn.execute("SELECT count(*) FROM transcript_events").fetchone()[0]


@pytest.mark.parametrize("era,split", [("sqlite", False), ("legacy", True)])
def test_live_ingest_sees_every_call_once_while_the_simulator_writes(tmp_path, era, split):
    state = tmp_path / "state"
    sim = Simulator(state, era=era, log_path=tmp_path / "gw.log", split_writes=split)
    for name in ("hammer", "pingpong", "heavy", "healthy"):
        sim.add_session(name, key=f"agent:main:{name}")
    sim.step(sim.sessions[0])
    monitor = Monitor(SourceSet(state_dir=str(state), log_path=str(tmp_path / "gw.log")))
    seen: list[tuple[str, str]] = []
    writer = threading.Thread(target=sim.run, kwargs={"calls": 160, "rate": 400})
    writer.start()
    while writer.is_alive():
        seen += [(r["session_id"], r["call_id"]) for r in as_json_list(monitor.step())
                 if r["type"] == "tool_call"]
    writer.join()
    for _ in range(3):
        seen += [(r["session_id"], r["call_id"]) for r in as_json_list(monitor.step())
                 if r["type"] == "tool_call"]
    expected = sim.expected()
    sim.close()
    assert len(seen) == len(set(seen))
    assert len(seen) == sum(s["tool_calls"] for s in expected)
    assert by_session(monitor.report()["sessions"]) == by_session(expected)


@pytest.mark.parametrize("archives", [False, True], ids=["live", "with-archives"])
def test_reset_archive_is_drained_and_not_read_twice(tmp_path, archives):
    """The transcript renamed to an archive while followed is read to its end through the
    follower; with archives included (``replay --archives``) it is not opened again."""
    state = tmp_path / "state"
    sim = Simulator(state, era="legacy")
    sim.add_session("hammer", key="agent:main:h")
    monitor = Monitor(SourceSet(state_dir=str(state), include_archives=archives))
    sim.run(calls=5, rate=0)
    first = [r for r in as_json_list(monitor.step()) if r["type"] == "tool_call"]
    sim.run(calls=3, rate=0)
    sim.reset_session("agent:main:h")
    sim.run(calls=4, rate=0)
    later = [r for r in as_json_list(monitor.step()) if r["type"] == "tool_call"]
    for _ in range(3):
        later += [r for r in as_json_list(monitor.step()) if r["type"] == "tool_call"]
    expected = sim.expected()
    sim.close()
    assert len(first) + len(later) == sum(s["tool_calls"] for s in expected) == 12
    assert by_session(monitor.report()["sessions"]) == by_session(expected)


LOOP_DETECTORS = {"generic_repeat", "known_poll_no_progress", "ping_pong", "unknown_tool_repeat",
                  "global_circuit_breaker", "argument_churn", "session_no_progress",
                  "post_compaction_repeat"}


def replay_findings(tmp_path, config_text: str = "") -> dict[str, list[dict]]:
    config = tmp_path / "clawwatch.yaml"
    config.write_text(config_text)
    result = subprocess.run(
        [sys.executable, "-m", "monitor", "replay", "--state-dir", str(tmp_path / "state"),
         "--config", str(config), "--json"], capture_output=True, text=True, check=True)
    return {s["key"].split(":")[-1]: s["findings"] for s in json.loads(result.stdout)["sessions"]}


def test_loops_are_found_and_healthy_sessions_are_left_alone(tmp_path):
    from monitor.demo.sim.session import FakeClock

    simulate(tmp_path, "sqlite", calls=270, clock=FakeClock(tick=1.0))
    findings = replay_findings(tmp_path)
    for name in ("hammer", "pingpong", "poll", "rotation", "drift"):
        levels = {f["level"] for f in findings[name] if f["detector"] in LOOP_DETECTORS}
        assert "critical" in levels, (name, findings[name])
    for name in ("healthy", "heavy"):
        assert findings[name] == [], (name, findings[name])
    burner = {(f["detector"], f["level"]) for f in findings["burner"]}
    assert burner and not {d for d, _ in burner} & LOOP_DETECTORS, burner
    assert ("context_bloat", "warning") in burner


def test_budget_findings_only_where_a_budget_is_crossed(tmp_path):
    from monitor.demo.sim.session import FakeClock

    expected = simulate(tmp_path, "sqlite", calls=270, clock=FakeClock(tick=1.0))
    burner = next(s for s in expected if s["scenario"] == "burner")
    budget = burner["tokens"]["total"] // 2
    assert all(s["tokens"]["total"] < budget * 0.9 for s in expected
               if s["scenario"] in ("healthy", "hammer"))
    findings = replay_findings(tmp_path, f"budgets:\n  session_tokens: {budget}\n")
    levels = [f["level"] for f in findings["burner"] if f["detector"] == "token_budget"]
    assert levels == ["warning", "critical"]
    for name in ("healthy", "hammer"):
        assert not [f for f in findings[name] if f["detector"] == "token_budget"], name

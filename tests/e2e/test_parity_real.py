"""clawwatch calls a loop exactly when a real OpenClaw 2026.9.6 gateway does.

With OpenClaw's own loop detection on, hammer, ping-pong, polling and unknown-tool sessions run
concurrently until OpenClaw ends them. OpenClaw's decisions come from its gateway log and
transcripts (``loglines.py``); ``clawwatch replay --json`` over the same state dir and log must
report the same OpenClaw-parity findings per session: detector, level, count and the call it
fired on (``at_call``). The comparison is printed as a markdown table (``pytest -s``) and, when
``CLAWWATCH_PARITY_TABLE`` names a file, written there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from . import loglines, truth
from .gateway import OPENCLAW_VERSION, RealGateway

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(360)]

REPO_ROOT = Path(__file__).resolve().parents[2]
RUN_DEADLINE_S = 180
PARITY_DETECTORS = ("generic_repeat", "known_poll_no_progress", "ping_pong",
                    "global_circuit_breaker", "unknown_tool_repeat", "argument_churn")
RUNS = {  # name: (fake model mode, marker options)
    "hammer": ("hammer", {}),
    "pingpong": ("pingpong", {}),
    "poll": ("poll", {}),
    "unknown-tool": ("unknown-tool", {}),
}
LOOP_RUNS = ("hammer", "pingpong", "poll")
TABLE_HEADER = ("| run | detector | level | count | at_call OpenClaw | at_call clawwatch "
                "| match |\n| --- | --- | --- | --- | --- | --- | --- |")


@dataclass
class FinishedRun:
    name: str
    key: str
    tag: str
    run_id: str
    end: dict
    session: truth.SessionTruth


def run_sessions(gateway: RealGateway, runs: dict[str, tuple[str, dict]], label: str,
                 deadline_s: float) -> dict[str, FinishedRun]:
    """Start every run at once (one session each), wait for all to end, return them."""
    suffix = uuid.uuid4().hex[:8]
    started = {}
    for name, (mode, opts) in runs.items():
        key = f"agent:main:e2e-{label}-{name}-{suffix}"
        started[name] = (key, gateway.start_run(mode, key, tag=_tag(label, name, suffix), **opts))
    deadline = time.monotonic() + deadline_s
    ends = {}
    for name, (_key, run_id) in started.items():
        try:
            ends[name] = gateway.wait_run_end(run_id, max(1.0, deadline - time.monotonic()))
        except TimeoutError:
            for other_key, _ in started.values():
                gateway.call("chat.abort", {"sessionKey": other_key})
            raise
    truths = truth.wait_quiescent(gateway.agent_db)
    finished = {}
    for name, (key, run_id) in started.items():
        sessions = [t for t in truths.values() if t.key == key]
        assert len(sessions) == 1, f"{name}: expected one transcript for {key}: {sessions}"
        finished[name] = FinishedRun(name, key, _tag(label, name, suffix), run_id, ends[name],
                                     sessions[0])
    return finished


def _tag(label: str, name: str, suffix: str) -> str:
    return f"{label}-{name}-{suffix}"


def model_tool_calls(gateway: RealGateway, tag: str) -> list[str]:
    """Names of the tool calls the fake model issued for the run tagged ``tag``."""
    with open(gateway.model_log_path, encoding="utf-8") as fh:
        requests = [json.loads(line) for line in fh if line.strip()]
    return [r["tool"] for r in requests if r.get("tag") == tag and r.get("tool")]


def replay_sessions(gateway: RealGateway, work_dir: Path) -> dict[str, dict]:
    """``clawwatch replay --json`` over the gateway's state dir and log, sessions by id.

    Built-in defaults only: an empty ``--config`` file and no ``CLAWWATCH_*`` variables.
    """
    config = work_dir / "clawwatch-defaults.yaml"
    config.write_text("")
    env = {name: value for name, value in os.environ.items()
           if not name.startswith("CLAWWATCH_") or name == "CLAWWATCH_LOG_DIRS"}
    proc = subprocess.run(
        [sys.executable, "-m", "monitor", "replay", "--state-dir", str(gateway.state_dir),
         "--log", str(gateway.log_path), "--config", str(config), "--json"],
        check=False, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"replay exited {proc.returncode}:\n{proc.stderr[-3000:]}"
    return {s["session_id"]: s for s in json.loads(proc.stdout)["sessions"]}


def finding_rows(session: dict, detectors) -> list[tuple[str, str, int, int]]:
    """``(detector, level, count, at_call)`` of a replayed session's findings of ``detectors``."""
    return sorted(((f["detector"], f["level"], f["count"], f["at_call"])
                   for f in session.get("findings", []) if f["detector"] in detectors),
                  key=_call_order)


def _call_order(row: tuple[str, str, int, int]) -> tuple:
    detector, level, count, at_call = row
    return (at_call, count, detector, level)


def table_rows(name: str, expected: list[tuple], got: list[tuple]) -> list[str]:
    """Markdown rows pairing OpenClaw's and clawwatch's findings by detector, level and count."""
    unmatched = list(got)
    pairs = []
    for row in expected:
        twin = next((g for g in unmatched if g[:3] == row[:3]), None)
        if twin is not None:
            unmatched.remove(twin)
        pairs.append((row, twin))
    pairs += [(None, row) for row in unmatched]
    pairs.sort(key=lambda pair: _call_order(pair[0] or pair[1]))
    if not pairs:
        return [f"| {name} | (none) | | | | | yes |"]
    lines = []
    for ours, theirs in pairs:
        detector, level, count, _ = ours or theirs
        at_openclaw = ours[3] if ours else "-"
        at_clawwatch = theirs[3] if theirs else "-"
        match = "yes" if ours and theirs and at_openclaw == at_clawwatch else "NO"
        lines.append(f"| {name} | {detector} | {level} | {count} | {at_openclaw} | "
                     f"{at_clawwatch} | {match} |")
    return lines


@pytest.fixture(scope="module")
def parity(real_gateway, tmp_path_factory):
    """``(finished runs, OpenClaw evidence per key, replayed sessions by id)``."""
    runs = run_sessions(real_gateway, RUNS, "parity", RUN_DEADLINE_S)
    evidence = loglines.wait_for_evidence(
        real_gateway.log_path, real_gateway.agent_db,
        {run.key: run.session.session_id for run in runs.values()})
    replayed = replay_sessions(real_gateway, tmp_path_factory.mktemp("parity"))
    return runs, evidence, replayed


def test_openclaw_stopped_each_loop_and_its_evidence_pairs_up(real_gateway, parity):
    runs, evidence, _ = parity
    problems = {name: evidence[run.key].problems for name, run in runs.items()
                if evidence[run.key].problems}
    assert not problems, f"OpenClaw's log and transcripts do not pair up: {problems}"
    for name in LOOP_RUNS:
        run, found = runs[name], evidence[runs[name].key]
        assert run.end["phase"] == "error", f"{name} was not stopped by loop detection: {run.end}"
        levels = [e.level for e in found.expected]
        assert "warning" in levels and "critical" in levels, f"{name}: {found.expected}"
        assert found.vetoed_calls(), f"{name}: OpenClaw logged criticals but vetoed nothing"
    # OpenClaw's runner gives up on a missing tool after 10 tries, before its detector acts;
    # it stores only the "not found" results, not the assistant's calls.
    unknown = runs["unknown-tool"]
    issued = model_tool_calls(real_gateway, unknown.tag)
    assert len(issued) >= 10 and set(issued) == {"frobnicate_widget"}, issued
    assert unknown.end["phase"] == "end", unknown.end
    assert evidence[unknown.key].actions == [], "unknown-tool run got OpenClaw loop actions"


def test_clawwatch_parity_findings_equal_openclaws(parity):
    runs, evidence, replayed = parity
    lines, mismatches = [TABLE_HEADER], []
    for name, run in runs.items():
        session = replayed.get(run.session.session_id)
        assert session is not None, f"{name}: session {run.session.session_id} not in replay"
        assert session["tool_calls"] == run.session.tool_calls, (name, session["tool_calls"])
        expected = sorted((e.row() for e in evidence[run.key].expected), key=_call_order)
        got = finding_rows(session, PARITY_DETECTORS)
        rows = table_rows(name, expected, got)
        lines += rows
        if got != expected:
            mismatches.append(f"{name}: expected {expected}\n{' ' * len(name)}  got      {got}")
    table = "\n".join(lines)
    print(f"\nclawwatch vs OpenClaw {OPENCLAW_VERSION} parity:\n{table}")
    if os.environ.get("CLAWWATCH_PARITY_TABLE"):
        Path(os.environ["CLAWWATCH_PARITY_TABLE"]).write_text(table + "\n", encoding="utf-8")
    assert not mismatches, ("clawwatch's parity findings differ from OpenClaw's:\n"
                            + "\n".join(mismatches) + "\n" + table)


def test_openclaws_own_loop_lines_become_gateway_loop_notice_findings(parity):
    """Each loop run's log lines (bare ones joined through traceId) reach its own session."""
    runs, evidence, replayed = parity
    for name in LOOP_RUNS:
        run = runs[name]
        notices = [(f["level"], f["count"]) for f in replayed[run.session.session_id]["findings"]
                   if f["detector"] == "gateway_loop_notice"]
        expected = {(e.level, e.count) for e in evidence[run.key].expected}
        assert expected <= set(notices), f"{name}: expected {expected}, got {notices}"
    unknown = replayed.get(runs["unknown-tool"].session.session_id, {"findings": []})
    assert not [f for f in unknown["findings"] if f["detector"] == "gateway_loop_notice"]

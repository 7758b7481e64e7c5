"""Replay real OpenClaw 2026.9.6 transcripts and compare with what OpenClaw itself did.

The fixtures are transcripts of real gateway runs (the lab's fake model, OpenClaw's loop
detection on): ``oc-pingpong`` from the provided agent DB, ``oc-hammer``/``oc-poll``/
``oc-drift``/``oc-unknown-tool`` from the lab. ``oc-loop-log.jsonl`` holds the loop lines
OpenClaw logged for them. Expected findings are taken from OpenClaw's own evidence: each
``tool loop: … level=… detector=… count=…`` line, the call it vetoed (critical) and the call
whose result carries its ``[System note: Tool-loop warning after N …]`` (warning).
"""

from __future__ import annotations

import json
import re

import pytest
from test_detect_support import FIXTURES, replay_fixture, transcript_calls

from monitor.events import GatewayNotice

PARITY = {"generic_repeat", "known_poll_no_progress", "ping_pong", "unknown_tool_repeat",
          "global_circuit_breaker", "argument_churn"}
TOOL_LOOP = re.compile(r"tool loop: sessionId=(\S+) .*?level=(\w+) .*?detector=(\S+) "
                       r"count=(\d+)")


def openclaw_log() -> list[dict]:
    return [json.loads(line) for line in (FIXTURES / "oc-loop-log.jsonl").open()]


def openclaw_actions(session_id: str) -> list[tuple[str, str, int]]:
    actions = []
    for line in openclaw_log():
        match = TOOL_LOOP.search(line["message"])
        if match and match.group(1) == session_id:
            actions.append((match.group(3), match.group(2), int(match.group(4))))
    return actions


def expected_findings(fixture: str, session_id: str) -> list[tuple[str, str, int, int]]:
    """(detector, level, count, at_call) OpenClaw logged, placed on the calls it acted on."""
    acted_on = [(c["index"], "critical") for c in transcript_calls(fixture)
                if c["veto"] and c["veto"]["toolCallId"] == c["id"]]
    acted_on += [(c["index"], "warning") for c in transcript_calls(fixture) if c["note"]]
    acted_on.sort()
    actions = openclaw_actions(session_id)
    assert [level for _, level in acted_on] == [level for _, level, _ in actions]
    return [(detector, level, count, index)
            for (index, _), (detector, level, count) in zip(acted_on, actions, strict=True)]


@pytest.mark.parametrize("fixture", ["oc-pingpong.jsonl", "oc-hammer.jsonl", "oc-poll.jsonl",
                                     "oc-drift.jsonl"])
def test_findings_line_up_with_openclaw(fixture):
    _, session_id, findings = replay_fixture(fixture)
    expected = expected_findings(fixture, session_id)
    assert expected, "the fixture must contain OpenClaw loop actions"
    got = [(f.detector, f.level, f.count, f.at_call) for f in findings
           if f.detector in PARITY]
    assert got == expected


def test_expected_parity_table():
    """The table of the issue, from the real runs: detector, level, count, call."""
    table = {name: expected_findings(name, replay_fixture(name)[1])
             for name in ("oc-hammer.jsonl", "oc-pingpong.jsonl", "oc-poll.jsonl")}
    assert table["oc-hammer.jsonl"] == [("generic_repeat", "warning", 10, 11),
                                        ("generic_repeat", "critical", 20, 21),
                                        ("generic_repeat", "critical", 21, 22)]
    assert table["oc-pingpong.jsonl"] == [("ping_pong", "warning", 10, 10),
                                          ("ping_pong", "critical", 20, 20),
                                          ("ping_pong", "warning", 21, 21),
                                          ("ping_pong", "warning", 30, 30),
                                          ("ping_pong", "critical", 31, 51)]
    assert table["oc-poll.jsonl"] == [("known_poll_no_progress", "warning", 10, 12),
                                      ("known_poll_no_progress", "critical", 20, 22),
                                      ("known_poll_no_progress", "critical", 21, 23)]


def test_timestamp_drift_is_critical_only_for_session_no_progress():
    _, session_id, findings = replay_fixture("oc-drift.jsonl")
    assert not [f for f in findings if f.detector in PARITY and f.level == "critical"]
    assert all(level != "critical" for _, level, _ in openclaw_actions(session_id))
    drift = [(f.level, f.count, f.at_call) for f in findings
             if f.detector == "session_no_progress"]
    assert drift == [("warning", 10, 11), ("critical", 20, 21)]


def test_unknown_tool_run_produces_no_findings():
    _, _, findings = replay_fixture("oc-unknown-tool.jsonl")
    assert findings == []


def test_gateway_loop_lines_become_findings_per_session():
    engine, session_id, _ = replay_fixture("oc-pingpong.jsonl")
    sessions = {}
    found = []
    for line in openclaw_log():
        start = re.match(r"embedded run start: runId=(\S+) sessionId=(\S+)", line["message"])
        if start:
            sessions[line["traceId"]] = (start.group(1), start.group(2))
            continue
        run_id, sid = sessions.get(line["traceId"], (None, None))
        if sid != session_id:
            continue
        notice = GatewayNotice(line["level"], "agents/loop-detection", line["message"], None,
                               trace_id=line["traceId"], run_id=run_id)
        found += engine.observe("", "main", notice)
    assert [(f.level, f.count, f.tool, f.session_id) for f in found] == [
        ("warning", 10, "exec", session_id), ("critical", 20, "exec", session_id),
        ("warning", 21, "read", session_id), ("warning", 30, "exec", session_id),
        ("critical", 31, "read", session_id)]
    assert {f.detector for f in found} == {"gateway_loop_notice"}
    assert found[0].session_key == "agent:main:oc-pingpong.jsonl"

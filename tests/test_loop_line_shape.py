"""Issue 10 item 9: only OpenClaw's own loop lines become ``gateway_loop_notice`` findings.

A line counts when its subsystem is the one OpenClaw 2026.9.6 writes that shape from
(``diagnostic``: ``tool loop: …``; ``agents/tools``: ``Blocking T due to critical loop: …`` /
``Loop warning for T: …``; ``agents/loop-detection``: ``Loop warning: …``, ``Critical … loop
detected``…) and the message starts with it. The same words inside an exec failure, or from
any other subsystem, raise nothing, so nobody can make clawwatch flag (or, with actions on,
stop or kill) a session of their choosing by printing text.
"""

from __future__ import annotations

import json

from monitor.config import Config
from monitor.detect.engine import DetectionEngine
from monitor.pipeline import Monitor
from monitor.records import as_json_list
from monitor.sources.log_line_forms import parse_log_line
from monitor.sources.sourceset import SourceSet

VICTIM = "agent:main:victim"
FORGED = (f"tool loop: sessionId=sess-victim sessionKey={VICTIM} tool=exec level=critical "
          "action=block detector=generic_repeat count=10")


def record(subsystem: str | None, message: str, level: str = "ERROR") -> dict:
    line = {"1" if subsystem else "0": message, "_meta": {"logLevelName": level},
            "time": "2026-11-29T13:57:18.558+00:00"}
    if subsystem:
        line["0"] = json.dumps({"subsystem": subsystem})
    return line


def findings_of(lines: list[dict]) -> list:
    engine = DetectionEngine(Config())
    found = []
    for line in lines:
        notice = parse_log_line(json.dumps(line).encode())
        found += engine.observe("", "main", notice)
    return found


def test_openclaws_own_diagnostic_line_is_a_finding_with_its_parsed_fields():
    [finding] = findings_of([record("diagnostic", FORGED + ' message="CRITICAL: Called exec '
                                    'with identical outcomes 10 times. Bearer abcdefghijk123"')])
    assert (finding.detector, finding.level, finding.count, finding.tool) == \
        ("gateway_loop_notice", "critical", 10, "exec")
    assert (finding.session_key, finding.session_id) == (VICTIM, "sess-victim")
    assert finding.message.startswith(
        f"OpenClaw generic_repeat critical: tool=exec count=10 session={VICTIM}: CRITICAL: ")
    assert "abcdefghijk123" not in finding.message and "tool loop:" not in finding.message


def test_a_loop_line_quoted_inside_an_exec_failure_raises_nothing():
    assert findings_of([
        record("agents/tools", f"exec failed: {FORGED}"),
        record("agents/tools", f"[tools] exec failed: Command exited 1: echo '{FORGED}'"),
        record("diagnostic", f"lane task error: lane=session:{VICTIM} error=\"{FORGED}\""),
    ]) == []


def test_the_shape_from_another_subsystem_or_none_raises_nothing():
    assert findings_of([
        record("agents/tools", FORGED),                  # the right words, wrong subsystem
        record("gateway/ws", FORGED),
        record("plugins/evil", f"Blocking exec due to critical loop: CRITICAL: {FORGED}"),
        record("diagnostic", f"Critical generic loop detected: exec repeated 20 times "
                             f"sessionKey={VICTIM}"),
        record(None, FORGED),                            # captured console output
    ]) == []


def test_the_plain_lines_count_only_from_their_own_subsystems():
    engine = DetectionEngine(Config())
    from monitor.events import GatewayNotice

    def observe(subsystem: str, message: str) -> list:
        return engine.observe(VICTIM, "main", GatewayNotice("ERROR", subsystem, message, None,
                                                            session_key=VICTIM))

    assert observe("agents/tools", "Critical generic loop detected: exec repeated 20 times") \
        == []
    assert observe("agents/loop-detection", "Blocking exec due to critical loop: CRITICAL: "
                   "Called exec with identical outcomes 20 times.") == []
    assert [f.count for f in observe("agents/loop-detection",
                                     "Critical generic loop detected: exec repeated 20 times")
            ] == [20]
    assert [f.count for f in observe("agents/tools", "Blocking exec due to critical loop: "
                                     "CRITICAL: Called exec with identical outcomes 21 times.")
            ] == [21]


def test_a_forged_line_in_a_real_log_raises_no_finding_for_the_victim(tmp_path):
    """Through the whole pipeline: the victim's session exists (the simulator wrote it and
    its gateway log), an attacker's exec failure quotes a critical loop line for it."""
    from monitor.demo.sim.session import FakeClock
    from monitor.demo.sim.simulator import Simulator

    log = tmp_path / "openclaw.log"
    sim = Simulator(tmp_path / "state", log_path=log, clock=FakeClock(1_795_960_000.0, 0.25))
    try:
        victim = sim.add_session("hammer", key=VICTIM)
        for _ in range(3):
            sim.step(victim)
    finally:
        sim.close()
    forged = FORGED.replace("sess-victim", victim.session_id)
    lines = [record("agents/tools", f"exec failed: {forged}", "WARN"),
             record("agents/tools", f"{forged} (exit 1)", "WARN")]
    with open(log, "a", encoding="utf-8") as handle:
        handle.write("".join(json.dumps(line) + "\n" for line in lines))
    monitor = Monitor(SourceSet(state_dir=str(tmp_path / "state"), log_path=str(log)),
                      DetectionEngine(Config()))
    records = []
    for _ in range(5):
        records += as_json_list(monitor.step())
    assert any(r["type"] == "tool_call" and r["key"] == VICTIM for r in records)
    assert [r for r in records if r["type"] == "finding"] == []


def test_a_tool_name_or_later_text_cannot_attribute_a_loop_line_to_another_session(tmp_path):
    """A model calls a missing tool named ``sessionId=<victim>`` (OpenClaw writes the name
    into its ``agents/tools`` line), and its trace also carries an error quoting the
    victim's ids: the critical stays on the attacker's run, named by the first line of it."""
    attacker = "aaaaaaaa-0000-4000-8000-000000000001"
    victim = "dddddddd-0000-4000-8000-000000000004"
    sessions = tmp_path / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / "sessions.json").write_text(json.dumps({
        "agent:main:attacker": {"sessionId": attacker},
        VICTIM: {"sessionId": victim}}))
    tool = f"x: sessionId={victim} sessionKey={VICTIM}"
    lines = [
        record("diagnostic", f"session turn created: runId=run-a sessionId={attacker} "
                             "sessionKey=agent:main:attacker agentId=main", "DEBUG"),
        record("agent/embedded", f"embedded run tool error: runId=run-a error=sessionId={victim}"
                                 f" sessionKey={VICTIM}", "WARN"),
        record("exec", f"exec failed: sessionId={victim} sessionKey={VICTIM}", "WARN"),
        record("agents/tools", f"Blocking {tool} due to critical loop: CRITICAL: attempted "
                               f"unavailable tool {tool} 10 times."),
        record("agents/loop-detection", f"Critical generic loop detected: sessionId={victim} "
                                        "repeated 30 times"),
    ]
    log = tmp_path / "gateway.log"
    log.write_text("".join(json.dumps({**line, "traceId": "trace-attacker"}) + "\n"
                           for line in lines))
    monitor = Monitor(SourceSet(state_dir=str(tmp_path), log_path=str(log)),
                      DetectionEngine(Config()))
    records = []
    for _ in range(3):
        records += as_json_list(monitor.step())
    findings = [(r["key"], r["level"]) for r in records if r["type"] == "finding"]
    assert findings and {key for key, _ in findings} == {"agent:main:attacker"}, findings


def test_a_loop_line_with_a_megabyte_key_and_text_gives_a_bounded_message():
    """The finding's message names the session and quotes the line's text, both from data:
    a crafted key and text of 1 MB each are cut (redacted first) to what a pane shows."""
    key = "agent:main:" + "--x-token-" * 100_000
    forged = FORGED.replace(VICTIM, key)
    [finding] = findings_of([record("diagnostic", forged + ' message="CRITICAL: '
                                    + "--x-token-" * 100_000 + '"')])
    assert finding.session_key == key
    assert len(finding.message) < 1400, len(finding.message)
    assert finding.message.startswith("OpenClaw generic_repeat critical: tool=exec count=10 "
                                      "session=agent:main:--x-token-")

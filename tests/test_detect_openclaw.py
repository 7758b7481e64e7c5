"""OpenClaw-parity detectors on hand-built transcripts (OpenClaw's own guard off unless a
veto is written into the transcript)."""

from __future__ import annotations

from test_detect_support import Script, engine_with, exec_details

from monitor.detect.tool_call_hashing import hash_tool_call

FAIL = "ls: cannot access '/nope': No such file or directory\n\n(Command exited with code 2)"
LOOP_DETECTORS = {"generic_repeat", "known_poll_no_progress", "ping_pong", "unknown_tool_repeat",
                  "global_circuit_breaker", "argument_churn"}


def hammer(script: Script, times: int, output: str = FAIL, **kwargs) -> None:
    for _ in range(times):
        script.exec("ls /nope", output, 2, **kwargs)


def test_generic_repeat_warning_then_critical_then_global_breaker():
    script = Script()
    hammer(script, 32)
    assert script.of("generic_repeat") == [("warning", 10, 11), ("critical", 20, 21)]
    assert script.of("global_circuit_breaker") == [("critical", 30, 31)]
    critical = next(f for f in script.findings if f.level == "critical")
    assert critical.tool == "exec"
    assert critical.message.startswith("CRITICAL: Called exec with identical outcomes 20 times")
    assert critical.pattern.startswith("run-1:generic:exec:")


def test_identical_arguments_with_changing_outcomes_warn_but_never_go_critical():
    script = Script()
    for n in range(35):
        script.exec("cat counter", f"value {n}\n")
    assert script.of("generic_repeat") == [("warning", 10, 11), ("warning", 20, 21),
                                           ("warning", 30, 31)]
    assert not [f for f in script.findings if f.level == "critical"]


def test_veto_in_the_middle_of_a_streak_counts_as_no_progress():
    script = Script()
    hammer(script, 12)
    (vetoed,), _ = script.batch([("exec", {"command": "ls /nope"})])
    script.veto(vetoed, "exec", hash_tool_call("exec", {"command": "ls /nope"}))
    hammer(script, 8)
    # at call 21: 7 results + the veto (counted once the streak resumes) + 12 results = 20;
    # without the veto it would take one more call
    assert script.of("generic_repeat")[-1] == ("critical", 20, 21)


def test_a_real_veto_rearms_the_critical_report():
    script = Script()
    hammer(script, 20)
    (first,), found = script.batch([("exec", {"command": "ls /nope"})])
    assert [(f.level, f.count, f.at_call) for f in found] == [("critical", 20, 21)]
    script.veto(first, "exec", hash_tool_call("exec", {"command": "ls /nope"}))
    _, found = script.batch([("exec", {"command": "ls /nope"})])
    assert [(f.detector, f.level, f.count, f.at_call) for f in found] == [
        ("generic_repeat", "critical", 21, 22)]


def test_known_poll_no_progress():
    script = Script()
    details = {"status": "running", "sessionId": "brisk-crest"}
    for _ in range(22):
        script.step("process", {"action": "poll", "sessionId": "brisk-crest"}, details,
                    "No new output")
    assert script.of("known_poll_no_progress") == [("warning", 10, 11), ("critical", 20, 21)]
    assert not script.of("generic_repeat")


def test_polling_with_new_output_each_time_is_fine():
    script = Script()
    for n in range(25):
        script.step("process", {"action": "poll", "sessionId": "b"},
                    {"status": "running", "aggregated": f"line {n}"}, f"line {n}")
    assert not [f for f in script.findings if f.detector in LOOP_DETECTORS]


def test_ping_pong_needs_stable_results_on_both_sides_for_critical():
    stable = Script()
    for _ in range(13):
        stable.step("read", {"path": "/etc/hostname"}, {"kind": "text"}, "vm")
        stable.exec("ls /nope", FAIL, 2)
    assert stable.of("ping_pong") == [("warning", 10, 10), ("critical", 20, 20)]

    changing = Script(session_id="sess-2")
    for n in range(17):
        changing.step("read", {"path": "/etc/hostname"}, {"kind": "text"}, "vm")
        changing.exec("date", f"12:00:{n:02d} tick {n}")
    assert changing.of("ping_pong") == [("warning", 10, 10), ("warning", 20, 20),
                                        ("warning", 30, 30)]


def test_unknown_tool_repeat():
    script = Script()
    for _ in range(11):
        script.step("gateway", {"method": "frob"}, {}, 'Unknown tool: "frob"', is_error=True)
    assert script.of("unknown_tool_repeat") == [("critical", 10, 11)]
    finding = next(f for f in script.findings if f.detector == "unknown_tool_repeat")
    assert "attempted unavailable tool frob 10 times" in finding.message


def test_calls_openclaw_never_admits_leave_no_history():
    script = Script()
    for _ in range(25):
        script.step("frobnicate_widget", {}, {}, "Tool frobnicate_widget not found",
                    is_error=True)
    assert not [f for f in script.findings if f.detector in LOOP_DETECTORS]


def test_argument_churn():
    script = Script()
    for n in range(12):
        script.step("read", {"path": f"/missing/{n % 3}"}, {}, "ENOENT: no such file",
                    is_error=True)
    assert script.of("argument_churn") == [("warning", 10, 11)]
    assert "cycled through 3 repeated argument patterns" in script.findings[0].message


def test_interleaved_runs_are_scoped_separately():
    script = Script()
    for _ in range(20):
        script.exec("ls /nope", FAIL, 2, run="run-a")
        script.exec("ls /nope", FAIL, 2, run="run-b")
    # the 30-call window is shared, so each run only ever sees 15 of its own calls
    assert [(f.detector, f.level, f.pattern.split(":")[0]) for f in script.findings
            if f.detector in LOOP_DETECTORS] == [
        ("generic_repeat", "warning", "run-a"), ("generic_repeat", "warning", "run-b")]

    single = Script(session_id="sess-2")
    hammer(single, 21)
    assert ("critical", 20, 21) in single.of("generic_repeat")


def test_batch_calls_see_earlier_calls_of_their_batch():
    script = Script()
    hammer(script, 9)
    ids, found = script.batch([("exec", {"command": "ls /nope"})] * 2)
    assert [(f.level, f.count, f.at_call) for f in found] == [("warning", 10, 11)]
    for call_id in ids:
        script.result(call_id, "exec", exec_details(FAIL, 2), FAIL)
    assert len(script.engine._sessions["sess-1"].records) == 11


def test_blocked_batch_records_vetoes_only_for_the_repeated_action():
    script = Script()
    hammer(script, 20)
    ids, found = script.batch([("exec", {"command": "ls /nope"}), ("read", {"path": "/a"})])
    assert [(f.level, f.at_call) for f in found] == [("critical", 21)]
    key = hash_tool_call("exec", {"command": "ls /nope"})
    script.veto(ids[0], "exec", key)
    script.veto(ids[1], "read", key)
    records = script.engine._sessions["sess-1"].records
    assert [(r.tool, r.kind) for r in list(records)[-2:]] == [
        ("exec", "terminal-exec-failure"), ("exec", "tool-loop-veto")]


def test_compound_call_ids_match_their_results():
    script = Script()
    for n in range(21):
        (call_id,), _ = script.batch([("exec", {"command": "ls /nope"})],
                                     ids=[f"call_{n}|fc_{n}"])
        script.result(call_id.split("|")[0], "exec", exec_details(FAIL, 2), FAIL)
    assert script.of("generic_repeat") == [("warning", 10, 11), ("critical", 20, 21)]


def test_missing_and_null_arguments_are_different_signatures():
    script = Script()
    for _ in range(10):
        (call_id,), _ = script.batch([("exec", None)], has_arguments=False)
        script.result(call_id, "exec", {}, "usage error", is_error=True)
    (null_call,), found = script.batch([("exec", None)], has_arguments=True)
    assert found == []
    script.result(null_call, "exec", {}, "usage error", is_error=True)
    (_,), found = script.batch([("exec", None)], has_arguments=False)
    assert [(f.detector, f.count) for f in found] == [("generic_repeat", 10)]


def test_thresholds_and_switches_come_from_config(tmp_path):
    engine = engine_with(tmp_path, "detection:\n  warning_threshold: 3\n"
                                   "  critical_threshold: 5\n")
    script = Script(engine)
    hammer(script, 7)
    assert script.of("generic_repeat") == [("warning", 3, 4), ("critical", 5, 6)]

    engine = engine_with(tmp_path, "detection:\n  detectors: {generic_repeat: false}\n")
    script = Script(engine)
    hammer(script, 25)
    assert not script.of("generic_repeat")


def test_detection_disabled_for_one_agent(tmp_path):
    engine = engine_with(tmp_path, "agents:\n  quiet:\n    detection: {enabled: false}\n")
    muted = Script(engine, session_id="a", agent="quiet")
    loud = Script(engine, session_id="b", agent="main")
    hammer(muted, 25)
    hammer(loud, 25)
    assert muted.findings == []
    assert engine.streaks("a") == []
    assert loud.of("generic_repeat")


def test_agents_the_config_does_not_name_share_one_settings(tmp_path):
    # agent ids are data: each new one must not build (and keep) settings of its own, with
    # a normaliser remembering up to 1 MiB of texts
    engine = engine_with(tmp_path, "agents:\n  strict:\n    detection:\n"
                                   "      warning_threshold: 4\n")
    shared = engine.settings_for(None)
    assert all(engine.settings_for(f"crafted-{n}") is shared for n in range(1000))
    assert engine.settings_for("strict") is not shared
    assert engine.settings_for("strict").thresholds.warning == 4
    assert shared.thresholds.warning == 10


def test_per_agent_threshold_override(tmp_path):
    engine = engine_with(tmp_path, "agents:\n  strict:\n    detection:\n"
                                   "      warning_threshold: 4\n      critical_threshold: 6\n")
    strict = Script(engine, session_id="a", agent="strict")
    hammer(strict, 8)
    assert strict.of("generic_repeat") == [("warning", 4, 5), ("critical", 6, 7)]

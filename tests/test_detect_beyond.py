"""Detectors beyond OpenClaw, the dashboard views, and bounded state."""

from __future__ import annotations

import gc
import tracemalloc

from test_detect_support import Script, engine_with, exec_details

from monitor.detect.budgets import LEDGER_DAYS, DailyLedger
from monitor.detect.gateway_notice import parse_loop_line
from monitor.detect.memo import BoundedMemo
from monitor.events import Usage

PARITY = {"generic_repeat", "known_poll_no_progress", "ping_pong", "unknown_tool_repeat",
          "global_circuit_breaker", "argument_churn"}
MISSING = "/srv/data/report.csv"
ROTATION = [
    ("ls -la " + MISSING, f"ls: cannot access '{MISSING}': No such file or directory"),
    ("find " + MISSING, f"find: '{MISSING}': No such file or directory"),
    (f"python3 -c \"open('{MISSING}')\"",
     f"FileNotFoundError: [Errno 2] No such file or directory: '{MISSING}'"),
    ("tail -n 5 " + MISSING, f"tail: cannot open '{MISSING}' for reading: No such file"),
]


def loop_findings(script: Script) -> list:
    return [f for f in script.findings if f.detector in PARITY | {"session_no_progress"}]


def test_cross_tool_rotation_is_caught_only_by_session_no_progress():
    script = Script()
    for round_ in range(7):
        for command, error in ROTATION:
            script.exec(command, f"{error}\n\n(Command exited with code {1 + round_ % 1})", 1)
    assert not [f for f in script.findings if f.detector in PARITY]
    assert script.of("session_no_progress") == [("warning", 10, 14), ("critical", 20, 24)]


def test_timestamp_only_drift_is_no_progress():
    script = Script()
    for n in range(22):
        output = f"Sat Nov 29 13:{n:02d}:07 UTC 2026\nalpha\nbeta\n"
        script.exec("date; ls /srv", output)
    assert script.of("session_no_progress") == [("warning", 10, 11), ("critical", 20, 21)]
    assert not [f for f in script.findings if f.detector in PARITY and f.level == "critical"]


def test_a_session_making_real_progress_has_no_loop_findings():
    script = Script()
    for n in range(30):
        script.step("read", {"path": f"/repo/src/module_{n}.py"}, {"kind": "text"},
                    f"def f{n}():\n    return {n}\n")
        script.step("edit", {"path": f"/repo/src/module_{n}.py", "old": f"{n}", "new": f"{n}+1"},
                    {"ok": True}, f"Edited /repo/src/module_{n}.py")
        script.exec(f"pytest -q tests/test_module_{n}.py", f"{n} passed, 1 failed in 0.{n}s",
                    1 if n < 29 else 0)
        if n % 6 == 0:
            script.exec("date", f"Sat Nov 29 13:{n:02d}:07 UTC 2026")
        if n % 10 == 0:
            script.step("process", {"action": "poll", "sessionId": "build"},
                        {"status": "running", "aggregated": f"step {n}/30"}, f"step {n}/30")
    assert loop_findings(script) == []
    assert all(s.level is None for s in script.engine.streaks(script.session_id)
               if s.detector in PARITY | {"session_no_progress"})


def test_token_budget_per_session_agent_and_day(tmp_path):
    engine = engine_with(tmp_path, "budgets:\n  session_tokens: 10000\n  agent_tokens: 15000\n"
                                   "  nightly_tokens: 40000\n")
    first = Script(engine, session_id="a")
    for _ in range(7):
        first.assistant(usage=Usage(input=1400, output=100, total=1500))
    assert first.of("token_budget") == [("warning", 90, 0), ("critical", 105, 0)]
    second = Script(engine, session_id="b")
    second.ts = first.ts
    for _ in range(3):
        second.assistant(usage=Usage(input=1400, output=100, total=1500))
    agent = [f for f in second.findings if "agent main today" in f.message]
    assert [(f.level, f.count) for f in agent] == [("warning", 90), ("critical", 100)]
    assert not [f for f in second.findings if "all agents" in f.message]


def test_a_record_dated_ahead_does_not_stop_the_daily_budgets(tmp_path):
    """One reply of another agent dated a year ahead opens that day in the ledger; the
    tokens of the current day go on counting toward its budgets."""
    engine = engine_with(tmp_path, "budgets:\n  agent_tokens: 10000\n  nightly_tokens: 20000\n")
    stray = Script(engine, session_id="stray", key="agent:other:x", agent="other")
    stray.ts += 400 * 86400.0
    stray.assistant(usage=Usage(input=10, output=1, total=11))
    script = Script(engine)
    for _ in range(30):
        script.tick(10.0)
        script.assistant(usage=Usage(input=990, output=10, total=1000))
    assert [(level, count) for level, count, _ in script.of("token_budget")] == [
        ("warning", 90), ("critical", 100), ("warning", 90), ("critical", 100)]
    assert {f.message.split(" used ")[0] for f in script.findings
            if f.detector == "token_budget"} == {
        "agent main today", "all agents today"}


def test_the_ledger_keeps_a_bounded_number_of_days():
    ledger = DailyLedger()
    for day in range(3 * LEDGER_DAYS):
        ledger.add(f"2026-01-{day:02d}", "main", 5)
        assert ledger.add("2026-12-07", "main", 1) == (day + 1, day + 1)
    assert len(ledger.days) == LEDGER_DAYS


def test_burn_rate_eta_and_status(tmp_path):
    engine = engine_with(tmp_path, "budgets:\n  session_tokens: 100000\n")
    script = Script(engine)
    for _ in range(12):
        script.tick(9.0)
        script.assistant(usage=Usage(input=4900, output=100, total=5000))
    levels = [level for level, _, _ in script.of("burn_rate")]
    assert levels == ["warning", "critical"]
    status = engine.burn(script.session_id)
    assert status.total_tokens == 60000
    assert status.budget == 100000 and round(status.percent) == 60
    assert 20000 < status.tokens_per_minute < 40000
    assert 0 < status.eta_seconds < 300
    assert 3 <= len(status.series) <= 12


def test_burn_rate_absolute_threshold(tmp_path):
    engine = engine_with(tmp_path, "detection:\n  burn_rate:\n"
                                   "    warning_tokens_per_minute: 100000\n")
    script = Script(engine)
    for _ in range(10):
        script.tick(1.0)
        script.assistant(usage=Usage(input=20000, output=10, total=20010))
    assert [level for level, _, _ in script.of("burn_rate")] == ["warning"]


def test_a_clock_stepped_back_does_not_make_a_steady_session_a_runaway(tmp_path):
    """1,000 tokens a minute, then the host's clock steps back an hour: the window starts
    over at the new time, and the rate stays what the session burns."""
    engine = engine_with(tmp_path, "detection:\n  burn_rate:\n"
                                   "    warning_tokens_per_minute: 3000\n"
                                   "    critical_tokens_per_minute: 5000\n")
    script = Script(engine)
    for step in range(20):
        if step == 10:
            script.tick(-3600.0)
        script.tick(59.0)
        script.assistant(usage=Usage(input=990, output=10, total=1000))
    assert script.of("burn_rate") == []
    assert engine.burn(script.session_id).tokens_per_minute < 1500


def test_a_record_from_the_far_future_does_not_inflate_the_rate(tmp_path):
    engine = engine_with(tmp_path, "detection:\n  burn_rate:\n"
                                   "    critical_tokens_per_minute: 5000\n")
    script = Script(engine)
    for step in range(20):
        script.tick(59.0)
        if step == 5:
            future = script.ts
            script.ts += 10 * 365 * 86400.0
            script.assistant(usage=Usage(input=990, output=10, total=1000))
            script.ts = future
            continue
        script.assistant(usage=Usage(input=990, output=10, total=1000))
    assert script.of("burn_rate") == []


def test_diminishing_returns_on_continuations():
    script = Script()
    script.user("Write the design document for the storage layer, with examples.")
    for output in (3000, 2000, 400, 200, 100, 50):
        script.assistant(usage=Usage(input=5000, output=output, total=5000 + output))
        script.user("continue")
    assert script.of("diminishing_returns") == [("warning", 2, 0), ("critical", 4, 0)]

    growing = Script(session_id="sess-2")
    growing.user("Write the design document for the storage layer, with examples.")
    for output in (300, 200, 400, 250, 600, 300):
        growing.assistant(usage=Usage(input=5000, output=output, total=5000 + output))
        growing.user("continue")
    assert growing.of("diminishing_returns") == []


def test_new_questions_are_not_continuations():
    script = Script()
    for output in (3000, 2000, 400, 200, 100, 50):
        script.user("Now please explain the next part of the storage layer in detail, thanks.")
        script.assistant(usage=Usage(input=5000, output=output, total=5000 + output))
    assert script.of("diminishing_returns") == []


def test_context_bloat(tmp_path):
    script = Script(engine_with(tmp_path, "detection: {context_bloat: {critical_factor: 8}}\n"))
    for prompt, output in ((20000, 800), (21000, 700), (22000, 900), (60000, 300),
                           (90000, 20), (120000, 15), (170000, 12)):
        script.assistant(usage=Usage(input=prompt, output=output, total=prompt + output))
    # the last three replies must average under 0.2 % output: 120k in for 15 out (5.7x) warns
    assert script.of("context_bloat") == [("warning", 5, 0), ("critical", 8, 0)]

    productive = Script(session_id="sess-2")
    for prompt in (20000, 21000, 22000, 90000, 170000):
        productive.assistant(usage=Usage(input=prompt, output=4000, total=prompt + 4000))
    assert productive.of("context_bloat") == []


def test_turn_failures_with_episodes():
    script = Script()
    for _ in range(5):
        script.assistant(stop_reason="error", error="400 invalid request")
    script.assistant()
    for _ in range(3):
        script.assistant(stop_reason="error", error="400 invalid request")
    assert script.of("turn_failures") == [("warning", 3, 0), ("critical", 5, 0),
                                          ("warning", 3, 0)]
    assert "400 invalid request" in script.findings[0].message


def test_post_compaction_repeat():
    script = Script()
    calls = [("read", {"path": "/repo/README.md"}, "# Repo"),
             ("read", {"path": "/repo/setup.py"}, "setup()"),
             ("exec", {"command": "git status"}, "clean")]
    for name, args, text in calls:
        script.step(name, args, {"n": 1}, text)
    script.compaction()
    for name, args, text in calls:
        script.step(name, args, {"n": 1}, text)
    assert script.of("post_compaction_repeat") == [("warning", 2, 5), ("critical", 3, 6)]

    fresh = Script(session_id="sess-2")
    for name, args, text in calls:
        fresh.step(name, args, {"n": 1}, text)
    fresh.compaction()
    fresh.step("read", {"path": "/repo/NEWS.md"}, {"n": 1}, "news")
    fresh.step("read", {"path": "/repo/setup.py"}, {"n": 1}, "setup(version=2)")
    assert fresh.of("post_compaction_repeat") == []


def test_iteration_budget_per_run(tmp_path):
    engine = engine_with(tmp_path, "detection:\n  iteration_budget:\n"
                                   "    warning_tool_calls: 5\n    critical_tool_calls: 8\n")
    script = Script(engine)
    for n in range(9):
        script.step("read", {"path": f"/f{n}"}, {}, f"content {n}")
    for n in range(4):
        script.step("read", {"path": f"/g{n}"}, {}, f"other {n}", run="run-2")
    assert script.of("iteration_budget") == [("warning", 5, 5), ("critical", 8, 8)]


def test_external_hung_process_hook():
    script = Script()
    script.exec("sleep 600 &", "")
    engine = script.engine
    first = engine.external_finding(script.key, script.session_id, "hung_process", "warning",
                                    600, "sleep 600 silent for 600 s", pattern="pid:42")
    again = engine.external_finding(script.key, script.session_id, "hung_process", "warning",
                                    700, "sleep 600 silent for 700 s", pattern="pid:42")
    worse = engine.external_finding(script.key, script.session_id, "hung_process", "critical",
                                    1800, "sleep 600 silent for 1800 s", pattern="pid:42")
    assert (first.level, again, worse.level) == ("warning", None, "critical")


def test_parse_openclaw_loop_lines():
    cases = {
        "Loop warning: exec called 10 times with identical arguments":
            ("generic_repeat", "warning", 10, "exec"),
        "Ping-pong loop warning: alternating calls count=12 currentTool=read":
            ("ping_pong", "warning", 12, "read"),
        "Polling loop warning: process repeated 10 times":
            ("known_poll_no_progress", "warning", 10, "process"),
        "Critical generic loop detected: exec repeated 20 times":
            ("generic_repeat", "critical", 20, "exec"),
        "Critical polling loop detected: process repeated 21 times":
            ("known_poll_no_progress", "critical", 21, "process"),
        "Global circuit breaker triggered: exec repeated 30 times with no progress":
            ("global_circuit_breaker", "critical", 30, "exec"),
        "Blocking exec due to critical loop: CRITICAL: Called exec with identical outcomes 20 "
        "times. Session execution blocked to prevent runaway loops.":
            ("generic_repeat", "critical", 20, "exec"),
        "Loop warning for read: WARNING: You are alternating between repeated tool-call "
        "patterns (21 consecutive calls). This looks like a ping-pong loop":
            ("ping_pong", "warning", 21, "read"),
        'tool loop: sessionId=s sessionKey=k tool=exec level=critical action=block '
        'detector=ping_pong count=31 pairedTool=read message="CRITICAL: …"':
            ("ping_pong", "critical", 31, "exec"),
        "Argument churn warning: read cycled through stable argument patterns":
            ("argument_churn", "warning", 0, "read"),
    }
    for line, expected in cases.items():
        parsed = parse_loop_line(line)
        assert (parsed.detector, parsed.level, parsed.count, parsed.tool) == expected, line
    assert parse_loop_line("embedded run start: runId=r sessionId=s") is None


def test_gateway_notice_attribution_and_dedupe():
    script = Script()
    script.exec("ls", "a")
    for count in range(10, 20):
        script.notice(f"Ping-pong loop warning: alternating calls count={count} "
                      "currentTool=exec")
    script.notice("Critical ping-pong loop detected: alternating calls count=20 currentTool=exec")
    found = script.of("gateway_loop_notice")
    assert found == [("warning", 10, 0), ("critical", 20, 0)]
    unattributed = script.engine.observe("", "main", parse_notice("Loop warning: exec called "
                                                                  "10 times with identical"))
    assert unattributed == []


def parse_notice(message: str):
    from monitor.events import GatewayNotice

    return GatewayNotice("WARN", "agents/loop-detection", message, None)


def test_streaks_pairs_and_forget():
    script = Script()
    for _ in range(8):
        script.step("read", {"path": "/etc/hostname"}, {"kind": "text"}, "vm")
        script.exec("ls /nope", "ls: cannot access '/nope'", 2)
    statuses = {s.detector: s for s in script.engine.streaks(script.session_id)}
    assert statuses["ping_pong"].count == 17
    assert statuses["ping_pong"].critical_count == 17
    assert statuses["ping_pong"].level == "warning"
    assert statuses["generic_repeat"].count == 8
    assert statuses["session_no_progress"].count == 14
    (pair,) = script.engine.pingpong_pairs(script.session_id)
    assert (pair.tool_a, pair.tool_b, pair.count, pair.no_progress) == ("exec", "read", 17, True)
    script.engine.forget(script.session_id)
    assert script.engine.streaks(script.session_id) == []
    assert script.engine.pingpong_pairs(script.session_id) == []
    assert script.engine.burn(script.session_id).total_tokens == 0


def test_state_stays_bounded_as_a_session_grows():
    script = Script()

    def run(calls: int) -> None:
        for n in range(calls):
            script.step("read", {"path": f"/f{n % 977}"}, {"kind": "text"}, f"body {n}",
                        run=f"run-{n // 50}")

    def memos_emptied() -> None:
        """The bounded memos (remembered digests, masked texts, budget days) start over at
        their limit: what they hold at a snapshot depends on where in that cycle it falls."""
        for held in gc.get_objects():
            if type(held) is BoundedMemo:
                held.clear()

    run(1000)
    tracemalloc.start()
    memos_emptied()
    before = tracemalloc.take_snapshot()
    run(3000)
    memos_emptied()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    state = script.engine._sessions[script.session_id]
    assert len(state.records) == 30
    assert len(state.pending) <= 512
    assert len(state.progress.keys) <= 30
    assert len(state.warning_buckets.marks) <= 64 and len(state.levels.marks) <= 64
    growth = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    assert growth < 100_000, growth


def test_exec_details_helper_shape():
    details = exec_details("x", 2)
    assert details["exitCode"] == 2 and details["aggregated"] == "x"


def test_report_patterns_of_finished_runs_are_forgotten():
    script = Script()
    for run in range(60):
        for _ in range(12):
            script.exec("ls /nope", "ls: cannot access '/nope'", 2, run=f"run-{run}")
    warnings = [f for f in script.findings if f.detector == "generic_repeat"]
    assert len(warnings) == 60
    state = script.engine._sessions[script.session_id]
    assert len(state.warning_buckets.marks) <= 3
    assert {key.split(":")[0] for key in state.warning_buckets.marks} <= {"run-57", "run-58",
                                                                         "run-59"}


def test_a_failed_turns_error_is_redacted_before_it_is_cut():
    from monitor.detect.beyond import TurnFailures

    turns = TurnFailures()
    error = "upstream 401: " + "x" * 174 + " ghp_" + "G" * 36 + " rest of the error"
    assert turns.observe(True, error) == 1
    assert "ghp_G" not in turns.last_error and "«redacted»" in turns.last_error

"""An idle session hibernates to a compact summary and wakes on its next event.

A monitor reads a real OpenClaw 2026.9.6 hammer loop (``oc-hammer.jsonl``) placed two hours
in the past; the session is then idle past ``history.hibernate_after`` and hibernates. The
same loop is then appended again as a new run (new run id, new call ids, timestamps of
now): the session wakes, and everything it reports is compared with a monitor that never
hibernated (``hibernate_after: null``): the new loop reaches critical at the same
``at_call``, the session token budget counts on from the total before the sleep, and what
was raised before is not raised again.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest
from test_history_fast_path import shifted_entries

from monitor.config import load_config
from monitor.detect.engine import DetectionEngine
from monitor.pipeline import HIBERNATE_EVERY, Monitor
from monitor.replay import read_to_end
from monitor.sources.sourceset import SourceSet

FIXTURE = Path(__file__).parent / "fixtures" / "oc-hammer.jsonl"
RUN_ID = "057a028f-ad5d-42a8-a088-ae4e8cd1cec3"
HAMMER_TOKENS = 309_472          # the hammer loop's 22 assistant messages
HAMMER_CALLS = 22
# The session budget: the first loop ends at 94 % of it (a warning), the second crosses it.
BUDGET = 330_000
AFTER = 1800.0
EXEC_HASH = "b7f339097891f0047af5d1369f4e8848aed719c72d6a68a84176100d680c26c6"


def hammer_lines(end_age: float, *, new_run: bool) -> tuple[str, list[dict]]:
    """The hammer transcript's entries, its last one ``end_age`` seconds old; ``new_run``:
    without its session header, under a new run id and new call ids (the same loop again)."""
    text = FIXTURE.read_text()
    if new_run:
        text = text.replace(RUN_ID, str(uuid.uuid4())).replace('"call_', '"call2_')
    lines = shifted_entries(text, end_age)
    sid = lines[0]["id"]
    return sid, (lines[1:] if new_run else lines)


class Scene:
    """A state dir holding the hammer loop two hours old, and a monitor over it."""

    def __init__(self, root: Path, *, hibernate_after: float | None = AFTER,
                 status: str = "done") -> None:
        root.mkdir(parents=True, exist_ok=True)
        config_path = root / "config.yaml"
        after = "null" if hibernate_after is None else hibernate_after
        config_path.write_text(f"budgets:\n  session_tokens: {BUDGET}\n"
                               f"history:\n  hibernate_after: {after}\n")
        self.config = load_config(str(config_path), env={})
        self.sid, lines = hammer_lines(7200, new_run=False)
        sessions = root / "state" / "agents" / "main" / "sessions"
        sessions.mkdir(parents=True)
        self.transcript = sessions / f"{self.sid}.jsonl"
        self.transcript.write_text("".join(json.dumps(e) + "\n" for e in lines))
        (sessions / "sessions.json").write_text(json.dumps({
            "agent:main:main": {"sessionId": self.sid, "status": status, "updatedAt": 0}}))
        self.engine = DetectionEngine(self.config)
        self.monitor = Monitor(SourceSet(state_dir=str(root / "state"), replay=True),
                               self.engine, detect_since=time.time() - 86_400)
        read_to_end(self.monitor)
        self.state = self.monitor.sessions[self.sid]

    def idle(self, seconds: float) -> int:
        """Two sweeps ``seconds`` apart: the first sees the session's last events, the
        second finds it idle that long."""
        now = time.time()
        self.monitor.hibernate_idle(now, force=True)
        return self.monitor.hibernate_idle(now + seconds, force=True)

    def loop_again(self) -> list:
        """Append the loop again as a new run, read it; the findings it raised."""
        _, lines = hammer_lines(5, new_run=True)
        with self.transcript.open("a") as handle:
            handle.write("".join(json.dumps(e) + "\n" for e in lines))
        before = self.state.findings_total
        read_to_end(self.monitor)
        return self.state.findings[len(self.state.findings)
                                   - (self.state.findings_total - before):]


def shape(findings) -> list[tuple]:
    return [(f.detector, f.level, f.count, f.at_call, f.tool,
             f.pattern.split(":", 1)[1] if f.pattern.count("-") >= 4 else f.pattern)
            for f in findings]


def test_the_first_loop_is_what_the_other_tests_assume(tmp_path):
    scene = Scene(tmp_path, hibernate_after=None)
    state = scene.engine._sessions[scene.sid]
    assert (state.session_tokens, state.call_index) == (HAMMER_TOKENS, HAMMER_CALLS)
    levels = {(f.detector, f.level) for f in scene.state.findings}
    assert ("generic_repeat", "critical") in levels
    assert ("token_budget", "warning") in levels and ("token_budget", "critical") not in levels


def test_an_idle_session_hibernates_and_its_heavy_state_goes(tmp_path):
    scene = Scene(tmp_path)
    live = scene.engine._sessions[scene.sid]
    assert len(live.records) == HAMMER_CALLS and live.burn.samples and live.recent_call_keys
    assert scene.idle(AFTER - 60) == 0, "not idle long enough"
    assert scene.sid in scene.engine._sessions
    assert scene.idle(AFTER + 1) == 1
    assert scene.sid not in scene.engine._sessions and scene.engine.is_hibernated(scene.sid)
    summary = scene.engine._hibernated[scene.sid]
    for heavy in ("records", "pending", "batch", "burn", "recent_call_keys", "progress",
                  "compaction", "bloat", "handled_vetoes", "run_counts", "last_call"):
        assert not hasattr(summary, heavy), heavy
    assert (summary.call_index, summary.session_tokens) == (HAMMER_CALLS, HAMMER_TOKENS)
    assert dict(summary.level_marks)["token_budget:session"] == 1      # warning raised
    assert dict(summary.warning_marks)[f"{RUN_ID}:generic:exec:exec:{EXEC_HASH}"] == 1


def test_a_hibernated_session_shows_what_an_idle_one_does(tmp_path):
    scene = Scene(tmp_path)
    awake = {s.detector: s.count for s in scene.engine.streaks(scene.sid)}
    scene.idle(AFTER + 1)
    burn = scene.engine.burn(scene.sid)
    assert burn.total_tokens == HAMMER_TOKENS and burn.budget == BUDGET
    assert burn.percent == pytest.approx(HAMMER_TOKENS * 100 / BUDGET)
    assert burn.tokens_per_minute == 0 and burn.series == ()
    assert scene.engine.pingpong_pairs(scene.sid) == []
    asleep = {s.detector: s.count for s in scene.engine.streaks(scene.sid)}
    assert asleep["token_budget"] == HAMMER_TOKENS * 100 // BUDGET
    # What the history window and the burn buckets showed is gone (no last call, no rate);
    # the counters the summary keeps show as before.
    windowed = {"generic_repeat", "known_poll_no_progress", "global_circuit_breaker",
                "unknown_tool_repeat", "argument_churn", "burn_rate"}
    assert awake["generic_repeat"] > 0 and not windowed & set(asleep) - {"burn_rate"}
    assert asleep["burn_rate"] == 0 and asleep["ping_pong"] == 0
    assert {d: c for d, c in asleep.items() if d not in windowed} == \
        {d: c for d, c in awake.items() if d not in windowed}
    assert scene.engine.is_hibernated(scene.sid), "looking does not wake it"


def test_after_waking_it_reports_what_a_session_that_never_slept_reports(tmp_path):
    control = Scene(tmp_path / "control", hibernate_after=None)
    assert control.idle(AFTER + 1) == 0, "null: never"
    slept = Scene(tmp_path / "slept")
    assert slept.idle(AFTER + 1) == 1

    expected = control.loop_again()
    found = slept.loop_again()

    assert not slept.engine.is_hibernated(slept.sid) and slept.sid in slept.engine._sessions
    assert shape(found) == shape(expected)
    # The new loop reaches critical at the same call, numbered on from the first loop.
    critical = [f for f in found if f.detector == "generic_repeat" and f.level == "critical"]
    assert critical and critical[0].at_call == HAMMER_CALLS + 21
    # The session budget counts on from the total before the sleep: crossed in the new loop.
    budget = [f for f in found if f.detector == "token_budget"]
    assert [f.level for f in budget] == ["critical"]
    assert slept.engine._sessions[slept.sid].session_tokens == 2 * HAMMER_TOKENS
    assert budget[0].count == int(budget_percent_when_crossed())
    # What was raised before the sleep is not raised again.
    assert not [f for f in found if f.detector == "token_budget" and f.level == "warning"]
    assert not [f for f in found if f.detector == "session_no_progress"]
    assert slept.state.tool_calls == 2 * HAMMER_CALLS


def budget_percent_when_crossed() -> float:
    """The session's percent of the budget at the first assistant message of the second
    loop that takes it to 100 %."""
    total = HAMMER_TOKENS
    _, lines = hammer_lines(5, new_run=True)
    for entry in lines:
        message = entry.get("message")
        if isinstance(message, dict) and message.get("role") == "assistant":
            total += message["usage"]["totalTokens"]
            if total * 100 / BUDGET >= 100:
                return total * 100 / BUDGET
    raise AssertionError("the second loop never crosses the budget")


def test_a_running_session_does_not_hibernate(tmp_path):
    scene = Scene(tmp_path, status="running")
    assert scene.idle(AFTER + 1) == 0
    assert scene.sid in scene.engine._sessions


def test_the_monitor_sweeps_at_most_once_a_minute(tmp_path):
    scene = Scene(tmp_path)
    now = time.time()
    scene.monitor.hibernate_idle(now, force=True)
    assert scene.monitor.hibernate_idle(now + AFTER + 1) == 1
    scene.engine.observe("agent:main:main", "main", _wake_event(scene.sid))
    scene.monitor.hibernate_idle(now + AFTER + 2)                      # too soon: skipped
    assert scene.monitor.hibernate_idle(now + 2 * AFTER + HIBERNATE_EVERY) == 0   # seen
    assert scene.monitor.hibernate_idle(now + 3 * AFTER + 2 * HIBERNATE_EVERY) == 1


def _wake_event(session_id: str):
    from monitor.events import UserMessage
    return UserMessage(session_id=session_id, run_id=None, ts=time.time(), text_chars=3)

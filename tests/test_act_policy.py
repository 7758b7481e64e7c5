"""The automatic policy: modes, triggers, per-agent settings, cooldown, hourly cap, audit."""

from __future__ import annotations

import json
import threading
import time

import pytest

from monitor.act.api import ActionResult
from monitor.act.audit import AuditLog
from monitor.act.loop import ActionLoop
from monitor.act.policy import ActionPolicy, choose_action
from monitor.config import load_config
from monitor.config.sections import ActionsConfig
from monitor.records import ActionRecord, FindingRecord, Record, as_json

pytestmark = pytest.mark.timeout(60)


class RecordingController:
    """An ActionController that records what it is asked and answers ``ok``."""

    def __init__(self, *, ok: bool = True, gate: threading.Event | None = None,
                 explode: bool = False) -> None:
        self.calls: list[tuple] = []
        self.ok = ok
        self.gate = gate
        self.explode = explode

    def stop(self, session_key, *, method="abort", trigger=None):
        return self._act(session_key, method, trigger)

    def kill(self, session_key, *, trigger=None):
        return self._act(session_key, "kill", trigger)

    def kill_candidates(self, session_key):
        return []

    def _act(self, key, action, trigger):
        self.calls.append((key, action, trigger))
        if self.gate is not None:
            self.gate.wait(10)
        if self.explode:
            raise RuntimeError("boom")
        return ActionResult(key, action, self.ok, "done" if self.ok else "gateway down",
                            trigger, (123,) if action == "kill" else ())

    def close(self):
        pass


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def finding(key="agent:main:loop", detector="generic_repeat", level="critical"):
    return FindingRecord(ts="2026-01-01T00:00:00.000Z", key=key, session_id=f"sid-{key}",
                         detector=detector, level=level, count=20, tool="exec", at_call=21,
                         message=f"{detector} {level}")


@pytest.fixture
def make_policy(tmp_path):
    made = []

    def make(yaml_text: str, controller=None, mode=None, clock=None):
        path = tmp_path / "clawwatch.yaml"
        path.write_text(yaml_text + "\n")
        config = load_config(str(path), env={})
        audit = AuditLog(str(tmp_path / "audit.jsonl"))
        policy = ActionPolicy(config, controller or RecordingController(), audit=audit,
                              mode=mode, clock=clock or Clock())
        made.append(policy)
        return policy

    yield make
    for policy in made:
        policy.close(2)


def audit_events(tmp_path) -> list[dict]:
    path = tmp_path / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def settle(policy: ActionPolicy, records=()) -> list[dict]:
    """The action records the policy gives for ``records``, as their output lines' JSON."""
    out = policy.handle(list(records))
    assert policy.wait_idle(5)
    return [as_json(record) for record in out + policy.drain()]


def test_mode_off_does_nothing(make_policy, tmp_path):
    controller = RecordingController()
    policy = make_policy("actions: {mode: off, on_critical: stop}", controller)
    assert settle(policy, [finding()]) == []
    assert controller.calls == [] and audit_events(tmp_path) == []


def test_dry_run_records_and_audits_what_it_would_do(make_policy, tmp_path):
    controller = RecordingController()
    policy = make_policy("actions: {mode: dry-run, on_critical: stop, stop_method: stop-text}",
                         controller)
    (record,) = settle(policy, [finding()])
    assert controller.calls == []
    assert record["type"] == "action" and record["dry_run"] is True and record["ok"] is False
    assert (record["action"], record["trigger"]) == ("stop-text", "generic_repeat")
    assert record["detail"] == "dry run: would stop (stop-text)"
    (entry,) = audit_events(tmp_path)
    assert entry["event"] == "dry-run" and entry["trigger"]["detector"] == "generic_repeat"


def test_auto_stops_on_a_critical_and_audits_attempt_and_result(make_policy, tmp_path):
    controller = RecordingController()
    policy = make_policy("actions: {mode: auto, on_critical: stop}", controller)
    records = settle(policy, [finding(), finding(level="warning", detector="ping_pong",
                                              key="agent:main:other")])
    assert controller.calls == [("agent:main:loop", "abort", "generic_repeat")]
    (record,) = records
    assert (record["key"], record["action"], record["ok"], record["trigger"]) == (
        "agent:main:loop", "abort", True, "generic_repeat")
    assert [e["event"] for e in audit_events(tmp_path)] == ["attempt", "result"]
    assert audit_events(tmp_path)[1]["ok"] is True


def test_act_flag_overrides_the_configured_mode(make_policy):
    controller = RecordingController()
    policy = make_policy("actions: {mode: off, on_critical: kill}", controller, mode="auto")
    (record,) = settle(policy, [finding()])
    assert controller.calls == [("agent:main:loop", "kill", "generic_repeat")]
    assert record["action"] == "kill" and record["pids"] == [123]


def test_trigger_precedence():
    actions = ActionsConfig(
        on_critical="alert",
        triggers={"generic_repeat:critical": "kill", "*:warning": "stop", "ping_pong": "stop",
                  "token_budget": "alert"})
    assert choose_action(actions, "generic_repeat", "critical") == "kill"
    assert choose_action(actions, "ping_pong", "critical") == "stop"
    assert choose_action(actions, "ping_pong", "warning") == "stop"          # via *:warning
    assert choose_action(actions, "token_budget", "critical") == "alert"
    assert choose_action(actions, "burn_rate", "critical") == "alert"        # on_critical
    bare = ActionsConfig(triggers={"ping_pong": "stop"})
    assert choose_action(bare, "ping_pong", "warning") is None, "bare = critical only"


def test_cooldown_holds_back_a_second_action_on_the_same_session(make_policy, tmp_path):
    controller, clock = RecordingController(), Clock()
    policy = make_policy("actions: {mode: auto, on_critical: stop, cooldown_seconds: 60}",
                         controller, clock=clock)
    settle(policy, [finding(), finding(detector="session_no_progress")])
    assert len(controller.calls) == 1
    suppressed = [e for e in audit_events(tmp_path) if e["event"] == "suppressed"]
    assert len(suppressed) == 1 and suppressed[0]["detail"].startswith("cooldown")
    clock.now += 61
    settle(policy, [finding(detector="ping_pong")])
    assert len(controller.calls) == 2


def test_hourly_cap_limits_actions_across_sessions(make_policy, tmp_path):
    controller, clock = RecordingController(), Clock()
    policy = make_policy("actions: {mode: auto, on_critical: stop, max_actions_per_hour: 2}",
                         controller, clock=clock)
    settle(policy, [finding(key=f"agent:main:s{n}") for n in range(3)])
    assert [call[0] for call in controller.calls] == ["agent:main:s0", "agent:main:s1"]
    assert [e["detail"] for e in audit_events(tmp_path) if e["event"] == "suppressed"] == [
        "hourly cap reached (2 actions)"]
    clock.now += 3600
    settle(policy, [finding(key="agent:main:s3")])
    assert controller.calls[-1][0] == "agent:main:s3"


def test_per_agent_overrides(make_policy):
    controller = RecordingController()
    policy = make_policy(
        "actions: {mode: auto, on_critical: stop}\n"
        "agents:\n  scratch: {actions: {mode: off}}\n  builder: {actions: {on_critical: kill}}",
        controller, mode="auto")
    settle(policy, [finding(key="agent:scratch:a"), finding(key="agent:builder:b"),
                    finding(key="agent:main:c")])
    assert sorted(controller.calls) == [("agent:builder:b", "kill", "generic_repeat"),
                                        ("agent:main:c", "abort", "generic_repeat")]


def test_handle_never_waits_for_the_controller(make_policy):
    gate = threading.Event()
    controller = RecordingController(gate=gate)
    policy = make_policy("actions: {mode: auto, on_critical: stop}", controller)
    started = time.monotonic()
    assert policy.handle([finding()]) == []
    assert time.monotonic() - started < 0.2
    gate.set()
    assert policy.wait_idle(5)
    assert [r.ok for r in policy.drain()] == [True]


def test_a_failing_controller_gives_a_failed_record_and_an_error_line(make_policy, tmp_path):
    policy = make_policy("actions: {mode: auto, on_critical: stop}",
                         RecordingController(explode=True))
    loop = ActionLoop(policy)
    loop.process([finding()])
    assert policy.wait_idle(5)
    records = [as_json(record) for record in loop.process([])]
    action = next(r for r in records if r["type"] == "action")
    assert action["ok"] is False and "internal error" in action["detail"]
    error = next(r for r in records if r["type"] == "error")
    assert error["source"] == "gateway" and "agent:main:loop" in error["message"]
    assert audit_events(tmp_path)[-1]["error"].startswith("internal error")
    policy.controller.explode = False
    settle(policy, [finding(key="agent:main:next")])
    assert policy.controller.calls[-1][0] == "agent:main:next", "worker survived"


def test_wrap_emit_emits_the_step_then_what_it_added(make_policy):
    policy = make_policy("actions: {mode: dry-run, on_critical: stop}")
    batches: list[list[Record]] = []
    emit = ActionLoop(policy).wrap_emit(batches.append)
    emit([finding()])
    assert [type(r) for r in batches[0]] == [FindingRecord]
    assert [type(r) for r in batches[1]] == [ActionRecord]


def test_a_key_that_routes_to_another_sources_session_is_not_acted_on(make_policy, tmp_path):
    """Actions go by the key's prefix: an OpenClaw session whose key (data, from its index)
    borrows ``claude-code:`` would have that Claude Code session killed for its findings."""
    controller = RecordingController()
    policy = make_policy("actions: {mode: auto, on_critical: kill}", controller)

    def critical(key: str, session_id: str) -> FindingRecord:
        return FindingRecord(ts="2026-01-01T00:00:00.000Z", key=key, session_id=session_id,
                             detector="generic_repeat", level="critical", count=20,
                             tool="exec", at_call=21, message="generic_repeat critical")

    settle(policy, [critical("claude-code:victim", "openclaw-session"),
                    critical("claude-code:own", "own")])
    assert controller.calls == [("claude-code:own", "kill", "generic_repeat")]
    refused = [e for e in audit_events(tmp_path) if e["key"] == "claude-code:victim"]
    assert [e["event"] for e in refused] == ["suppressed"]
    assert "routes to the claude-code session 'victim'" in refused[0]["detail"]

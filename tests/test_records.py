"""The typed output records: each kind's ``watch --json`` line keeps the contract's keys in
their order, a default-valued optional key stays out, and redaction keeps the type."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from monitor.demo.sim import FakeClock, Simulator
from monitor.records import (
    ActionRecord,
    ErrorRecord,
    FindingRecord,
    SessionRecord,
    as_json,
    redacted,
    redacted_json,
)
from monitor.redaction import REDACTED

REPO = Path(__file__).resolve().parent.parent

KEYS = {
    "session": ["type", "ts", "key", "session_id", "agent_id", "status", "model", "label",
                "aborted_last_run"],
    "tool_call": ["type", "ts", "key", "session_id", "agent_id", "call_id", "name", "at_call",
                  "run_id"],
    "finding": ["type", "ts", "key", "session_id", "detector", "level", "count", "tool",
                "at_call", "message"],
    "error": ["type", "ts", "source", "path", "where", "message"],
    "notice": ["type", "ts", "source", "path", "message"],
    "action": ["type", "ts", "key", "action", "trigger", "ok", "detail", "pids", "session_id",
               "level", "dry_run"],
}


@pytest.fixture
def world(tmp_path):
    """A legacy state dir with a hammering session (loop findings), a line that is not
    JSON in its transcript, and a config that makes dry-run stops."""
    log = tmp_path / "openclaw.log"
    sim = Simulator(tmp_path / "state", era="legacy", log_path=log,
                    clock=FakeClock(1_795_960_000.0, 0.25))
    try:
        session = sim.add_session("hammer", key="agent:main:hammer")
        sim.run(calls=25, rate=None)
    finally:
        sim.close()
    transcript = next((tmp_path / "state").rglob(f"{session.session_id}.jsonl"))
    with open(transcript, "ab") as handle:
        handle.write(b"{not json\n")
    config = tmp_path / "clawwatch.yaml"
    config.write_text("actions:\n  mode: dry-run\n  on_critical: stop\n"
                      f"  audit_log: {json.dumps(str(tmp_path / 'audit.jsonl'))}\n")
    return tmp_path / "state", log, config


def watch(world, *extra: str) -> str:
    state, log, config = world
    result = subprocess.run(
        [sys.executable, "-m", "monitor", "watch", "--headless", "--state-dir", str(state),
         "--log", str(log), "--config", str(config), "--from-start", "--no-checkpoint",
         "--seconds", "2", "--poll", "0.2", *extra],
        cwd=REPO, capture_output=True, text=True, timeout=60,
        env={"PATH": "/usr/bin:/bin", "HOME": str(state.parent),
             "XDG_STATE_HOME": str(state.parent / "xdg")})
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_every_kind_of_watch_json_line_keeps_the_contract_keys_in_order(world):
    lines = [json.loads(line) for line in watch(world, "--json").splitlines()]
    seen = {}
    for line in lines:
        seen.setdefault(line["type"], line)
        assert list(line) == KEYS[line["type"]], line
    assert set(seen) == set(KEYS)
    assert seen["error"]["where"].startswith("offset ") and seen["error"]["source"] == "jsonl"
    assert seen["action"]["dry_run"] is True and seen["action"]["ok"] is False
    finding = next(line for line in lines if line["type"] == "finding"
                   and line["level"] == "critical")
    assert isinstance(finding["count"], int) and finding["key"] == "agent:main:hammer"


def test_the_plain_lines_say_the_same(world):
    out = watch(world)
    assert " CRITICAL " in out and " ACTION   agent:main:hammer abort ok=False" in out
    assert " call     agent:main:hammer #1 exec" in out
    assert " error    " in out and "offset " in out


def test_optional_keys_stay_out_at_their_default():
    error = ErrorRecord(ts=None, source="gateway", message="down")
    assert list(as_json(error)) == ["type", "ts", "source", "message"]
    session = SessionRecord(ts=None, key="k", session_id="s", agent_id="main", status=None,
                            model=None, label=None, aborted_last_run=False, known_from="log")
    assert as_json(session)["known_from"] == "log"
    action = ActionRecord(ts=None, key="k", action="abort", trigger=None, ok=True, detail="",
                          pids=[], session_id=None, level=None)
    assert "dry_run" not in as_json(action) and "ambiguous" not in as_json(action)


def test_redaction_keeps_the_type_and_the_object_when_nothing_is_secret():
    clean = FindingRecord(ts=None, key="k", session_id="s", detector="generic_repeat",
                          level="critical", count=3, tool="exec", at_call=3, message="ls")
    assert redacted(clean) is clean
    secret = "sk-ant-api03-" + "A1b2C3d4E5f6G7h8I9j0" * 3
    leaking = FindingRecord(ts=None, key="k", session_id="s", detector="generic_repeat",
                            level="critical", count=3, tool="exec", at_call=3,
                            message=f"exec curl -H 'x-api-key: {secret}'")
    masked = redacted(leaking)
    assert type(masked) is FindingRecord and secret not in masked.message
    assert REDACTED in masked.message and masked.count == 3
    assert secret not in json.dumps(redacted_json(leaking))

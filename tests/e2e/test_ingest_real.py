"""clawwatch's history reader against transcripts written by a real OpenClaw gateway.

Looping runs (hammer, pingpong, poll, and a hammer whose assistant messages are big enough to be
stored zstd-compressed) run concurrently until OpenClaw's own loop detection stops them; then
``clawwatch replay --json`` must report exactly the tool calls and token sums that plain SQL
finds in the agent DB, both for the SQLite store and for the same history exported as legacy
JSONL.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from . import truth
from .fake_model import COMPLETION_TOKENS

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

REPO_ROOT = Path(__file__).resolve().parents[2]
RUN_DEADLINE_S = 150
# An exec command over 1 KiB makes OpenClaw store its assistant messages as zstd rows.
PADDED_COMMAND = "ls -la /tmp/clawwatch-e2e-missing # " + "padding-" * 200
RUNS = {  # name: (mode, marker options)
    "hammer": ("hammer", {}),
    "pingpong": ("pingpong", {}),
    "poll": ("poll", {}),
    "padded": ("hammer", {"cmd": PADDED_COMMAND, "max": 4}),
}


def replay_json(state_dir: Path) -> dict:
    proc = subprocess.run(
        [sys.executable, "-m", "monitor", "replay", "--state-dir", str(state_dir), "--json"],
        check=False, cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"replay exited {proc.returncode}:\n{proc.stderr[-3000:]}"
    return json.loads(proc.stdout)


def model_requests(model_log: Path, tag: str) -> list[dict]:
    """The fake model's log of the agent-turn requests (tools offered) tagged ``tag``."""
    with open(model_log, encoding="utf-8") as fh:
        requests = [json.loads(line) for line in fh if line.strip()]
    return [r for r in requests if r.get("tag") == tag and r.get("tools_offered")]


@pytest.fixture(scope="module")
def finished_runs(real_gateway):
    """Run every RUNS entry concurrently to its end.

    Returns ``{"runs": {name: (key, run_id, lifecycle data)}, "truths": SQL truth per session_id,
    "suffix": the tag suffix}``.
    """
    suffix = uuid.uuid4().hex[:8]
    started = {}
    for name, (mode, opts) in RUNS.items():
        key = f"agent:main:e2e-ingest-{name}-{suffix}"
        started[name] = (key, real_gateway.start_run(mode, key, tag=f"{name}-{suffix}", **opts))
    deadline = time.monotonic() + RUN_DEADLINE_S
    ended = {}
    for name, (key, run_id) in started.items():
        try:
            end = real_gateway.wait_run_end(run_id, max(1.0, deadline - time.monotonic()))
        except TimeoutError:
            real_gateway.call("chat.abort", {"sessionKey": key})
            raise
        ended[name] = (key, run_id, end)
    truths = truth.wait_quiescent(real_gateway.agent_db)
    return {"runs": ended, "truths": truths, "suffix": suffix}


def truth_for(finished, name) -> truth.SessionTruth:
    key = finished["runs"][name][0]
    matches = [t for t in finished["truths"].values() if t.key == key]
    assert len(matches) == 1, f"expected one transcript for {key}, found {len(matches)}"
    return matches[0]


def test_loop_runs_end_by_loop_detection_with_sensible_truth(real_gateway, finished_runs):
    for name in ("hammer", "pingpong", "poll"):
        end = finished_runs["runs"][name][2]
        assert end["phase"] == "error", f"{name} run was not stopped by loop detection: {end}"
    hammer = truth_for(finished_runs, "hammer")
    assert set(hammer.tools) == {"exec"} and hammer.tool_calls >= 20, hammer
    pingpong = truth_for(finished_runs, "pingpong")
    assert set(pingpong.tools) == {"read", "exec"}, pingpong
    assert abs(pingpong.tools["read"] - pingpong.tools["exec"]) <= 1, pingpong
    poll = truth_for(finished_runs, "poll")
    assert poll.tools.get("exec") == 1 and poll.tools.get("process", 0) >= 20, poll
    padded = truth_for(finished_runs, "padded")
    assert padded.tools == {"exec": 4}, padded

    for name in RUNS:
        session = truth_for(finished_runs, name)
        requests = model_requests(real_gateway.model_log_path,
                                  f"{name}-{finished_runs['suffix']}")
        issued = [r["call_id"] for r in requests if r["call_id"]]
        assert session.call_ids == issued, f"{name}: transcript call ids differ from the model's"
        assert session.tokens == {
            "input": sum(r["usage"]["prompt_tokens"] for r in requests),
            "output": COMPLETION_TOKENS * len(requests),
            "total": sum(r["usage"]["total_tokens"] for r in requests),
        }, f"{name}: transcript usage differs from what the model reported"


def test_zstd_rows_hold_tool_calls(real_gateway, finished_runs):
    assert truth.zstd_row_count(real_gateway.agent_db) > 0
    padded = truth_for(finished_runs, "padded")
    assert padded.zstd_tool_calls == padded.tool_calls == 4, padded


def compare_with_truth(document: dict, truths: dict[str, truth.SessionTruth]) -> list[str]:
    """Every difference between replay's sessions and the truth, as readable lines."""
    by_id = {s.get("session_id"): s for s in document.get("sessions", [])}
    problems = []
    for session_id, expected in sorted(truths.items(), key=lambda item: str(item[1].key)):
        got = by_id.get(session_id)
        label = f"{expected.key} ({session_id})"
        if got is None:
            problems.append(f"{label}: missing from replay")
            continue
        wanted = {"key": expected.key, "agent_id": expected.agent_id,
                  "tool_calls": expected.tool_calls, "tools": expected.tools,
                  "tokens": expected.tokens}
        for field_name, value in wanted.items():
            if got.get(field_name) != value:
                problems.append(f"{label}: {field_name} expected {value!r}, got "
                                f"{got.get(field_name)!r}")
    return problems


def test_replay_of_sqlite_store_matches_sql_truth(real_gateway, finished_runs):
    document = replay_json(real_gateway.state_dir)
    truths = truth.session_truths(real_gateway.agent_db)
    assert truths == finished_runs["truths"], "the agent DB changed after the runs had ended"
    problems = compare_with_truth(document, truths)
    assert not problems, "replay (sqlite) differs from SQL truth:\n" + "\n".join(problems)
    assert any(src["kind"] == "sqlite" for src in document["sources"]), document["sources"]


def test_replay_of_legacy_export_matches_sql_truth(real_gateway, finished_runs, tmp_path):
    sessions_dir = truth.export_legacy(real_gateway.agent_db, tmp_path / "legacy-state")
    truths = finished_runs["truths"]
    exported = {sid: t.content() for sid, t in truth.legacy_truths(sessions_dir).items()}
    assert exported == {sid: t.content() for sid, t in truths.items()}, "export lost events"
    document = replay_json(tmp_path / "legacy-state")
    problems = compare_with_truth(document, truths)
    assert not problems, "replay (legacy jsonl) differs from SQL truth:\n" + "\n".join(problems)
    kinds = {src["kind"] for src in document["sources"]}
    assert "jsonl" in kinds and "sqlite" not in kinds, document["sources"]

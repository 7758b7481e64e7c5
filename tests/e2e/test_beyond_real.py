"""What clawwatch catches that a real OpenClaw 2026.9.6 gateway lets through, and what it leaves be.

On a gateway with OpenClaw's loop detection on, three sessions run concurrently:

- ``rotation``: ls / find / python3 -c / tail on one missing path, in turn. Every signature stays
  under OpenClaw's per-signature thresholds, so OpenClaw logs nothing.
- ``drift``: the same command whose output differs only by a timestamp. OpenClaw warns (identical
  arguments) but its outcome hashes differ, so it never blocks.
- ``progress``: distinct commands with distinct outputs, a model really getting somewhere.

clawwatch must call the first two ``session_no_progress`` critical at 20 where OpenClaw logged
nothing critical and vetoed nothing, and report nothing at all on the third, like OpenClaw.
"""

from __future__ import annotations

import pytest

from . import loglines
from .fake_model import PROGRESS_STEPS, ROTATION
from .test_parity_real import PARITY_DETECTORS, finding_rows, replay_sessions, run_sessions

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(360)]

RUN_DEADLINE_S = 150
STUCK_CALLS = 30
RUNS = {  # name: (fake model mode, marker options)
    "rotation": ("rotation", {"max": STUCK_CALLS}),
    "drift": ("drift", {"max": STUCK_CALLS}),
    "progress": ("progress", {}),
}
# Calls whose outcome is new before the no-progress streak starts: each rotation command's
# first run; drift's first timestamped output.
FRESH_CALLS = {"rotation": len(ROTATION), "drift": 1}
NO_PROGRESS = "session_no_progress"


@pytest.fixture(scope="module")
def beyond(real_gateway, tmp_path_factory):
    """``(finished runs, OpenClaw evidence per key, replayed sessions by id)``."""
    runs = run_sessions(real_gateway, RUNS, "beyond", RUN_DEADLINE_S)
    evidence = loglines.wait_for_evidence(
        real_gateway.log_path, real_gateway.agent_db,
        {run.key: run.session.session_id for run in runs.values()})
    replayed = replay_sessions(real_gateway, tmp_path_factory.mktemp("beyond"))
    return runs, evidence, replayed


@pytest.mark.parametrize("name", ["rotation", "drift"])
def test_stuck_session_is_critical_for_clawwatch_only(beyond, name):
    runs, evidence, replayed = beyond
    run = runs[name]
    found = evidence[run.key]
    assert run.end["phase"] == "end", f"{name} did not run to its own end: {run.end}"
    assert run.session.tool_calls == STUCK_CALLS, run.session
    assert not found.problems, f"OpenClaw's log and transcript do not pair up: {found.problems}"
    assert found.critical_lines() == [], f"OpenClaw logged a critical loop for {name}"
    assert found.vetoed_calls() == [], f"OpenClaw vetoed calls of {name}"

    session = replayed[run.session.session_id]
    fresh = FRESH_CALLS[name]
    no_progress = [(f["level"], f["count"], f["at_call"]) for f in session["findings"]
                   if f["detector"] == NO_PROGRESS]
    assert no_progress == [("warning", 10, fresh + 10), ("critical", 20, fresh + 20)], (
        f"{name}: {NO_PROGRESS} findings {no_progress}; all: {session['findings']}")
    expected = sorted(e.row() for e in found.expected)
    got = sorted(finding_rows(session, PARITY_DETECTORS))
    assert got == expected, f"{name}: parity findings {got}, OpenClaw's {expected}"


def test_session_making_progress_is_left_alone_by_both(beyond):
    runs, evidence, replayed = beyond
    run = runs["progress"]
    found = evidence[run.key]
    assert run.end["phase"] == "end", f"progress run did not finish: {run.end}"
    assert run.session.tools == {"exec": PROGRESS_STEPS}, run.session
    assert found.actions == [] and found.lines == [], (
        f"OpenClaw logged loop lines for the progress run: {found.lines[:3]}")
    assert found.vetoed_calls() == [] and found.warned_calls() == []

    findings = replayed[run.session.session_id]["findings"]
    loops = [f for f in findings if f["detector"] in (*PARITY_DETECTORS, NO_PROGRESS)]
    assert loops == [], f"loop findings on a session making progress: {loops}"
    assert findings == [], f"findings on a healthy session with no budget configured: {findings}"

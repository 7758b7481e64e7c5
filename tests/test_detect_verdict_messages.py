"""A ``Verdict``'s message, made when read, is OpenClaw 2026.9.6's text for its detector and
level (``detectToolCallLoop`` in the gateway's built code), word for word."""

from __future__ import annotations

import pytest

from monitor.detect.loopcore import Verdict

CASES = [
    (Verdict("unknown_tool_repeat", "critical", 10, "exec", "k", detail="frob"),
     "CRITICAL: attempted unavailable tool frob 10 times. Stop retrying that missing tool "
     "and answer without it."),
    (Verdict("global_circuit_breaker", "critical", 30, "exec", "k"),
     "CRITICAL: exec repeated identical no-progress outcomes 30 times. Session execution "
     "blocked by global circuit breaker to prevent runaway loops."),
    (Verdict("known_poll_no_progress", "critical", 20, "process", "k"),
     "CRITICAL: Called process with identical arguments and no progress 20 times. This "
     "appears to be a stuck polling loop. Session execution blocked to prevent resource "
     "waste."),
    (Verdict("known_poll_no_progress", "warning", 10, "process", "k"),
     "WARNING: You have called process 10 times with identical arguments and no progress. "
     "Stop polling and either (1) increase wait time between checks, or (2) report the task "
     "as failed if the process is stuck."),
    (Verdict("ping_pong", "critical", 20, "read", "k", "read"),
     "CRITICAL: You are alternating between repeated tool-call patterns (20 consecutive "
     "calls) with no progress. This appears to be a stuck ping-pong loop. Session execution "
     "blocked to prevent resource waste."),
    (Verdict("ping_pong", "warning", 11, "read", "k", "read"),
     "WARNING: You are alternating between repeated tool-call patterns (11 consecutive "
     "calls). This looks like a ping-pong loop; stop retrying and report the task as "
     "failed."),
    (Verdict("generic_repeat", "critical", 20, "exec", "k"),
     "CRITICAL: Called exec with identical outcomes 20 times. Session execution blocked to "
     "prevent runaway loops."),
    (Verdict("argument_churn", "warning", 12, "exec", "k", detail=3),
     "WARNING: exec has cycled through 3 repeated argument patterns with the same stable "
     "outcome 12 times. Continued churn is treated as stalled run activity, but this tool "
     "call remains allowed."),
    (Verdict("generic_repeat", "warning", 10, "exec", "k"),
     "WARNING: You have called exec 10 times with identical arguments. If this is not "
     "making progress, stop retrying and report the task as failed."),
]


@pytest.mark.parametrize(("verdict", "text"), CASES,
                         ids=[f"{v.detector}-{v.level}" for v, _ in CASES])
def test_each_verdict_says_what_openclaw_says(verdict, text):
    assert verdict.message == text

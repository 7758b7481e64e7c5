"""The gates on OpenClaw's exec-failure masks skip a regex only where it cannot match: the
masked output equals running every regex in order over the whole output."""

from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from monitor.detect.exec_failure_masks import _VOLATILE_EXEC_FAILURE, mask_exec_output

PIECES = [
    "2026-09-06T12:34:56.789Z", "2026-09-06 12:34:56+02:00", "12:34:56", "1:02:03.5",
    "attempt 3", "ATTEMPT#4", "Retry: 12", "retry\u00a09", "attempts 2", "pid 4242",
    "PPID=17", "Pid:\u20039", "12 ms", "3\u00a0s", "5 Seconds", "1.5 MINUTES", "7h", "2 hours",
    "10us", "4 ns", "9\u3000ms", "x", "_", "é", "\u212a", "\u0130", "#", "-", ":", ".", " ",
    "\t", "\n", "0", "9", "s", "S", "m", "h", "n", "u",
]
separators = st.sampled_from(["", " ", "\n", "-", "_", ":", "a", "0", "é", "\u00a0"])
outputs = st.one_of(
    st.lists(st.tuples(st.sampled_from(PIECES), separators), max_size=12).map(
        lambda parts: "".join(a + b for a, b in parts)),
    st.text(alphabet="0123456789 :.-#attemptpidrysSmMhHnNuU\u00a0\u2009é\n", max_size=80),
    st.text(max_size=80),
)


def every_regex_in_order(output: str) -> str:
    for pattern, _gate in _VOLATILE_EXEC_FAILURE:
        output = pattern.sub("#", output)
    return output


@settings(max_examples=1500, deadline=None, database=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(output=outputs)
@example(output="failed after 3 attempt 4 retry 5 at 2026-09-06T12:34:56Z pid 7 took 12 ms")
@example(output="took 3\u2009ms, RETRY 2, PID=9")
def test_gated_masks_equal_every_regex_in_order(output):
    assert mask_exec_output(output) == every_regex_in_order(output)
    for pattern, may_match in _VOLATILE_EXEC_FAILURE:
        if pattern.search(output):
            assert may_match(output), pattern.pattern


def test_an_output_without_volatile_values_is_left_as_it_is():
    output = "error: no such file or directory: build/output.log\n" * 100
    assert mask_exec_output(output) == output
    assert mask_exec_output("Retry 3 at 12:00:01, pid 4, 250ms") == "# at #, #, #"

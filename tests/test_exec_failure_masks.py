"""The gates on OpenClaw's exec-failure masks skip a regex only where it cannot match: the
masked output equals running every regex in order over the whole output."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
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


# What OpenClaw 2026.9.6's masks (``/giu``: ``ſ`` is an ``s``, and it and the Kelvin sign
# are word characters) make of outputs holding the characters JavaScript folds.
JS_FOLDING = {
    "took 5\u017f": "took #",
    "\u017f5ms x": "\u017f5ms x",
    "\u212a5ms": "\u212a5ms",
    "5ms\u212a": "5ms\u212a",
    "retry\u017f 3": "retry\u017f 3",
    "\u017fattempt 3": "\u017fattempt 3",
    "attempt 3\u017f": "#\u017f",
    "2026-01-01\u017f10:00:00": "2026-01-##",
    "pid 5\u017f": "pid #",
    "\u212apid 5": "\u212apid 5",
    "p\u0131d 5": "p\u0131d 5",
    "P\u0130D 5": "P\u0130D 5",
    "3 MINUTE\u017f": "#",
    "\u0663ms": "\u0663ms",
}


def test_the_masks_fold_case_as_javascript_does():
    """A failure whose output differs only where JavaScript and Python disagree on a
    letter's case or on what a word character is gets OpenClaw's identity."""
    assert {output: mask_exec_output(output) for output in JS_FOLDING} == JS_FOLDING


DIST = Path("/root/.cache/clawwatch/oc-2026.9.6/openclaw/node_modules/openclaw/dist")


@pytest.mark.skipif(shutil.which("node") is None or not DIST.is_dir(),
                    reason="needs node and OpenClaw 2026.9.6's dist")
def test_the_masks_equal_openclaws_own():
    """OpenClaw's ``VOLATILE_EXEC_FAILURE_PATTERNS``, read from its dist and run by node,
    over outputs built to tell the two regex dialects apart."""
    source = next(DIST.glob("tool-loop-detection-*.mjs")).read_text()
    patterns = re.search(r"const VOLATILE_EXEC_FAILURE_PATTERNS = (\[.*?\n\]);", source,
                         re.DOTALL)[1]
    pieces = ["5", "12 ms", "\u017f", "\u212a", "\u0131", "\u0130", "s", "S", "pid", "PID",
              "attempt", "Retry", " ", "\u00a0", "_", "\u0663", "2026-01-01", "T", "10:00:00",
              "ms", "MS", "hour", "\u017feconds", "#", ":", "x", "\n"]
    outputs = sorted({"".join(pieces[(seed * 7 + i * 13) % len(pieces)]
                              for i in range(seed % 5 + 1))
                      + pieces[seed % len(pieces)] for seed in range(3000)}) + list(JS_FOLDING)
    script = (f"const P = {patterns};\n"
              "const outputs = JSON.parse(require('fs').readFileSync(0, 'utf8'));\n"
              "process.stdout.write(JSON.stringify(outputs.map((o) => "
              "P.reduce((text, p) => text.replace(p, '#'), o))));\n")
    done = subprocess.run(["node", "-e", script], input=json.dumps(outputs), text=True,
                          capture_output=True, timeout=60, check=True)
    expected = json.loads(done.stdout)
    assert [mask_exec_output(output) for output in outputs] == expected

"""Call and outcome hashes must equal OpenClaw 2026.9.6's, byte for byte.

``fixtures/oc-outcome-vectors.json`` was produced by running the real
``recordToolCallOutcome``/``hashToolCall`` of the installed
``openclaw@2026.9.6`` (``dist/tool-loop-detection-*.mjs``) under Node on each
case; the expected ``stableStringify`` texts below come from the same package.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_detect_support import FIXTURES

from monitor.detect import outcomes, remembered_digests
from monitor.detect.exec_failure_masks import mask_exec_output
from monitor.detect.exec_outcomes import exec_failure_identity
from monitor.detect.jsstable import (
    UNDEFINED,
    js_number,
    js_trim,
    sha256_hex,
    stable_digest,
    stable_stringify,
)
from monitor.detect.outcome_digests import _canonical_markers, digest_outcome, digest_outcome_afresh
from monitor.detect.outcomes import outcome_of, strip_loop_note, unknown_tool_name
from monitor.detect.tool_call_hashing import (
    hash_tool_call,
    is_known_poll,
    is_not_admitted,
    normalize_tool_name,
    tool_params,
)

VECTORS = json.loads((FIXTURES / "oc-outcome-vectors.json").read_text())


@pytest.mark.parametrize("case", VECTORS, ids=[c["name"] for c in VECTORS])
def test_outcome_hash_matches_openclaw(case):
    expected = case["expected"]
    assert hash_tool_call(case["tool"], case["params"]) == expected["argsHash"]
    if "error" in case:
        outcome = outcome_of(case["tool"], case["params"], is_error=True, details={},
                             text=case["error"], is_veto=False)
    else:
        result = case["result"]
        details = result.get("details")
        text = "\n".join(p["text"] for p in result["content"] if p.get("type") == "text")
        outcome = outcome_of(case["tool"], case["params"], is_error=False, details=details,
                             text=text, is_veto=isinstance(details, dict)
                             and details.get("deniedReason") == "tool-loop")
    assert outcome.result_hash == expected["resultHash"]
    assert outcome.kind == expected["kind"]
    assert outcome.failure_identity == expected["failureIdentity"]
    assert outcome.no_progress == expected["noProgress"]
    assert outcome.unknown_tool_name == expected["unknown"]


def test_terminal_failure_identity_masks_times_attempts_pids_durations():
    by_name = {c["name"]: c["expected"] for c in VECTORS}
    first, second = by_name["exec_fail_time"], by_name["exec_fail_time2"]
    assert first["resultHash"] != second["resultHash"]
    assert first["failureIdentity"] == second["failureIdentity"]


def test_untrusted_content_marker_ids_do_not_change_the_hash():
    by_name = {c["name"]: c["expected"] for c in VECTORS}
    assert by_name["marker"]["resultHash"] == by_name["marker2"]["resultHash"]


@pytest.mark.parametrize(("value", "expected"), [
    ({"b": 1, "a": 2}, '{"a":2,"b":1}'),
    (None, "null"),
    (UNDEFINED, "undefined"),
    ({"x": 1.0, "y": 1e21, "z": 1e-7, "w": 123456789012345678901234, "v": 0.000001,
      "u": -0.0, "t": 1.5e300, "s": 12345678901234567890},
     '{"s":12345678901234567000,"t":1.5e+300,"u":0,"v":0.000001,"w":1.2345678901234569e+23,'
     '"x":1,"y":1e+21,"z":1e-7}'),
    ({"é": 1, "e": 2, "\U0001F600": 3, "\uffff": 4, "Z": 5, "a": [1, "two", {"k": None}]},
     '{"Z":5,"a":[1,"two",{"k":null}],"e":2,"é":1,"\U0001F600":3,"\uffff":4}'),
    ("line\nbreak\t\x01\x7f\u2028 \"q\" \\ </script>",
     '"line\\nbreak\\t\\u0001\x7f\u2028 \\"q\\" \\\\ </script>"'),
    ([1e20, 1e-6, 100, 0.1, 2.5e-7, 123e-20, 5e-324, 1.7976931348623157e308],
     "[100000000000000000000,0.000001,100,0.1,2.5e-7,1.23e-18,5e-324,1.7976931348623157e+308]"),
    ({"n": float("nan"), "i": float("-inf")}, '{"i":"-Infinity","n":"NaN"}'),
])
def test_stable_stringify_matches_javascript(value, expected):
    assert stable_stringify(value) == expected


def test_real_transcript_action_keys():
    """The actionKey OpenClaw wrote into its veto equals our call hash."""
    assert hash_tool_call("exec", {"command": "ls -la /tmp/openclaw-lab-nowhere"}) == (
        "exec:b7f339097891f0047af5d1369f4e8848aed719c72d6a68a84176100d680c26c6")
    assert hash_tool_call("read", {"path": "/etc/hostname"}) == (
        "read:3516df63c022bf5a500bc448686321d2261e9dd4b5b1fdd786e24af263066641")


def test_key_order_does_not_matter_but_values_do():
    a = hash_tool_call("exec", {"command": "ls", "timeout": 5, "env": {"B": "1", "A": "2"}})
    b = hash_tool_call("exec", {"env": {"A": "2", "B": "1"}, "timeout": 5, "command": "ls"})
    c = hash_tool_call("exec", {"command": "ls", "timeout": 5.0, "env": {"A": "2", "B": "1"}})
    d = hash_tool_call("exec", {"command": "ls", "timeout": "5", "env": {"A": "2", "B": "1"}})
    assert a == b == c
    assert d != a


def test_null_and_missing_and_empty_arguments_hash_differently():
    missing = hash_tool_call("exec", tool_params(None, has_arguments=False))
    null = hash_tool_call("exec", tool_params(None, has_arguments=True))
    empty = hash_tool_call("exec", {})
    nested_null = hash_tool_call("exec", {"cwd": None})
    assert len({missing, null, empty, nested_null}) == 4
    assert stable_stringify(tool_params(None, False)) == "undefined"


def test_tool_names_are_normalised_like_openclaw():
    assert normalize_tool_name(" Exec ") == "exec"
    assert normalize_tool_name("") == "tool"
    assert normalize_tool_name(None) == "tool"
    assert normalize_tool_name("Bad name!") == "bad name!"


def test_js_number_and_trim_edge_cases():
    assert js_number(2**53) == "9007199254740992"
    assert js_number(2**53 + 1) == "9007199254740992"
    assert js_number(-1.5e-7) == "-1.5e-7"
    assert js_trim("\ufeff x \x1c") == "x \x1c"


_NOTE_START = "[System note: Tool-loop warning after "
_NOTE_END = " repeated calls. Change your approach or stop if you are not making progress.]"


@settings(max_examples=300, deadline=None)
@given(before=st.sampled_from(["", "out", "out\n", "\n\n", _NOTE_START + "3" + _NOTE_END]),
       start=st.sampled_from(["", "\n", "x"]), count=st.sampled_from(["10", "", "1x", "999"]),
       end=st.sampled_from([_NOTE_END, _NOTE_END[:-1], _NOTE_END + "\n", " repeated calls."]),
       after=st.sampled_from(["", " ", "more"]))
def test_the_loop_note_is_stripped_exactly_where_its_regex_matches(before, start, count, end,
                                                                   after) -> None:
    for text in (before + start + _NOTE_START + count + end + after, before + end):
        assert strip_loop_note(text) == outcomes._LOOP_NOTE.sub("", text)


def test_loop_warning_note_is_removed_before_hashing():
    note = ("[System note: Tool-loop warning after 10 repeated calls. Change your approach or "
            "stop if you are not making progress.]")
    assert strip_loop_note("out\n" + note) == "out"
    assert strip_loop_note(note) == ""
    plain = outcome_of("read", {}, is_error=False, details={"k": 1}, text="out", is_veto=False)
    noted = outcome_of("read", {}, is_error=False, details={"k": 1}, text="out\n" + note,
                       is_veto=False)
    assert plain == noted


def test_unknown_tool_and_not_admitted_results():
    assert unknown_tool_name('Unknown tool: "Frob_It"') == "frob_it"
    assert unknown_tool_name("tool frobnicate is not available") == "frobnicate"
    assert unknown_tool_name("file not found") is None
    assert is_not_admitted("frobnicate_widget", "Tool frobnicate_widget not found")
    assert is_not_admitted("exec", 'Validation failed for tool "exec":\n  - /command: required')
    assert not is_not_admitted("exec", "Tool exec failed")


def test_known_poll_calls():
    assert is_known_poll("process", {"action": "poll", "sessionId": "x"})
    assert is_known_poll("process", {"action": "log"})
    assert is_known_poll("command_status", None)
    assert not is_known_poll("process", {"action": "kill"})
    assert not is_known_poll("exec", {"action": "poll"})


MARKER = "<<<EXTERNAL_UNTRUSTED_CONTENT"
_strings = st.one_of(st.text(max_size=30), st.sampled_from([
    f'{MARKER} id="0123456789abcdef">>>\nbody\n<<<END_EXTERNAL_UNTRUSTED_CONTENT '
    f'id="0123456789abcdef">>>', MARKER, "\ud800 lone", "é\u2028\x00\x1f\"\\", "B", "a", "_"]))
_json = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2**60, 2**60), st.floats(), _strings),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(_strings, inner, max_size=4)), max_leaves=12)


@settings(max_examples=800, deadline=None, database=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(value=_json)
def test_the_msgspec_digest_equals_the_hash_of_stable_stringify(value):
    """``stable_digest`` (msgspec for common values) hashes exactly ``stable_stringify``'s
    text: with and without the untrusted-marker normalising, surrogates, floats and big
    integers falling back to it."""
    assert stable_digest(value) == sha256_hex(stable_stringify(value))
    assert stable_digest(value, _canonical_markers, MARKER) == sha256_hex(
        stable_stringify(value, _canonical_markers, MARKER))


def test_values_python_finds_equal_are_remembered_apart():
    values = [{"exitCode": 1}, {"exitCode": True}, {"exitCode": 0}, {"exitCode": False},
              {"exitCode": None}, {"exitCode": UNDEFINED}, "1", "true"]
    for value in values + values:
        assert digest_outcome(value) == digest_outcome_afresh(value), value


def test_a_remembered_failure_identity_is_masked_as_a_fresh_one():
    details = {"status": "failed", "exitCode": 2}
    outputs = ["ls: /x: missing at 14:05:05, pid 42", "ls: /x: missing at 14:06:01, pid 43",
               "ls: /y: missing"]
    identities = [exec_failure_identity(details, 2, output) for output in outputs + outputs]
    assert identities == [digest_outcome_afresh({"status": "failed", "exitCode": 2,
                                                 "timedOut": False,
                                                 "output": mask_exec_output(output)})
                          for output in outputs + outputs]
    assert identities[0] == identities[1] != identities[2]


def test_only_small_flat_values_are_remembered():
    remembered_digests._REMEMBERED.clear()
    large = [{f"k{n}": n for n in range(remembered_digests.REMEMBERED_ENTRIES + 1)},
             {"a": "x" * 1500, "b": "y" * 1500}, {"a": {"nested": 1}}, {"a": 1.5},
             "z" * (remembered_digests.REMEMBERED_CHARS + 1)]
    for value in large:
        assert digest_outcome(value) == digest_outcome_afresh(value)
    assert not remembered_digests._REMEMBERED
    for n in range(remembered_digests.REMEMBERED_DIGESTS * 2):
        digest_outcome({"output": f"line {n}"})
    assert 0 < len(remembered_digests._REMEMBERED) <= remembered_digests.REMEMBERED_DIGESTS


MARKED = (f'{MARKER} id="0123456789abcdef">>>\nbody\n<<<END_EXTERNAL_UNTRUSTED_CONTENT '
          f'id="0123456789abcdef">>>')
FLAT_STRINGS = st.sampled_from(["", "1", "true", "x" * 3000, MARKED])
FLAT_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2, 2), st.just(UNDEFINED),
                         st.floats(allow_nan=True, allow_infinity=True), FLAT_STRINGS)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.dictionaries(st.sampled_from(["status", "exitCode", "output"]),
                                 FLAT_SCALARS, max_size=3), FLAT_STRINGS))
def test_remembered_digests_and_call_hashes_are_the_fresh_ones(value):
    for _ in range(2):                                          # the second time remembered
        assert digest_outcome(value) == digest_outcome_afresh(value)
        assert hash_tool_call("exec", value) == f"exec:{stable_digest(value)}"

"""Gateway log lines: parsing real tslog records and joining bare lines to their run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.sources import log_line_forms
from monitor.sources.gateway_log import GatewayLogSource, rotated_siblings
from monitor.sources.log_line_forms import MalformedLogLine, parse_log_line

SAMPLE = Path(__file__).parent / "fixtures" / "gateway-log.sample.jsonl"


def test_every_real_sample_line_parses_with_level_and_subsystem():
    notices = [parse_log_line(line) for line in SAMPLE.read_bytes().splitlines() if line.strip()]
    assert len(notices) == 25
    assert all(n.level in {"DEBUG", "INFO", "WARN", "ERROR"} for n in notices)
    assert {"gateway", "diagnostic", "agents/loop-detection"} <= {n.subsystem for n in notices}
    turn = next(n for n in notices if n.message.startswith("session turn created"))
    assert turn.run_id and turn.session_id and turn.session_key.startswith("agent:main:")


def test_ids_in_text_and_quoted_values():
    line = {
        "0": '{"subsystem":"diagnostic"}',
        "1": 'tool loop: sessionId=S1 sessionKey=agent:main:x tool=exec level=critical '
             'action=block detector=generic_repeat count=20 message="CRITICAL: stop"',
        "_meta": {"logLevelName": "ERROR"}, "time": "2026-11-29T13:15:58.183+00:00",
    }
    notice = parse_log_line(json.dumps(line).encode())
    assert notice.session_id == "S1" and notice.session_key == "agent:main:x"
    assert notice.fields["detector"] == "generic_repeat" and notice.fields["count"] == "20"
    assert notice.level == "ERROR" and notice.ts == pytest.approx(1795958158.183)


def test_structured_object_and_message_in_second_position():
    line = {"0": '{"subsystem":"agent/embedded"}',
            "1": {"event": "embedded_run_agent_end", "runId": "R9", "isError": True},
            "2": "embedded run agent end", "_meta": {"logLevelName": "WARN"}}
    notice = parse_log_line(json.dumps(line).encode())
    assert notice.message == "embedded run agent end"
    assert notice.run_id == "R9" and notice.fields["event"] == "embedded_run_agent_end"


@pytest.mark.parametrize("raw,reason", [
    (b"{not json", "invalid JSON"),
    (b"\xff\xfe{}", "invalid UTF-8"),
    (b'{"0":"a\x00b"}', "NUL"),
    (b"[1,2]", "not a JSON object"),
])
def test_malformed_lines_say_why(raw, reason):
    with pytest.raises(MalformedLogLine, match=reason):
        parse_log_line(raw)


def test_bare_loop_warning_is_joined_to_its_run_through_trace_id(tmp_path):
    log = tmp_path / "openclaw.log"
    lines = [
        {"0": '{"subsystem":"agent/embedded"}', "1": "embedded run start: runId=R1 sessionId=S1 "
         "provider=fake", "_meta": {"logLevelName": "DEBUG"}, "traceId": "T1"},
        {"0": '{"subsystem":"agents/loop-detection"}', "1": "Loop warning: exec called 10 times "
         "with identical arguments", "_meta": {"logLevelName": "WARN"}, "traceId": "T1"},
        {"0": '{"subsystem":"agents/loop-detection"}', "1": "Loop warning: other trace",
         "_meta": {"logLevelName": "WARN"}, "traceId": "T2"},
    ]
    log.write_text("".join(json.dumps(line) + "\n" for line in lines) + "garbage\n")
    source = GatewayLogSource(str(log))
    out = source.poll()
    notices = [n for n in out if hasattr(n, "trace_id")]
    assert [n.run_id for n in notices] == ["R1", "R1", None]
    assert notices[1].session_id == "S1"
    assert source.events == 3 and source.errors == 1
    assert source.error_samples[0].where == f"offset {log.stat().st_size - len('garbage') - 1}"


def test_numbered_rotations_are_found_oldest_first(tmp_path):
    for name in ("openclaw-2026-11-29.log", "openclaw-2026-11-29.1.log",
                 "openclaw-2026-11-29.2.log", "openclaw-2026-11-28.log"):
        (tmp_path / name).write_text("")
    found = rotated_siblings(str(tmp_path / "openclaw-2026-11-29.log"))
    assert [Path(p).name for p in found] == ["openclaw-2026-11-29.2.log",
                                             "openclaw-2026-11-29.1.log"]


def test_each_lines_own_bindings_name_its_subsystem_with_few_kept():
    def line(bindings: str) -> bytes:
        return json.dumps({"0": bindings, "1": "hello", "_meta": {"logLevelName": "INFO"},
                           "time": "2026-07-12T21:12:28.674+02:00"}).encode()

    names = [f"gateway/s{n}" for n in range(log_line_forms.BINDINGS_KEPT * 2)]
    for _ in range(2):
        for name in names:
            assert parse_log_line(line(json.dumps({"subsystem": name}))).subsystem == name
        assert parse_log_line(line('{"subsystem": 7}')).subsystem is None
        assert parse_log_line(line("{not json")).subsystem is None
    assert len(log_line_forms._SUBSYSTEM_OF_BINDINGS) <= log_line_forms.BINDINGS_KEPT
    long = json.dumps({"subsystem": "x" * log_line_forms.BINDINGS_KEPT_CHARS})
    assert parse_log_line(line(long)).subsystem == "x" * log_line_forms.BINDINGS_KEPT_CHARS
    assert long not in log_line_forms._SUBSYSTEM_OF_BINDINGS


def _leading_fields_pair_by_pair(message: str) -> dict[str, str]:
    """``leading_fields`` as specified: after the label, one ``PAIR_RE`` match at a time
    while they follow each other, the first value of each id name kept."""
    label = log_line_forms.LABEL_RE.match(message)
    fields: dict[str, str] = {}
    position = label.end() if label else None
    while position is not None and (pair := log_line_forms.PAIR_RE.match(message, position)):
        if pair[1] in log_line_forms.ID_FIELD_NAMES:
            fields.setdefault(pair[1], pair[2].strip('"'))
        position = pair.end()
    return fields


_ID_NAMES = st.sampled_from(["runId", "sessionId", "tool", "count", "x", "run-id"])
_VALUES = st.sampled_from(["1", "a=b", '"a b"', '"', '"x', "", "é", "v\"w"])
_WORDS = st.one_of(st.builds("{}={}".format, _ID_NAMES, _VALUES),
                   st.sampled_from(["x", "=", "a:", ": ", "Loop warning", '"q"', "é"]))


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.tuples(_WORDS, st.sampled_from([" ", "  ", "\t", "\n", ""])),
                max_size=8).map(lambda words: "".join(w + gap for w, gap in words)))
def test_a_messages_ids_are_its_leading_pairs_read_one_by_one(message):
    for text in (message, f"tool loop: {message}"):
        assert log_line_forms.leading_fields(text) == _leading_fields_pair_by_pair(text)

"""The typed read of a gateway file-log line (``log_line_tslog``) gives what the plain JSON
read gives, line for line: the same notice, or the same error."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from monitor.sources import log_line_forms
from monitor.sources.log_line_forms import MalformedLogLine, parse_log_line
from monitor.sources.log_line_tslog import decode_tslog

MESSAGES = st.sampled_from([
    "session turn created: runId=r1 sessionId=s1 sessionKey=agent:main:a agentId=main",
    "tool loop: sessionId=unknown sessionKey=agent:main:b tool=exec level=critical "
    'action=block detector=generic_repeat count=20 message="CRITICAL: stop"',
    "Loop warning", "", "plain text", "x: runId=", '{"a":1}'])
BINDINGS = st.sampled_from(['{"subsystem":"diagnostic"}', '{"subsystem":"agents/tools"}',
                            '{"module":"x"}', "{not json", "gateway", "{}"])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                    st.text(max_size=12), MESSAGES, BINDINGS,
                    st.sampled_from(["2026-11-29T13:15:58.183+00:00", "2026-11-29T13:15:58Z",
                                     "yesterday"]))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3),
    st.dictionaries(st.sampled_from(["runId", "sessionId", "sessionKey", "agentId", "event",
                                     "logLevelName", "date", "x"]), inner, max_size=4)),
    max_leaves=8)
KEYS = st.sampled_from(["0", "1", "2", "3", "4", "_meta", "time", "message", "traceId",
                        "session_id", "agent_id", "MESSAGE", "level", "subsystem", "PRIORITY",
                        "hostname"])
META = st.one_of(VALUES, st.fixed_dictionaries({}, optional={
    "logLevelName": st.one_of(st.sampled_from(["INFO", "ERROR", "warn"]), VALUES),
    "date": st.one_of(st.sampled_from(["2026-11-29T13:15:58.183Z"]), VALUES),
    "name": VALUES}))


@st.composite
def log_lines(draw) -> bytes:
    """A JSON object's text with keys a tslog line (or another form) may have, some given
    twice, in any order."""
    pairs = draw(st.lists(st.tuples(KEYS, VALUES), max_size=8))
    if draw(st.booleans()):
        pairs.append(("_meta", draw(META)))
    if draw(st.booleans()):
        pairs.insert(0, ("0", draw(BINDINGS)))
        pairs.insert(1, ("1", draw(MESSAGES)))
    order = draw(st.permutations(range(len(pairs))))
    members = [json.dumps(pairs[i][0]) + ":" + json.dumps(pairs[i][1],
                                                          ensure_ascii=draw(st.booleans()))
               for i in order]
    return ("{" + ",".join(members) + "}").encode()


def plain_read(data: bytes, monkeypatch) -> object:
    with monkeypatch.context() as patched:
        patched.setattr(log_line_forms, "decode_tslog", lambda text: None)
        return outcome(data)


def outcome(data: bytes) -> object:
    try:
        return parse_log_line(data, "log@1")
    except MalformedLogLine as exc:
        return ("error", str(exc))


@settings(max_examples=400, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=log_lines())
def test_the_typed_read_gives_what_the_plain_read_gives(data, monkeypatch):
    assert outcome(data) == plain_read(data, monkeypatch)


@pytest.mark.parametrize("data", [
    b'{"0":"{\\"subsystem\\":\\"diagnostic\\"}","1":"a","2":"b","3":"c","4":"d","_meta":{}}',
    b'{"_meta":{"logLevelName":"ERROR"},"0":"x","0":"{\\"subsystem\\":\\"gateway\\"}"}',
    b'{"\\u0030":"{\\"subsystem\\":\\"gateway\\"}","\\u0031":"hi","_meta":{}}',
    b'{"_meta":{},"_meta":null,"1":"hi"}',
    b'{"_meta":{},"hostname":"h"}',
    b'{"_meta":{},"message":null}',
    b'{"0":"text","1":{"sessionId":"s"},"_meta":{"date":1795958158183}}',
    b'{"0":"{\\"subsystem\\":\\"gateway\\"}","1":' + b"[" * 5000 + b"]" * 5000
    + b',"_meta":{}}',
])
def test_the_lines_that_could_tell_them_apart_read_alike(data, monkeypatch):
    assert outcome(data) == plain_read(data, monkeypatch)


def test_a_line_past_three_arguments_or_without_meta_is_read_plain():
    assert decode_tslog('{"0":"a","1":"b","2":"c","3":"d","_meta":{}}') is None
    assert decode_tslog('{"0":"a","1":"b"}') is None
    assert decode_tslog('{"_meta":[]}') is None
    assert decode_tslog('{"0":"a","1":"b","2":"c","_meta":{}}').positional() == ("a", "b", "c")
    assert decode_tslog('{"0":"a","2":"c","_meta":{}}').positional() == ("a",)

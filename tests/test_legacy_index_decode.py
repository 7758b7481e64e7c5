"""``sessions.json`` decoded entry by entry gives what decoding it whole gave.

The reference below is the whole-file read the index used before: ``untrusted_json`` of the
file, the object entries kept, each field looked up in the entry's dict.
"""

from __future__ import annotations

import json

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor import untrusted_json
from monitor.sources.legacy import LegacySessionsSource
from monitor.sources.legacy_index import index_entries

FIELDS = ("sessionId", "sessionFile", "model", "modelProvider", "status", "lastRunId",
          "activeWriterRunId", "abortedLastRun", "label", "displayName", "updatedAt",
          "inputTokens", "outputTokens", "totalTokens")


def whole_file_entries(data: bytes) -> dict | str:
    try:
        whole = untrusted_json.loads(data)
    except ValueError as exc:
        return f"cannot read the session index: {exc}"
    if not isinstance(whole, dict):
        return "session index is not a JSON object"
    return {key: value for key, value in whole.items() if isinstance(value, dict)}


def shown(value) -> str:
    """A value as the index reads it: a container is never a text, a count or a time, so
    only its type matters (a value past the depth limit is clipped at another level)."""
    return type(value).__name__ if isinstance(value, (list, dict)) else repr(value)


def assert_same(data: bytes) -> None:
    expected = whole_file_entries(data)
    got = index_entries(data)
    if isinstance(expected, str):
        assert got == expected
        return
    assert not isinstance(got, str), got
    assert list(got) == list(expected)
    for key, entry in expected.items():
        for name in FIELDS:
            value = getattr(got[key], name)
            if name in entry:
                assert shown(value) == shown(entry[name]), (key, name)
            else:
                assert value is (msgspec.UNSET if name == "sessionFile" else None), (key, name)


HOSTILE = [
    b'{"k": {"sessionId": "a", "sessionId": "b", "model": "m"}}',
    b'{"k": {"sessionId": "a"}, "k": [1], "j": {"sessionId": "c"}}',
    b'{"k": {"sessionId": "a", "inputTokens": 1e400}}',
    b'{"k": {"sessionId": "a", "totalTokens": NaN, "updatedAt": -Infinity}}',
    b'{"k": {"sessionId": "\\ud800", "label": "x\\udfff"}}',
    b'{"\\ud800": {"sessionId": "a"}}',
    b'{"k": {"sessionId": "a", "model": ' + b"[" * 70 + b"]" * 70 + b"}}",
    b'{"k": {"sessionId": "a", "other": ' + b"[" * 5000 + b"]" * 5000 + b"}}",
    b'{"k": {"sessionId": "a", "sessionFile": ' + b"{\"x\":" * 100 + b"1" + b"}" * 100 + b"}}",
    b'{"k": {"sessionId": "a", "sessionFile": null}, "j": {"sessionFile": "j.jsonl"}}',
    b'{"k": "text", "j": 3, "i": null, "h": {}}',
    b'[{"sessionId": "a"}]',
    b'"sessions"',
    b'{"k": {"sessionId": "a"',
    b"",
    b'\xef\xbb\xbf{"k": {"sessionId": "a"}}',
    b'{"k": {"sessionId": "a", "status": "\xff\xfe"}}',
    b'{"k": {"sessionId": "a", "abortedLastRun": 1, "updatedAt": "2026-12-02T00:00:00Z"}}',
]


def test_hostile_indexes_read_as_the_whole_file_read_them():
    for data in HOSTILE:
        assert_same(data)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                                max_size=3),
    max_leaves=8)
ENTRIES = st.dictionaries(st.sampled_from([*FIELDS, "other", "x"]), JSON_VALUES, max_size=8)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=6), ENTRIES | JSON_VALUES, max_size=5))
def test_generated_indexes_read_as_the_whole_file_read_them(index):
    assert_same(json.dumps(index).encode())


def test_the_source_gives_the_same_records_either_way(tmp_path):
    sessions = tmp_path / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / "sessions.json").write_text(json.dumps({
        "agent:main:a": {"sessionId": "a", "sessionFile": "a.jsonl", "model": "m",
                         "modelProvider": "p", "status": "running", "lastRunId": "r1",
                         "activeWriterRunId": "r2", "abortedLastRun": True,
                         "displayName": "shown", "updatedAt": 1_764_633_600_000,
                         "inputTokens": 10, "outputTokens": 2, "totalTokens": 12,
                         **{f"field{n}": "x" * 20 for n in range(30)}},
        "agent:main:b": {"sessionId": "b", "label": "own", "displayName": "not shown",
                         "inputTokens": -1, "totalTokens": "12"},
        "agent:main:c": {"sessionFile": "c.jsonl"}}))
    source = LegacySessionsSource(str(sessions), "main")
    records = {r.session_id: r for r in source.read_index()}
    assert sorted(records) == ["a", "b"]
    a, b = records["a"], records["b"]
    assert (a.model, a.provider, a.status, a.run_id, a.active_run_id, a.aborted_last_run,
            a.label, a.input_tokens, a.output_tokens, a.total_tokens) == (
        "m", "p", "running", "r1", "r2", True, "shown", 10, 2, 12)
    assert a.updated_at == 1_764_633_600
    assert (b.label, b.aborted_last_run, b.input_tokens, b.total_tokens) == (
        "own", False, None, None)
    assert source._index == {"agent:main:a": {"sessionFile": "a.jsonl"}, "agent:main:b": {},
                             "agent:main:c": {"sessionFile": "c.jsonl"}}


def test_bytes_in_fields_the_index_does_not_read_are_not_checked():
    """Fields the monitor does not read are skipped undecoded, so a byte that is not UTF-8
    there no longer costs every session its index record (read whole, the file was one
    error). In a field it reads, the file is still one error, as before."""
    skipped = index_entries(b'{"k": {"sessionId": "a", "other": "\xff"}}')
    assert not isinstance(skipped, str) and skipped["k"].sessionId == "a"
    read = index_entries(b'{"k": {"sessionId": "a", "model": "\xff"}}')
    assert isinstance(read, str) and read.startswith("cannot read the session index: ")

"""The typed read of a transcript entry (``monitor.sources.transcript_typed``, issue 11 item 1).

It gives exactly the events of the full read (``parse_entry`` of ``untrusted_json.loads``),
or None, and then the entry is read the full way: proven over the fuzz strategies, as a
legacy line (text) and as a SQLite row (bytes), over every line of the OpenClaw fixtures,
and end to end: both eras of the generated state dirs fold into the same report, sources,
sessions and records whether the typed read is used or not.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from test_fuzz import entries, transcript_lines
from test_transcript_light import _fold, strict_json, without_read_time

from monitor import untrusted_json
from monitor.sources import legacy, sqlite_event_rows
from monitor.sources.transcript import parse_entry
from monitor.sources.transcript_typed import typed_events

FIXTURES = Path(__file__).parent / "fixtures"
ORIGIN = "t.jsonl@0"


def full_read(data: str | bytes) -> list | None:
    """The full read's events, or None where it reports the entry as an error."""
    try:
        return parse_entry(untrusted_json.loads(data), "sid", ORIGIN)
    except ValueError:
        return None


def assert_typed_read_agrees(data: str | bytes) -> list | None:
    typed = typed_events(data, "sid", ORIGIN)
    if typed is not None:
        full = full_read(data)
        assert full is not None, "read typed, yet the full read reports it"
        assert typed == full
    return typed


@settings(max_examples=800, deadline=None)
@given(transcript_lines)
@example(b'{"type":"message","message":{"role":"user"},"message":null}')
@example(b'{"type":"message","type":"custom","message":{"role":"assistant"}}')
@example(b'{"type":"message","message":{"role":"toolResult","details":'
         b'{"deniedReason":"tool-loop"}}}')
@example(b'{"type":"message","message":{"role":"assistant","content":[{"type":"toolCall",'
         b'"arguments":null,"input":{"a":1}},{"type":"tool_use","input":[1]}]}}')
@example(b'{"type":"message","message":{"role":"assistant","content":[{"type":"toolCall"},'
         b'"text"]}}')
@example(b'{"type":"custom","x":' + b"[" * 70 + b"]" * 70 + b"}")
@example(b'{"type":"message","message":{"role":"toolResult","details":{"a":'
         + b"[" * 70 + b"]" * 70 + b"}}}")
@example(b'{"type":"message","message":{"role":"user","content":"\xff"}}')
@example(b'{"type":"custom","skipped":"\xff"}')
def test_a_line_read_typed_gives_the_full_read_events(line):
    assert_typed_read_agrees(line)
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return
    assert_typed_read_agrees(text)


@settings(max_examples=400, deadline=None)
@given(entries)
def test_plain_entries_of_the_kinds_it_takes_are_read_typed(entry):
    """The typed read is not only ever None: a shallow message entry whose values are of
    the types it declares, or an ignored one, is read typed."""
    line = json.dumps(entry)
    typed = assert_typed_read_agrees(line)
    shallow = (strict_json(line.encode()) and not untrusted_json.may_nest_too_deep(line)
               and len(line) <= untrusted_json.COUNT_BRACKETS_UP_TO)
    if shallow and _of_the_kinds_it_takes(entry):
        assert typed is not None


def _of_the_kinds_it_takes(entry: dict) -> bool:
    message = entry.get("message")
    if entry["type"] in ("custom", "custom_message", "label", "thinking_level_change"):
        return message is None
    if entry["type"] != "message" or not isinstance(message, dict):
        return False
    content, details = message.get("content"), message.get("details")
    if isinstance(details, dict) and details.get("deniedReason") == "tool-loop":
        return False
    if isinstance(content, list):
        return all(isinstance(item, dict) for item in content)
    return content is None or isinstance(content, str)


def test_every_line_of_the_openclaw_fixtures_reads_typed_as_in_full():
    lines = [line for kind in ("drift", "hammer", "pingpong", "poll", "unknown-tool")
             for line in (FIXTURES / f"oc-{kind}.jsonl").read_text().splitlines()]
    lines += [json.dumps(row["event"]) for row in map(
        json.loads, (FIXTURES / "transcript.sample.jsonl").read_text().splitlines())
        if row.get("table") == "transcript_events" and "event" in row]
    assert len(lines) > 250
    for line in lines:
        if assert_typed_read_agrees(line) is None:     # only what the full read must make
            entry = json.loads(line)
            veto = entry["message"]["details"]["deniedReason"] == "tool-loop" \
                if entry["type"] == "message" else False
            assert entry["type"] == "session" or veto, line


@pytest.mark.parametrize("era", ["legacy", "sqlite"])
def test_a_monitor_folds_the_same_with_and_without_the_typed_read(generated_state_dirs, era,
                                                                    monkeypatch):
    calls = 0

    def counting(*args):
        nonlocal calls
        events = typed_events(*args)
        calls += events is not None
        return events

    module = legacy if era == "legacy" else sqlite_event_rows
    monkeypatch.setattr(module, "typed_events", counting)
    typed, typed_records, _ = _fold(generated_state_dirs / era, None, light=False)
    monkeypatch.setattr(module, "typed_events", lambda *_: None)
    full, full_records, _ = _fold(generated_state_dirs / era, None, light=False)
    assert calls > 1000, calls
    assert typed["report"] == full["report"]
    assert typed["sources"] == full["sources"]
    assert typed["sessions"] == full["sessions"]
    assert without_read_time(typed_records) == without_read_time(full_records)

"""History read light (``monitor.sources.transcript_light``, issue 11 item 1).

An entry the monitor only counts gives, read light, the events a full read gives, equal in
every field counting reads, or None (then it is read in full): proven over the fuzz
strategies, and end to end: a monitor that reads history light folds both eras of the
generated state dirs into the same sessions, records and findings as one that reads it all.
"""

from __future__ import annotations

import json
import sqlite3
import statistics

import msgspec
import zstandard
from hypothesis import example, given, settings
from hypothesis import strategies as st
from test_fuzz import (
    content_items,
    entries,
    json_values,
    short_text,
    tool_names,
    transcript_lines,
    usage_fields,
)

from monitor import untrusted_json
from monitor.detect.engine import DetectionEngine
from monitor.events import AssistantMessage, ToolCall, ToolResult, UserMessage
from monitor.pipeline import Monitor
from monitor.records import as_json_list
from monitor.sources.sourceset import SourceSet
from monitor.sources.transcript import IGNORED_ENTRY_TYPES, parse_entry, parse_timestamp
from monitor.sources.transcript_light import CountedSum, CountOnly, count_into, counted_events

EVERYTHING_IS_HISTORY = CountOnly(float("inf"), lambda session_id: True)
#: What the pipeline and the board read of a counted event, per type.
COUNTED_FIELDS = {
    AssistantMessage: ("session_id", "run_id", "ts", "usage", "stop_reason", "error_message",
                       "model", "provider", "tool_call_count", "origin", "is_error"),
    ToolCall: ("session_id", "call_id", "name", "run_id", "ts", "origin", "has_arguments"),
    ToolResult: ("session_id", "call_id", "name", "is_error", "run_id", "ts", "origin"),
    UserMessage: ("session_id", "run_id", "ts", "origin"),
}


def full_read(line: bytes) -> list | None:
    """The events of the full read, or None where it reports the line as an error."""
    try:
        text = line.decode("utf-8")
        if "\x00" in text:
            return None
        return parse_entry(untrusted_json.loads(text), "sid", "t.jsonl@0")
    except ValueError:
        return None


def counted_view(event) -> tuple:
    fields = COUNTED_FIELDS.get(type(event))
    assert fields is not None, f"{type(event).__name__} is never read light"
    return (type(event).__name__, *(getattr(event, name) for name in fields))


def same(left, right) -> bool:
    """Equal, NaN equal to itself (a usage field is never NaN, a timestamp may not be)."""
    return left == right or (left != left and right != right)


@settings(max_examples=600, deadline=None)
@given(transcript_lines)
def test_a_line_read_light_gives_the_full_read_events_or_is_read_in_full(line):
    light = counted_events(line, "sid", "t.jsonl@0", EVERYTHING_IS_HISTORY)
    if light is None:
        return
    full = full_read(line)
    assert full is not None, "read light, yet the full read reports it"
    assert [counted_view(e) for e in light] == [counted_view(e) for e in full]
    assert all(e.counted_only for e in light)


#: Message entries shaped as the light read takes them (every field of its type), with
#: run ids, errors and models set: the cases a light read must get exactly right.
plain_entries = st.fixed_dictionaries({
    "type": st.just("message"),
    "timestamp": st.sampled_from(["2026-11-29T13:57:11.540Z", "2026-11-29T14:00:00Z"]),
    "message": st.fixed_dictionaries(
        {"role": st.sampled_from(["assistant", "toolResult", "user", "custom"]),
         "timestamp": st.one_of(st.none(), st.sampled_from(["2026-11-29T13:58:00Z", ""]))},
        optional={"content": st.one_of(st.lists(content_items, max_size=4), short_text),
                  "usage": usage_fields, "stopReason": st.one_of(short_text, json_values),
                  "errorMessage": st.one_of(short_text, json_values),
                  "model": st.one_of(short_text, json_values), "provider": short_text,
                  "toolCallId": st.one_of(short_text, json_values), "toolName": tool_names,
                  "isError": json_values,
                  "details": st.fixed_dictionaries({}, optional={
                      "deniedReason": st.sampled_from(["tool-loop", "other"]),
                      "aggregated": short_text}),
                  "idempotencyKey": st.one_of(short_text, short_text.map(lambda t: t + ":user")),
                  "__openclaw": st.fixed_dictionaries({}, optional={
                      "runId": st.one_of(short_text, json_values)})})})


@settings(max_examples=600, deadline=None)
@given(plain_entries)
def test_plain_message_entries_read_light_as_the_full_read_reads_them(entry):
    line = json.dumps(entry).encode()
    light = counted_events(line, "sid", "t.jsonl@0", EVERYTHING_IS_HISTORY)
    full = full_read(line)
    veto = (entry["message"]["role"] == "toolResult"
            and entry["message"].get("details", {}).get("deniedReason") == "tool-loop")
    if not strict_json(line):           # NaN, Infinity: only the full read's fallback takes it
        assert light is None
        return
    if veto:
        assert light is None
        return
    assert light is not None, "a plain message entry is read light"
    assert [counted_view(e) for e in light] == [counted_view(e) for e in full]


@settings(max_examples=300, deadline=None)
@given(entries)
@example({"type": "message", "timestamp": float("inf"), "message": {
    "role": "assistant", "content": [], "usage": {}, "timestamp": "2026-11-29"}})
def test_typed_entries_read_light_whenever_they_are_plain_counted_messages(entry):
    """Light is not only ever None: a message entry of a counted role with typed fields is
    read light (so the equality above is not vacuous)."""
    line = json.dumps(entry).encode()
    light = counted_events(line, "sid", "t.jsonl@0", EVERYTHING_IS_HISTORY)
    message = entry.get("message")
    plain = (entry["type"] == "message" and isinstance(message, dict)
             and message.get("role") in ("assistant", "user")
             and isinstance(message.get("content", []), (list, str))
             and all(isinstance(item, dict) for item in message.get("content") or [])
             and isinstance(message.get("timestamp"), str)
             and message["timestamp"].startswith("2026-11-29")
             and not isinstance(message.get("usage"), float)
             and strict_json(line))
    if plain and full_read(line):
        assert light is not None


def strict_json(line: bytes) -> bool:
    """Whether ``line`` is JSON without NaN or Infinity (which only the full read takes)."""
    try:
        msgspec.json.decode(line)
    except msgspec.MsgspecError:
        return False
    return True


def test_an_entry_at_or_after_the_cutoff_and_a_veto_are_read_in_full():
    base = {"type": "message", "timestamp": "2026-11-29T13:57:11.540Z"}
    call = dict(base, message={"role": "assistant", "content": [
        {"type": "toolCall", "id": "c1", "name": "exec", "arguments": {"command": "ls"}}]})
    ts = parse_entry(call, "sid", "o")[0].ts
    line = json.dumps(call).encode()
    assert counted_events(line, "sid", "o", CountOnly(ts, lambda s: True)) is None
    light = counted_events(line, "sid", "o", CountOnly(ts + 1, lambda s: True))
    assert [type(e) for e in light] == [AssistantMessage, ToolCall]
    assert light[1].arguments is None and light[1].has_arguments
    veto = dict(base, message={"role": "toolResult", "toolCallId": "c1", "toolName": "exec",
                               "details": {"deniedReason": "tool-loop"}})
    assert counted_events(json.dumps(veto).encode(), "sid", "o",
                          CountOnly(ts + 1, lambda s: True)) is None


ignored_entries = st.fixed_dictionaries(
    {"type": st.sampled_from([*sorted(IGNORED_ENTRY_TYPES), "session", "model_change"]),
     "timestamp": st.one_of(st.sampled_from(["2026-11-29T13:57:11.540Z", ""]), json_values)},
    optional={"customType": short_text, "data": json_values, "message": json_values})


@settings(max_examples=400, deadline=None)
@given(ignored_entries)
def test_entries_the_full_read_ignores_give_nothing_light(entry):
    """A third of a transcript's lines are ``custom`` marks the full read gives no event
    for: read light, they give none either, without a full decode."""
    line = json.dumps(entry).encode()
    light = counted_events(line, "sid", "t.jsonl@0", EVERYTHING_IS_HISTORY)
    if light is not None:
        assert light == [] and full_read(line) == []
    if entry["type"] in IGNORED_ENTRY_TYPES and entry.get("message") is None \
            and entry["timestamp"] == "2026-11-29T13:57:11.540Z" and _strict_json(entry):
        assert light == []


def _strict_json(value) -> bool:
    """Whether ``value`` dumps as JSON proper (``json.dumps`` writes ``Infinity`` and
    ``NaN``, which only the full read may take or refuse)."""
    try:
        json.dumps(value, allow_nan=False)
    except ValueError:
        return False
    return True


def test_an_ignored_entry_deep_or_in_the_present_is_read_in_full():
    mark = {"type": "custom", "timestamp": "2026-11-29T13:57:11.540Z", "customType": "x"}
    for depth in (65, 5000):
        deep = json.dumps(mark)[:-1] + ', "data": ' + "[" * depth + "]" * depth + "}"
        assert counted_events(deep.encode(), "sid", "o", EVERYTHING_IS_HISTORY) is None
    ts = parse_timestamp(mark["timestamp"])
    line = json.dumps(mark).encode()
    assert counted_events(line, "sid", "o", CountOnly(ts, lambda s: True)) is None
    assert counted_events(line, "sid", "o", CountOnly(ts + 1, lambda s: True)) == []


def _reply(model: str | None, run_id: str, cost: float) -> bytes:
    return json.dumps({"type": "message", "timestamp": "2026-11-29T14:00:00Z", "message": {
        "role": "assistant", "model": model, "__openclaw": {"runId": run_id},
        "usage": {"input": 3, "output": 2, "cost": {"total": cost}},
        "content": [{"type": "toolCall", "id": "c", "name": "exec", "arguments": {}}]}}).encode()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(transcript_lines, *[plain_entries.map(lambda e: json.dumps(e).encode())]
                          * 3), max_size=12))
@example([_reply(model="a", run_id="r1", cost=0.1), _reply(model="b", run_id="r2", cost=0.2),
          _reply(model=None, run_id="r1", cost=0.3)])
def test_lines_summed_light_fold_as_their_events_fold_one_by_one(lines):
    """``count_into`` (what a history reader sends) and the events ``counted_events`` gives
    for the same lines change a quiet monitor's session alike, and count the same events."""
    by_events, by_sums = (Monitor(SourceSet(paths=[]), DetectionEngine()) for _ in range(2))
    by_events.quiet = by_sums.quiet = True
    summed, sums = CountedSum("sid"), []
    events_given = events_summed = 0
    for index, line in enumerate(lines):
        origin = f"t.jsonl@{index}"
        events = counted_events(line, "sid", origin, EVERYTHING_IS_HISTORY)
        count = count_into(summed, line, origin, EVERYTHING_IS_HISTORY)
        assert (events is None) == (count is None)
        if events is None:
            summed.flush_to(sums)
            continue
        by_events.fold(events)
        events_given += len(events)
        events_summed += count
    summed.flush_to(sums)
    by_sums.fold(sums)
    assert events_summed == events_given
    assert _folded(by_sums) == _folded(by_events)


def _folded(monitor: Monitor) -> dict:
    return {sid: (s.as_json(), s.run_id, s.model, s.cost, dict(s.tools))
            for sid, s in monitor.sessions.items()}


# ------------------------------------------------------------------------ end to end

def _fold(state_dir, detect_since: float, light: bool) -> tuple[dict, list, int]:
    """Everything a monitor folded from ``state_dir``, its output records and how many
    events it was given read light."""
    sources = SourceSet(state_dir=str(state_dir))
    if not light:
        sources.set_count_only = lambda count_only: None
    counted = 0
    poll = sources.poll

    def counting_poll() -> list:
        nonlocal counted
        events = poll()
        counted += sum(getattr(event, "counted_only", False) for event in events)
        return events

    sources.poll = counting_poll
    monitor = Monitor(sources, DetectionEngine(), detect_since=detect_since)
    records: list[dict] = []
    previous = -1
    while True:
        records += as_json_list(monitor.step())
        total = sum(s.events + s.errors for s in sources.sources)
        if total == previous and not sources.behind:
            break
        previous = total
    folded = {"report": monitor.report(), "sources": sources.summaries(),
              "sessions": {sid: (s.tool_calls, dict(s.tools), s.token_counts(),
                                 s.assistant_messages, s.errors, s.first_ts, s.last_ts,
                                 s.run_id, s.model, [f.as_json() for f in s.findings])
                           for sid, s in monitor.sessions.items()}}
    sources.close()
    return folded, records, counted


def _middle_time(state_dir) -> float:
    db = state_dir / "sqlite" / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    with sqlite3.connect(db) as conn:
        times = [row[0] / 1000.0 for row in conn.execute(
            "SELECT created_at FROM transcript_events WHERE created_at > 0")]
    return statistics.median(times)


def test_a_monitor_reading_history_light_folds_what_one_reading_it_all_folds(
        generated_state_dirs):
    """Half of each era's events are before the cutoff; sessions, records, findings and
    source summaries are the same whether that half is read light or in full."""
    since = _middle_time(generated_state_dirs)
    for era in ("legacy", "sqlite"):
        state_dir = generated_state_dirs / era
        light, light_records, counted = _fold(state_dir, since, light=True)
        full, full_records, none_counted = _fold(state_dir, since, light=False)
        assert counted > 1000 and none_counted == 0, (era, counted)
        assert light["report"] == full["report"], era
        assert light["sources"] == full["sources"], era
        assert light["sessions"] == full["sessions"], era
        assert without_read_time(light_records) == without_read_time(full_records), era


def without_read_time(records: list[dict]) -> list[dict]:
    """Error and notice records are stamped with the time they were read."""
    return [{k: v for k, v in r.items() if not (k == "ts" and r["type"] in ("error", "notice"))}
            for r in records]


def test_a_huge_tool_name_is_kept_redacted_and_cut_by_both_reads():
    secret = "ghp_" + "E" * 36
    name = "exec " + secret + " " + "n" * 2_000_000
    call = {"type": "message", "timestamp": "2026-11-29T13:57:11.540Z", "message": {
        "role": "assistant", "content": [{"type": "toolCall", "id": "c1", "name": name,
                                          "arguments": {}}]}}
    result = {"type": "message", "timestamp": "2026-11-29T13:57:12.540Z", "message": {
        "role": "toolResult", "toolCallId": "c1", "toolName": name, "content": []}}
    for entry in (call, result):
        line = json.dumps(entry).encode()
        light = counted_events(line, "sid", "t.jsonl@0", EVERYTHING_IS_HISTORY)
        full = full_read(line)
        names = [e.name for e in light + full if isinstance(e, ToolCall | ToolResult)]
        assert len(names) == 2 and names[0] == names[1]
        assert names[0].startswith("exec «redacted» nnn") and len(names[0]) <= 1000


# ---------------------------------------------------------------- lines counted at once

ODD_LINES = st.sampled_from([b"", b"   ", b"\xc2\xa0", b"\xff\xfe{}", b'{"type":"x\x00"}',
                             b"not json", b'{"type":"message","message":"x"}'])


def _summed_run_output(lines: list[bytes], history: set[str], at_once: bool) -> tuple:
    """What a legacy source in a quiet first scan gives for ``lines`` of session "sid":
    one line at a time through ``SummedRun.add``, or ``add_lines``. A line read in full
    that is after the cutoff ends the session's history, as a monitor's view would."""
    from monitor.sources.legacy import LegacySessionsSource
    from monitor.sources.tail_state import Line
    from monitor.sources.transcript_light import SummedRun

    source = LegacySessionsSource("/nonexistent", "main")
    seen_present: set[str] = set()
    source.count_only = CountOnly(parse_timestamp("2026-11-29T14:30:00Z"),
                                  lambda sid: sid in history and sid not in seen_present)
    out: list = []
    run = SummedRun(source, "sid", out)
    tail_lines = [Line("t.jsonl", index, data) for index, data in enumerate(lines)]

    def add(line):
        given = len(out)
        run.add(source.emit_line, line)
        if any(getattr(e, "counted_only", None) is False for e in out[given:]):
            seen_present.add("sid")

    if at_once:
        run.add_lines(tail_lines, add)
    else:
        for line in tail_lines:
            add(line)
    run.close()
    return (msgspec.json.encode(out), source.events, source.errors,
            [e.where for e in source.error_samples])


def _user_line(timestamp: str) -> bytes:
    return json.dumps({"type": "message", "timestamp": timestamp, "message": {
        "role": "user", "content": "go", "idempotencyKey": "r9:user"}}).encode()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(transcript_lines, ODD_LINES,
                          *[plain_entries.map(lambda e: json.dumps(e).encode())] * 3),
                max_size=12), st.booleans())
@example([_user_line("2026-11-29T14:00:00Z"), _user_line("2026-11-29T15:00:00Z"),
          _user_line("2026-11-29T14:10:00Z")], True)
def test_lines_counted_at_once_give_what_they_give_one_at_a_time(lines, history):
    """``SummedRun.add_lines`` (a first scan's history counted without the calls of each
    line) gives the events, sums, counts and errors that adding each line gives: for blank,
    broken and present lines among history, and for a session that is not history."""
    sessions = {"sid"} if history else set()
    assert _summed_run_output(lines, sessions, True) == \
        _summed_run_output(lines, sessions, False)


ODD_SEQS = st.one_of(st.integers(min_value=-2, max_value=2**64), st.none(), st.text(max_size=3),
                     st.floats(allow_nan=False))


def _summed_rows_output(rows: list[tuple], history: bool, at_once: bool) -> tuple:
    """What an agent database's source in a quiet first scan gives for ``rows`` of session
    "sid" (``read_row`` through the run, or ``add_row``), as ``_summed_run_output``."""
    from monitor.sources.sqlite_agent import SqliteAgentSource
    from monitor.sources.transcript_light import SummedRun

    source = SqliteAgentSource("/nonexistent/agent.sqlite", "main")
    seen_present: set[str] = set()
    source.count_only = CountOnly(parse_timestamp("2026-11-29T14:30:00Z"),
                                  lambda sid: history and sid not in seen_present)
    out: list = []
    run = SummedRun(source, "sid", out)
    sizes = []
    for row in rows:
        given = len(out)
        sizes.append(source.add_row("sid", row, out, run) if at_once
                     else run.add(source.read_row, row))
        if any(getattr(e, "counted_only", None) is False for e in out[given:]):
            seen_present.add("sid")
            run.counting_now = source.only_counts("sid")
    run.close()
    return (msgspec.json.encode(out), sizes, source.events, source.errors,
            [e.where for e in source.error_samples], dict(source.seq_cursor))


def _as_row(seq, line: bytes, stored: str) -> tuple:
    """A row whose event is ``stored`` as text, bytes, a zstd blob or a blob that is not
    one."""
    if stored == "zstd":
        return (seq, None, zstandard.ZstdCompressor().compress(line), len(line), 1)
    if stored == "not-zstd":
        return (seq, None, line, len(line), 1)
    try:
        event = line.decode("utf-8") if stored == "text" else line
    except UnicodeDecodeError:
        event = line
    return (seq, event, None, None, 1)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.integers(min_value=0, max_value=99), ODD_SEQS),
                          st.one_of(transcript_lines, ODD_LINES,
                                    *[plain_entries.map(lambda e: json.dumps(e).encode())] * 3),
                          st.sampled_from(["text", "bytes", "zstd", "not-zstd"])), max_size=10),
       st.booleans())
@example([(1, _user_line("2026-11-29T14:00:00Z"), "text"),
          (2, _user_line("2026-11-29T15:00:00Z"), "zstd"),
          (3, _user_line("2026-11-29T14:10:00Z"), "zstd")], True)
def test_rows_counted_at_once_give_what_they_give_one_at_a_time(rows, history):
    """``EventRows.add_row`` gives the events, sums, sizes, counts, errors and seq cursor
    that ``read_row`` through the run gives, for odd seqs and events (as text, bytes or
    zstd blobs) among history."""
    rows = [_as_row(*row) for row in rows]
    assert _summed_rows_output(rows, history, True) == _summed_rows_output(rows, history, False)


def test_a_zstd_row_of_history_is_counted_at_once():
    """A row stored as a zstd blob is counted as its text would be (no full read), and a
    blob that does not decompress is left to the full read, which reports it."""
    from monitor.sources.sqlite_agent import SqliteAgentSource

    source = SqliteAgentSource("/nonexistent/agent.sqlite", "main")
    source.count_only = CountOnly(parse_timestamp("2026-11-29T14:30:00Z"), lambda sid: True)
    line = _user_line("2026-11-29T14:00:00Z")
    summed, out = CountedSum("sid"), []
    assert source.count_row("sid", _as_row(4, line, "zstd"), out, summed) == len(line)
    assert (out, summed.events, source.events, source.seq_cursor) == ([], 1, 1, {"sid": 4})
    assert source.count_row("sid", _as_row(5, line, "not-zstd"), out, summed) is None
    assert (out, summed.events, source.seq_cursor) == ([], 1, {"sid": 4})

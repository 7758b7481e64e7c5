"""Fuzz the readers with hypothesis: transcript lines, gateway log lines, agent-DB rows
(plain and zstd) and config files, fed through the real sources, the pipeline and the
detectors. The properties: nothing crashes, and every input that is rejected is counted
(an error per line or row, naming where) or reported (``ConfigError`` lines shaped
``FILE:key: message``); nothing is silently dropped or read twice.

The default run is short (well under 30 s). ``CLAWWATCH_FUZZ_LONG=1`` runs the long
variant, over 100,000 generated inputs in all; the counts are printed at the end (and
written as JSON to ``$CLAWWATCH_FUZZ_REPORT`` when set).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import re
import shutil
import sqlite3
import struct
import tempfile
import typing
import uuid
from collections import Counter
from pathlib import Path

import pytest
import zstandard
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from monitor.config import Config, ConfigError, load_config
from monitor.config.sections import DETECTORS, SECTIONS
from monitor.demo.sim.sqlite_writer import SCHEMA_PATH
from monitor.detect.engine import DetectionEngine
from monitor.events import SourceError
from monitor.pipeline import Monitor
from monitor.records import as_json_list
from monitor.sources.log_line_forms import MalformedLogLine, parse_log_line
from monitor.sources.sourceset import SourceSet
from monitor.sources.sqlite_agent import SqliteAgentSource
from monitor.sources.transcript import parse_entry

LONG = os.environ.get("CLAWWATCH_FUZZ_LONG") == "1"
# examples per test (short, long) and the inputs the long variant must reach per test
EXAMPLES = {"transcript": (120, 10000), "log": (120, 7000), "rows": (60, 3500),
            "config": (150, 15000)}
LONG_MINIMUM = {"transcript": 35_000, "log": 25_000, "rows": 12_000, "config": 15_000}
COUNTS: dict[str, Counter] = {name: Counter() for name in EXAMPLES}


def fuzz_settings(name: str):
    """Hypothesis settings of one test: no example database (nothing written to the repo),
    no deadline (a slow example is not a failure; a crash is), and the short variant
    derandomized so CI sees the same inputs every run (the long one explores)."""
    return settings(max_examples=EXAMPLES[name][1 if LONG else 0], deadline=None,
                    database=None, derandomize=not LONG,
                    suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module", autouse=True)
def report_counts(request):
    yield
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    lines = [f"fuzz {'long' if LONG else 'short'} variant:"]
    for name, counts in COUNTS.items():
        lines.append(f"  {name:10} inputs={counts['inputs']:,} accepted={counts['accepted']:,} "
                     f"rejected={counts['rejected']:,} events={counts['events']:,}")
    lines.append(f"  total inputs={sum(c['inputs'] for c in COUNTS.values()):,}")
    if os.environ.get("CLAWWATCH_FUZZ_REPORT"):
        Path(os.environ["CLAWWATCH_FUZZ_REPORT"]).write_text(
            json.dumps({name: dict(counts) for name, counts in COUNTS.items()}, indent=2))
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():
            reporter.write_line("\n".join(lines))


@functools.cache
def workdir() -> Path:
    """The dir of this module's inputs, made once the first is (``remove_workdir``)."""
    return Path(tempfile.mkdtemp(prefix="clawwatch-fuzz-"))


@pytest.fixture(scope="module", autouse=True)
def remove_workdir():
    yield
    if workdir.cache_info().currsize:
        shutil.rmtree(workdir(), ignore_errors=True)


def fresh_dir() -> Path:
    path = workdir() / uuid.uuid4().hex
    path.mkdir()
    return path


# ---------------------------------------------------------------- strategies

EXTREMES = [float("inf"), float("-inf"), float("nan"), 1e308, -1.0, 2**63, 10**22, 0]
numbers = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70), st.floats(), st.booleans(), st.none(),
    st.sampled_from(["12", "", "NaN", "1e999", *EXTREMES]), st.sampled_from(EXTREMES),
)
short_text = st.text(max_size=24)
scalars = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**66), max_value=2**66),
                    st.floats(), short_text)
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(short_text, inner, max_size=4), max_leaves=8)
timestamps = st.one_of(numbers, short_text, st.sampled_from([
    "2026-11-29T13:57:11.540Z", "2026-02-30T25:61:00Z", "2026-11-29", "Z", "+00:00",
    "9999-12-31T23:59:59.999999+14:00", "0001-01-01T00:00:00Z"]))
tool_names = st.one_of(st.sampled_from(["exec", "read", "process", "write", "edit",
                                        "web_fetch", "frobnicate_widget", "", " EXEC "]),
                       short_text)
content_items = st.fixed_dictionaries(
    {"type": st.one_of(st.sampled_from(["text", "toolCall", "toolCall", "tool_use",
                                        "thinking", "image"]), short_text)},
    optional={"text": st.one_of(st.text(max_size=80), json_values), "id": json_values,
              "name": tool_names, "arguments": json_values, "input": json_values})
usage_fields = st.fixed_dictionaries({}, optional={
    "input": numbers, "output": numbers, "cacheRead": numbers, "cacheWrite": numbers,
    "totalTokens": numbers,
    "cost": st.one_of(numbers, st.fixed_dictionaries({}, optional={"total": numbers}))})
usages = st.one_of(usage_fields, usage_fields, json_values)
details = st.one_of(json_values, st.fixed_dictionaries({}, optional={
    "deniedReason": st.one_of(st.just("tool-loop"), json_values),
    "intervention": st.one_of(json_values, st.fixed_dictionaries({}, optional={
        "count": numbers, "detector": json_values, "level": json_values,
        "actionKey": json_values})),
    "status": st.one_of(st.sampled_from(["completed", "failed", "running", "blocked",
                                         "approval-pending"]), json_values),
    "exitCode": numbers, "aggregated": st.one_of(st.text(max_size=60), json_values),
    "tail": json_values, "timedOut": json_values, "changed": json_values}))
def without(fields: dict, *names: str) -> dict:
    return {k: v for k, v in fields.items() if k not in names}


message_fields = {
    "content": st.one_of(st.lists(content_items, max_size=4), st.text(max_size=60), json_values),
    "usage": usages, "stopReason": json_values, "errorMessage": json_values,
    "model": json_values, "provider": json_values, "timestamp": timestamps,
    "toolCallId": json_values, "toolName": tool_names, "isError": json_values,
    "details": details, "idempotencyKey": json_values,
    "__openclaw": st.one_of(json_values, st.fixed_dictionaries({}, optional={
        "runId": json_values}))}
assistant_messages = st.fixed_dictionaries(
    {"role": st.just("assistant"), "content": st.lists(content_items, max_size=4),
     "usage": usages, "timestamp": timestamps},
    optional=without(message_fields, "content", "usage", "timestamp"))
tool_result_messages = st.fixed_dictionaries(
    {"role": st.just("toolResult"), "toolCallId": json_values, "toolName": tool_names,
     "details": details, "timestamp": timestamps},
    optional=without(message_fields, "toolCallId", "toolName", "details", "timestamp"))
any_messages = st.fixed_dictionaries(
    {"role": st.one_of(st.sampled_from(["assistant", "toolResult", "user", "custom"]),
                       short_text)}, optional=message_fields)
entries = st.fixed_dictionaries(
    {"type": st.one_of(st.sampled_from(["message"] * 6 + [
        "session", "compaction", "reset", "branch_summary", "model_change", "custom",
        "thinking_level_change", "label"]), short_text)},
    optional={"message": st.one_of(assistant_messages, tool_result_messages, any_messages,
                                   json_values), "id": json_values,
              "timestamp": timestamps, "cwd": json_values, "tokensBefore": numbers,
              "provider": json_values, "modelId": json_values, "parentId": json_values})


def _dumps(value) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")


def _one_line(data: bytes) -> bytes:
    return data.replace(b"\n", b" ")


def mangled(texts: st.SearchStrategy[bytes]) -> st.SearchStrategy[bytes]:
    """Valid lines, and the same lines cut short, with a NUL, or with invalid UTF-8."""
    def mangle(data: bytes, how: int, where: int) -> bytes:
        cut = where % (len(data) + 1)
        if how == 1:
            return data[:cut]
        if how == 2:
            return data[:cut] + b"\x00" + data[cut:]
        if how == 3:
            return data[:cut] + b"\xff\xfe" + data[cut:]
        return data
    return st.builds(mangle, texts, st.integers(0, 6), st.integers(0, 10**6))


transcript_lines = st.one_of(
    entries.map(_dumps), entries.map(_dumps), entries.map(_dumps), mangled(entries.map(_dumps)),
    json_values.map(_dumps), st.binary(max_size=120),
).map(_one_line)

subsystems = st.sampled_from(["agents/loop-detection", "diagnostic", "agents/tools",
                              "agent/embedded", "gateway/ws"])
counts_in_text = st.one_of(st.integers(-5, 10**20).map(str), short_text)
loop_messages = st.one_of(
    st.builds("Loop warning: {} called {} times with identical arguments".format, tool_names,
              counts_in_text),
    st.builds("Critical generic loop detected: {} repeated {} times".format, tool_names,
              counts_in_text),
    st.builds("Polling loop warning: {} repeated {} times".format, tool_names, counts_in_text),
    st.builds("Ping-pong loop warning: alternating calls count={} currentTool={}".format,
              counts_in_text, tool_names),
    st.builds(("tool loop: sessionId={} sessionKey={} tool={} level={} action={} detector={} "
               'count={} message="{}"').format, short_text, short_text, tool_names,
              st.sampled_from(["warning", "critical", "x"]), st.sampled_from(["warn", "block"]),
              st.sampled_from(["generic_repeat", "ping_pong", "known_poll_no_progress", "z"]),
              counts_in_text, short_text),
    st.builds("embedded run start: runId={} sessionId={} provider=p model=m".format, short_text,
              short_text),
    st.text(max_size=80),
)
log_records = st.fixed_dictionaries(
    {"0": st.one_of(subsystems.map(lambda s: json.dumps({"subsystem": s})), json_values),
     "1": st.one_of(loop_messages, json_values, st.fixed_dictionaries({}, optional={
         "event": json_values, "runId": json_values, "sessionId": json_values}))},
    optional={"2": st.one_of(loop_messages, json_values),
              "_meta": st.one_of(json_values, st.fixed_dictionaries({}, optional={
                  "logLevelName": st.one_of(st.sampled_from(["WARN", "ERROR", "INFO"]),
                                            json_values),
                  "date": timestamps})),
              "time": timestamps, "message": json_values, "traceId": json_values,
              "session_id": json_values, "agent_id": json_values})
log_lines = st.one_of(log_records.map(_dumps), log_records.map(_dumps),
                      mangled(log_records.map(_dumps)), json_values.map(_dumps),
                      st.binary(max_size=120)).map(_one_line)


# ------------------------------------------------------------ shared checks

def run_pipeline(sources: SourceSet) -> tuple[Monitor, list[dict]]:
    """Replay through the real pipeline with every detector, as ``clawwatch replay`` does."""
    monitor = Monitor(sources, DetectionEngine(Config()))
    records = as_json_list(monitor.step() + monitor.step())
    document = monitor.report()
    json.dumps(document, allow_nan=False)
    return monitor, records


def expected_line_outcome(line: bytes, sid: str) -> tuple[bool, int]:
    """(rejected, events) for one transcript line, straight from the parsing rules."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return True, 0
    if "\x00" in text:
        return True, 0
    try:
        entry = json.loads(text)
    except ValueError:
        return True, 0
    try:
        return False, len(parse_entry(entry, sid, "o"))
    except ValueError:
        return True, 0


# ---------------------------------------------------------------------- tests

@fuzz_settings("transcript")
@given(lines=st.lists(transcript_lines, min_size=1, max_size=20))
@example(lines=[b'{"type":[]}'])  # found by the long variant: unhashable entry type
@example(lines=[b'{"type":"message","message":{"role":"assistant","usage":{"input":1e999},'
                b'"timestamp":1e308}}'])  # infinite tokens, a time past year 9999
def test_transcript_lines_never_crash_and_every_rejection_is_counted(lines):
    sessions = fresh_dir()
    sid = "0f0e0d0c-0000-4000-8000-000000000001"
    (sessions / f"{sid}.jsonl").write_bytes(b"".join(line + b"\n" for line in lines))
    sources = SourceSet(paths=(str(sessions),), replay=True)
    try:
        _, records = run_pipeline(sources)
    finally:
        sources.close()
    source = sources.sources[0]
    outcomes = [expected_line_outcome(line, sid) for line in lines if line.strip()]
    rejected = sum(1 for bad, _ in outcomes if bad)
    assert source.errors == rejected
    assert source.events == sum(n for _, n in outcomes)
    errors = [r for r in records if r["type"] == "error"]
    assert len(errors) == rejected and all(r["where"].startswith("offset ") for r in errors)
    counts = COUNTS["transcript"]
    counts.update(inputs=len(lines), rejected=rejected, accepted=len(outcomes) - rejected,
                  events=source.events)


@fuzz_settings("log")
@given(lines=st.lists(log_lines, min_size=1, max_size=20))
def test_log_lines_never_crash_and_every_rejection_is_counted(lines):
    log = fresh_dir() / "openclaw.log"
    log.write_bytes(b"".join(line + b"\n" for line in lines))
    rejected = 0
    for line in lines:
        if not line.strip():
            continue
        try:
            parse_log_line(line)
        except MalformedLogLine as exc:
            assert str(exc)
            rejected += 1
    sources = SourceSet(log_path=str(log), replay=True)
    try:
        _, records = run_pipeline(sources)
    finally:
        sources.close()
    source = sources.sources[0]
    nonblank = sum(1 for line in lines if line.strip())
    assert source.errors == rejected
    assert source.events == nonblank - rejected
    assert sum(1 for r in records if r["type"] == "error") == rejected
    COUNTS["log"].update(inputs=len(lines), rejected=rejected, accepted=nonblank - rejected,
                         events=source.events)


_COMPRESSOR = zstandard.ZstdCompressor(level=1, write_checksum=True)
_NO_SIZE = zstandard.ZstdCompressor(level=1, write_content_size=False)
# 6 MB of text in a frame that does not say its size: past the reader's 4 MB cap
_BOMB = _NO_SIZE.compress(b'{"type":"custom","x":"' + b"a" * (6 << 20) + b'"}')


def declaring_frame(content: bytes, declared: int) -> bytes:
    """A zstd frame of one raw block whose header declares ``declared`` bytes of content."""
    header = struct.pack("<IBQ", 0xFD2FB528, 0xE0, declared)
    return header + ((len(content) << 3) | 1).to_bytes(3, "little") + content


@st.composite
def db_rows(draw):
    """One ``transcript_events`` row: plain JSON, zstd (good, corrupt, cut, unsized,
    oversized, lying about its size), or neither."""
    payload = draw(st.one_of(entries.map(_dumps), json_values.map(_dumps),
                             st.binary(max_size=80)))
    kind = draw(st.sampled_from(["json", "json", "zstd", "zstd", "garbage", "cut", "unsized",
                                 "bomb", "liar", "declares", "none", "blob", "text",
                                 "raw-text"]))
    utf8 = draw(st.one_of(st.just(len(payload)), st.none(), st.integers(-3, 2**40)))
    if kind == "json":
        return payload.decode("utf-8", "replace"), None, utf8
    if kind == "blob":
        return payload, None, utf8
    if kind == "raw-text":
        return RawText(payload), None, utf8
    if kind == "none":
        return None, None, utf8
    if kind == "text":
        return None, payload.decode("utf-8", "replace"), utf8
    if kind == "declares":
        return None, declaring_frame(payload, draw(st.integers(0, 2**60))), utf8
    if kind == "garbage":
        return None, draw(st.binary(min_size=1, max_size=60)), utf8
    if kind == "unsized":
        return None, _NO_SIZE.compress(payload), utf8
    if kind == "bomb":
        return None, _BOMB, None
    frame = _COMPRESSOR.compress(payload)
    if kind == "cut":
        return None, frame[:draw(st.integers(0, max(0, len(frame) - 1)))], utf8
    if kind == "liar":
        return None, frame, max(1, len(payload) // 2)
    return None, frame, utf8


class RawText(bytes):
    """An ``event_json`` stored as text of these bytes, UTF-8 or not."""


def make_agent_db(path: Path, rows: list[tuple], nodes: list[tuple]) -> None:
    """The real v23 schema, with ``transcript_events`` relaxed (no CHECK, not STRICT) so
    rows a newer or damaged database could hold can be stored."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA synchronous = OFF")
    conn.executescript(SCHEMA_PATH.read_text())
    conn.executescript("""
        DROP TABLE transcript_events;
        CREATE TABLE transcript_events (session_id TEXT NOT NULL, seq INTEGER NOT NULL,
          event_json TEXT, created_at INTEGER NOT NULL, event_zstd BLOB,
          event_utf8_bytes INTEGER, navigation_json TEXT, PRIMARY KEY (session_id, seq));
    """)
    conn.executemany("INSERT OR IGNORE INTO transcript_events (session_id, seq, event_json,"
                     " created_at, event_zstd, event_utf8_bytes) VALUES (?, ?, ?, 0, ?, ?)",
                     rows)
    conn.executemany("UPDATE transcript_events SET event_json = CAST(event_json AS TEXT) "
                     "WHERE session_id = ? AND seq = ?",
                     [row[:2] for row in rows if isinstance(row[2], RawText)])
    conn.executemany("INSERT OR IGNORE INTO session_nodes (session_key, current_session_id,"
                     " entry_json, updated_at, status) VALUES (?, ?, ?, ?, ?)", nodes)
    conn.commit()
    conn.close()


def row_outcome(row: tuple) -> int | None:
    """Events a row must yield when it is readable at all; None when it cannot be decoded
    here without limits (the source may then reject it, and must count it)."""
    _, _, event_json, event_zstd, _ = row
    data = event_json
    if data is None and event_zstd is not None:
        if not isinstance(event_zstd, bytes):
            return None
        try:
            if zstandard.frame_content_size(event_zstd) > 4 << 20:
                return None
            data = zstandard.ZstdDecompressor().decompressobj().decompress(event_zstd)
        except zstandard.ZstdError:
            return None
    if data is None:
        return None
    try:
        return len(parse_entry(json.loads(data if isinstance(data, str) else data.decode()),
                               row[0], "o"))
    except (ValueError, UnicodeDecodeError):
        return None


@fuzz_settings("rows")
@given(rows=st.lists(st.tuples(st.sampled_from(["s-1", "s-2", "ß\u2028"]),
                               st.integers(0, 10**6), db_rows()), min_size=1, max_size=20,
                     unique_by=lambda r: (r[0], r[1])),
       nodes=st.lists(st.tuples(short_text, st.sampled_from(["s-1", "s-2", "zz"]),
                                st.one_of(entries.map(json.dumps), st.text(max_size=40)),
                                st.integers(0, 2**40),
                                st.sampled_from([None, "running", "done"])), max_size=4))
@example(rows=[("s-1", 0, (None, declaring_frame(b"{}", 2**40), None)),
               ("s-1", 1, (None, "not a blob", None))], nodes=[])  # a 1 TB claim; text
@example(rows=[("s-1", 0, (RawText(b'{"type":"message","x":"\xff"}'), None, None)),
               ("s-1", 1, ('{"type":"message","message":{"role":"user","content":"hi"}}',
                           None, None))], nodes=[])    # text that is not UTF-8, then a row
def test_db_rows_never_crash_and_every_rejection_is_counted(rows, nodes):
    flat = [(sid, seq, ej, ez, utf8) for sid, seq, (ej, ez, utf8) in rows]
    db = fresh_dir() / "openclaw-agent.sqlite"
    make_agent_db(db, flat, nodes)
    source = SqliteAgentSource(str(db), "main")
    first = []
    for _ in range(len(flat) + 2):
        first += source.poll()
        if not getattr(source, "behind", False):
            break
    again = source.poll()
    source.close()
    errors = [e for e in first if isinstance(e, SourceError)]
    events_by_row = Counter(e.origin.split("#", 1)[1].rsplit("#", 1)[0] for e in first
                            if hasattr(e, "session_id") and "#" in getattr(e, "origin", ""))
    assert not [e for e in again if not isinstance(e, SourceError)], "rows read twice"
    assert source.errors == len(errors)
    where = Counter(e.where for e in errors)
    assert all(n == 1 for n in where.values())
    rejected = 0
    for row in flat:
        name = f"{row[0]}:{row[1]}"
        produced = events_by_row.get(name, 0)
        if name in where:
            rejected += 1
            assert produced == 0
        else:
            assert produced == row_outcome(row), f"row {name} lost without an error"
    COUNTS["rows"].update(inputs=len(flat), rejected=rejected, accepted=len(flat) - rejected,
                          events=source.events)


def _config_keys() -> dict[str, list[str]]:
    keys = {}
    for name, cls in SECTIONS.items():
        keys[name] = [f.name for f in dataclasses.fields(cls)]
    return keys


CONFIG_KEYS = _config_keys()
DETECTION_NESTED = {f.name: [g.name for g in dataclasses.fields(hint)]
                    for f in dataclasses.fields(SECTIONS["detection"])
                    if dataclasses.is_dataclass(hint := typing.get_type_hints(
                        SECTIONS["detection"])[f.name])}
config_values = st.one_of(scalars, st.lists(scalars, max_size=3),
                          st.dictionaries(st.one_of(st.sampled_from(DETECTORS), short_text),
                                          scalars, max_size=3))


@st.composite
def config_documents(draw):
    """A config mapping drawn from the real schema (with wrong values) plus stray keys."""
    document: dict = {}
    for section in draw(st.lists(st.sampled_from([*CONFIG_KEYS, "agents", "bogus"]),
                                 max_size=4, unique=True)):
        if section == "agents":
            inner = draw(st.dictionaries(short_text, st.dictionaries(
                st.sampled_from(["detection", "budgets", "ui"]), st.dictionaries(
                    st.sampled_from(CONFIG_KEYS["detection"]), config_values, max_size=2),
                max_size=2), max_size=2))
            document[section] = inner
            continue
        fields = CONFIG_KEYS.get(section, ["x"])
        body = draw(st.dictionaries(st.one_of(st.sampled_from(fields), short_text),
                                    config_values, max_size=4))
        if section == "detection" and draw(st.booleans()):
            nested = draw(st.sampled_from(sorted(DETECTION_NESTED)))
            body[nested] = draw(st.dictionaries(st.one_of(
                st.sampled_from(DETECTION_NESTED[nested]), short_text), config_values,
                max_size=3))
        document[section] = draw(st.one_of(st.just(body), scalars))
    return document


def _yaml(document) -> str:
    import yaml

    return yaml.safe_dump(document, allow_unicode=True)


config_texts = st.one_of(config_documents().map(_yaml), st.text(max_size=120),
                         st.lists(st.sampled_from(["detection:", "  history_size: -1",
                                                   "\t", "budgets: [", "a: *b", "- x",
                                                   "actions:", "  mode: sideways", ": :"]),
                                  max_size=6).map("\n".join))


@fuzz_settings("config")
@given(text=config_texts)
@example(text='budgets:\n  "\\n": 1\n')  # a key holding a newline
def test_config_files_load_or_report_every_error_as_file_key_message(text):
    path = fresh_dir() / "config.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    shape = re.compile(rf"{re.escape(str(path))}:[^\n\r]*: \S[^\n\r]*")
    try:
        config = load_config(str(path), env={"HOME": str(path.parent)})
    except ConfigError as exc:
        assert exc.errors
        for line in exc.errors:
            assert shape.fullmatch(line), f"not one FILE:key: message line: {line!r}"
        COUNTS["config"].update(inputs=1, rejected=1)
        return
    engine = DetectionEngine(config)
    for agent in [*config.agents, "main"]:
        engine.settings_for(agent)
    COUNTS["config"].update(inputs=1, accepted=1)


def test_long_variant_reached_its_input_counts():
    if not LONG:
        pytest.skip("long variant: CLAWWATCH_FUZZ_LONG=1")
    for name, minimum in LONG_MINIMUM.items():
        assert COUNTS[name]["inputs"] >= minimum, (name, COUNTS[name])
    assert sum(c["inputs"] for c in COUNTS.values()) >= 100_000

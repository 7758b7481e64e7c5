"""A first scan's history read by reader processes (``sources.history_split``), in both
storage eras.

The monitor folds what a scan reading every transcript or row itself folds, in the same
order: sessions, runs, timelines, records, source counts and checkpoints are equal, whole or
in small parts, with a reader killed half-way, a session that turns running, or a monitor
that stops being quiet. What is appended to a transcript or a session after its reader read
it is read once. Readers end with their source and with the process that started them.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

import psutil
import pytest
from conftest import generate_state_dirs
from test_transcript_light import _middle_time, without_read_time

from monitor.act.processes import wait_gone
from monitor.detect.engine import DetectionEngine
from monitor.events import CountedHistory, GatewayNotice, SourceNotice
from monitor.pipeline import Monitor
from monitor.records import as_json_list
from monitor.snapshot_feed import SnapshotFeed
from monitor.sources import gateway_log, history_split, log_ahead, split_source
from monitor.sources.legacy import LegacySessionsSource
from monitor.sources.sourceset import SourceSet
from monitor.sources.transcript_light import CountOnly


@pytest.fixture(autouse=True)
def give_from_the_start(monkeypatch):
    """The generated dir has 80 transcripts: readers are given paths from the second on."""
    monkeypatch.setattr(history_split, "LOOKAHEAD_KEYS", 1)


class Scan:
    """A quiet first scan of ``state_dir`` (one era) as the board runs it: a
    ``SnapshotFeed`` between the sources and the monitor."""

    def __init__(self, state_dir, since: float, readers: int, *, part_bytes: int = 0,
                 poll_budget: int = 0, log: bool = False) -> None:
        self.sources = SourceSet(state_dir=str(state_dir), history_readers=readers,
                                 log_path=str(state_dir / "logs" / "openclaw.log")
                                 if log else None)
        for source in self.sources.sources:
            source.min_split_bytes = 0
            if part_bytes:
                source.split_part_bytes = part_bytes
            if poll_budget and source.kind != "gateway-log":
                source.poll_budget_bytes = poll_budget
        #: Per session: ``CountedHistory`` records given, and events read light here.
        self.summed: dict[str, int] = {}
        self.light: dict[str, int] = {}
        poll = self.sources.poll

        def counting_poll() -> list:
            events = poll()
            for event in events:
                if isinstance(event, CountedHistory):
                    self.summed[event.session_id] = self.summed.get(event.session_id, 0) + 1
                elif getattr(event, "counted_only", False):
                    self.light[event.session_id] = self.light.get(event.session_id, 0) + 1
            return events

        self.sources.poll = counting_poll
        self.feed = SnapshotFeed(self.sources)
        self.monitor = Monitor(self.feed, DetectionEngine(), detect_since=since)
        self.feed.is_history = self.monitor.only_counts
        self.monitor.quiet = True
        self.records: list[dict] = []

    def step(self) -> None:
        self.records += as_json_list(self.monitor.step())

    def run(self) -> Scan:
        previous = -1
        while True:
            self.step()
            total = sum(s.events + s.errors for s in self.sources.sources)
            if total == previous and not self.feed.behind and not self.feed.backlog:
                return self
            previous = total

    def folded(self) -> dict:
        monitor = self.monitor
        return {
            "report": monitor.report(),
            "sources": self.sources.summaries(),
            "sessions": {sid: (s.tool_calls, dict(s.tools), s.token_counts(), s.cost,
                               s.assistant_messages, s.errors, s.first_ts, s.last_ts,
                               s.run_id, s.model, s.from_transcript,
                               [f.as_json() for f in s.findings])
                         for sid, s in monitor.sessions.items()},
            "runs": list(monitor.run_to_session.items()),
            "timelines": {sid: (line.count, line.unread, line.usage)
                          for sid, line in self.feed.timelines.items()},
            "checkpoint": self.sources.checkpoint(),
            "read": (getattr(self.sharing, "_rows_read", None),
                     getattr(self.sharing, "_decoded_bytes_read", None)),
        }

    @property
    def sharing(self):
        """The source that shares its history (the era's transcripts or database)."""
        return next(s for s in self.sources.sources if s.kind != "gateway-log")

    def session_of(self, key: str) -> str:
        """The session of what a reader was given: a transcript's, or the session itself."""
        return getattr(self.sharing, "_session_ids", {}).get(key, key)

    def close(self) -> None:
        self.sources.close()


def _scan(state_dir, since, readers, **options) -> tuple[dict, list[dict], dict]:
    scan = Scan(state_dir, since, readers, **options).run()
    try:
        return scan.folded(), without_read_time(scan.records), scan.summed
    finally:
        scan.close()


ERAS = pytest.mark.parametrize("era", ["legacy", "sqlite"])
#: A reply in 2099: after any cutoff.
ENTRY = {"type": "message", "timestamp": "2099-01-01T00:00:00.000Z",
         "message": {"role": "assistant", "timestamp": 4070908800000, "content": [],
                     "usage": {"input": 7, "output": 3, "totalTokens": 10},
                     "stopReason": "stop"}}


@ERAS
@pytest.mark.parametrize("options", [{}, {"part_bytes": 2048, "poll_budget": 16384}],
                         ids=["whole", "small parts"])
def test_a_scan_with_a_reader_folds_what_one_reading_everything_folds(
        generated_state_dirs, era, options, monkeypatch):
    state_dir = generated_state_dirs / era
    since = _middle_time(generated_state_dirs)
    options = {**options, "log": True}
    if "part_bytes" in options:
        monkeypatch.setattr(gateway_log, "AHEAD_STEP_BYTES", 4096)
    with monkeypatch.context() as unsummed:
        unsummed.setattr(split_source.SharesHistory, "_summing", lambda *_: None)
        alone, alone_records, none_summed = _scan(state_dir, since, 0, **options)
    summed_alone, summed_alone_records, _ = _scan(state_dir, since, 0, **options)
    assert summed_alone == alone
    assert summed_alone_records == alone_records
    take = history_split.HistorySplit.take
    parts_before_the_last = []

    def counting_take(split, key, timeout):
        part = take(split, key, timeout)
        if part and not part.last:
            parts_before_the_last.append(key)
        return part

    monkeypatch.setattr(history_split.HistorySplit, "take", counting_take)
    add = log_ahead.ParsedAhead.add
    parsed_ahead: list[int] = []
    monkeypatch.setattr(log_ahead.ParsedAhead, "add", lambda kept, events, *rest: (
        parsed_ahead.append(sum(isinstance(e, GatewayNotice) for e in events)),
        add(kept, events, *rest))[1])
    split, split_records, summed = _scan(state_dir, since, 1, **options)
    log_lines = (state_dir / "logs" / "openclaw.log").read_bytes().count(b"\n")
    assert sum(parsed_ahead) == log_lines, "the log was parsed while the reader read"
    assert (len([n for n in parsed_ahead if n]) > 10) == ("part_bytes" in options)
    assert not none_summed
    assert len(summed) > 20, summed         # most of the 80 sessions came from the reader
    assert bool(parts_before_the_last) == ("part_bytes" in options)
    assert split == alone
    assert split_records == alone_records


@ERAS
def test_a_reader_killed_half_way_leaves_the_rest_to_the_source(generated_state_dirs, era,
                                                                monkeypatch):
    state_dir = generated_state_dirs / era
    since = _middle_time(generated_state_dirs)
    alone, alone_records, _ = _scan(state_dir, since, 0, part_bytes=4096)
    take = history_split.HistorySplit.take
    killed: list[int] = []

    def take_then_kill(split, path, timeout):
        part = take(split, path, timeout)
        if part and not killed and any(isinstance(e, CountedHistory) for e in part.events):
            for reader in split._readers:
                killed.append(reader._process.pid)
                reader._process.kill()
        return part

    monkeypatch.setattr(history_split.HistorySplit, "take", take_then_kill)
    split, split_records, summed = _scan(state_dir, since, 1, part_bytes=4096)
    assert killed and summed
    assert split == alone
    assert split_records == alone_records


@ERAS
def test_a_session_that_turns_running_is_read_by_the_source_in_full(generated_state_dirs, era,
                                                                   monkeypatch):
    """Its index says running before the source reaches it: the reader's sums of it are not
    taken, and the source reads it as it reads a running session."""
    state_dir = generated_state_dirs / era
    since = _middle_time(generated_state_dirs)
    reader_of = history_split.HistorySplit.reader_of
    turned: list[str] = []
    scan = Scan(state_dir, since, 1)

    def turning_running(split, key):
        given = reader_of(split, key)
        if given and not turned:
            turned.append(scan.session_of(key))
            scan.sharing.running_sessions.add(turned[0])
        return given

    monkeypatch.setattr(history_split.HistorySplit, "reader_of", turning_running)
    try:
        scan.run()
        assert turned and len(scan.summed) > 20
        assert turned[0] not in scan.summed and turned[0] not in scan.light
        assert scan.monitor.sessions[turned[0]].tool_calls > 0
    finally:
        scan.close()


@ERAS
def test_a_monitor_that_stops_being_quiet_reads_the_rest_itself(generated_state_dirs, era):
    state_dir = generated_state_dirs / era
    since = _middle_time(generated_state_dirs)
    alone = Scan(state_dir, since, 0)
    split = Scan(state_dir, since, 1, part_bytes=4096)
    try:
        while not split.summed:
            split.step()
        summed_while_quiet = dict(split.summed)
        for scan in (alone, split):
            scan.monitor.quiet = False
            scan.run()
        assert split.summed == summed_while_quiet and split.sharing._split is None
        assert split.folded() == alone.folded()
    finally:
        alone.close()
        split.close()


def test_lines_appended_after_the_reader_read_a_transcript_are_read_once(tmp_path, monkeypatch):
    dirs = generate_state_dirs(tmp_path / "dirs")
    state_dir = dirs / "legacy"
    since = _middle_time(dirs)
    take = history_split.HistorySplit.take
    appended: dict[str, int] = {}

    def take_then_append(split, path, timeout):
        part = take(split, path, timeout)
        if part and part.last and part.suspended and len(appended) < 3:
            with open(path, "a") as handle:
                handle.write(json.dumps(ENTRY) + "\n")
            appended[path] = os.path.getsize(path)
        return part

    monkeypatch.setattr(history_split.HistorySplit, "take", take_then_append)
    scan = Scan(state_dir, since, 1).run()
    try:
        legacy = next(s for s in scan.sources.sources if s.kind == "jsonl")
        assert len(appended) == 3
        for path, size in appended.items():
            sid = legacy._session_ids[path]
            assert scan.monitor.sessions[sid].last_ts == 4070908800.0
            assert scan.sources.checkpoint()[f"jsonl:{legacy.path}"]["files"][path][
                "offset"] == size
        before = {sid: s.assistant_messages for sid, s in scan.monitor.sessions.items()}
        with open(next(iter(appended)), "a") as handle:
            handle.write(json.dumps(ENTRY) + "\n")
        scan.run()
        grown = {sid: s.assistant_messages - before[sid]
                 for sid, s in scan.monitor.sessions.items() if s.assistant_messages
                 != before[sid]}
        assert grown == {legacy._session_ids[next(iter(appended))]: 1}
    finally:
        scan.close()


def _readers_of(pid: int) -> list[psutil.Process]:
    return [p for p in psutil.Process(pid).children(recursive=True)
            if "history_reader" in " ".join(p.cmdline())]


def test_readers_end_with_their_source(generated_state_dirs):
    scan = Scan(generated_state_dirs / "legacy", _middle_time(generated_state_dirs), 1)
    scan.step()
    readers = _readers_of(os.getpid())
    assert readers
    scan.close()
    assert not wait_gone(readers, 2.0)


def test_readers_end_with_the_process_that_started_them(generated_state_dirs):
    script = (
        "import sys, time\n"
        "from monitor.sources import history_split\n"
        "history_split.LOOKAHEAD_KEYS = 1\n"
        "from monitor.detect.engine import DetectionEngine\n"
        "from monitor.pipeline import Monitor\n"
        "from monitor.sources.sourceset import SourceSet\n"
        "sources = SourceSet(state_dir=sys.argv[1], history_readers=1)\n"
        "for s in sources.sources: s.min_split_bytes = 0\n"
        "monitor = Monitor(sources, DetectionEngine(), detect_since=float(sys.argv[2]))\n"
        "monitor.quiet = True\n"
        "monitor.step()\n"
        "print('started', flush=True)\n"
        "time.sleep(60)\n")
    owner = subprocess.Popen(
        [sys.executable, "-c", script, str(generated_state_dirs / "legacy"),
         str(_middle_time(generated_state_dirs))],
        stdout=subprocess.PIPE, text=True, cwd=str(os.path.dirname(os.path.dirname(
            os.path.abspath(__file__)))))
    try:
        assert owner.stdout.readline().strip() == "started"
        readers = _readers_of(owner.pid)
        assert readers
        owner.kill()
        owner.wait()
        assert not wait_gone(readers, 2.0)
    finally:
        owner.kill()
        owner.wait()


def test_rows_added_after_the_reader_read_a_session_are_read_once(tmp_path, monkeypatch):
    dirs = generate_state_dirs(tmp_path / "dirs")
    since = _middle_time(dirs)
    db = dirs / "sqlite" / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    take = history_split.HistorySplit.take
    added: dict[str, int] = {}

    def add_row(sid: str) -> int:
        with sqlite3.connect(db) as conn:
            seq = conn.execute("SELECT max(seq) FROM transcript_events WHERE session_id = ?",
                               (sid,)).fetchone()[0] + 1
            conn.execute("INSERT INTO transcript_events (session_id, seq, event_json, "
                         "created_at) VALUES (?, ?, ?, 0)", (sid, seq, json.dumps(ENTRY)))
        return seq

    def take_then_add(split, sid, timeout):
        part = take(split, sid, timeout)
        if part and part.last and len(added) < 3:
            added[sid] = add_row(sid)
        return part

    monkeypatch.setattr(history_split.HistorySplit, "take", take_then_add)
    scan = Scan(dirs / "sqlite", since, 1).run()
    try:
        assert len(added) == 3
        cursors = scan.sources.checkpoint()[f"sqlite:{scan.sharing.path}"]["seq"]
        for sid, seq in added.items():
            assert scan.monitor.sessions[sid].last_ts == 4070908800.0
            assert cursors[sid] == seq
        before = {sid: s.assistant_messages for sid, s in scan.monitor.sessions.items()}
        add_row(next(iter(added)))
        scan.run()
        grown = {sid: s.assistant_messages - before[sid]
                 for sid, s in scan.monitor.sessions.items() if s.assistant_messages
                 != before[sid]}
        assert grown == {next(iter(added)): 1}
    finally:
        scan.close()


@pytest.mark.timeout(60)
def test_a_reader_that_sends_nothing_for_too_long_is_given_up(generated_state_dirs,
                                                              monkeypatch):
    """A reader stopped (SIGSTOP) after its first part: the source waits for it at most
    ``READER_PATIENCE_SECONDS``, then reads the rest itself, and folds what it would have
    folded alone."""
    state_dir = generated_state_dirs / "legacy"
    since = _middle_time(generated_state_dirs)
    alone, alone_records, _ = _scan(state_dir, since, 0, part_bytes=4096)
    monkeypatch.setattr(split_source, "READER_PATIENCE_SECONDS", 0.5)
    take = history_split.HistorySplit.take
    stopped: list[psutil.Process] = []

    def take_then_stop(split, key, timeout):
        part = take(split, key, timeout)
        if part and not stopped:
            for reader in split._readers:
                process = psutil.Process(reader._process.pid)
                process.suspend()
                stopped.append(process)
        return part

    monkeypatch.setattr(history_split.HistorySplit, "take", take_then_stop)
    scan = Scan(state_dir, since, 1, part_bytes=4096)
    try:
        scan.run()
        assert stopped and scan.sharing._split is None
        assert scan.folded() == alone
        assert without_read_time(scan.records) == alone_records
        assert not wait_gone(stopped, 2.0)     # given up: killed, stopped or not
    finally:
        scan.close()


def test_a_quiet_source_sums_each_run_of_history_where_its_first_entry_was(tmp_path):
    """Read by the source itself while the monitor is quiet, each run of counted-only
    entries becomes one ``CountedHistory``, in its place before what breaks the run (a bad
    line, an entry of the present), and the source counts every event summed."""
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    old = {**ENTRY, "timestamp": "2026-11-29T14:00:00.000Z",
           "message": {**ENTRY["message"], "timestamp": "2026-11-29T14:00:00.000Z"}}
    lines = [json.dumps(old), json.dumps(old), "{not json", json.dumps(old), json.dumps(ENTRY)]
    (sessions / "s1.jsonl").write_text("\n".join(lines) + "\n")
    source = LegacySessionsSource(str(sessions), "main")
    source.count_only = CountOnly(4e9, lambda session_id: True)
    source.note_quiet(True)
    out = [event for event in source.poll() if not isinstance(event, SourceNotice)]
    assert [type(event).__name__ for event in out] == [
        "CountedHistory", "SourceError", "CountedHistory", "AssistantMessage"]
    assert [event.assistant_messages for event in out[::2][:2]] == [2, 1]
    assert out[0].origin.endswith("s1.jsonl@0")
    assert (source.events, source.errors, source.counted_sum) == (4, 1, None)
    source.note_quiet(False)
    assert source._summing("s1", []) is None
    source.close()

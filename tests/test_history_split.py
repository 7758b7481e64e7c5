"""A first scan's history read by reader processes (``sources.history_split``).

The monitor folds what a scan reading every file itself folds, in the same order: sessions,
runs, timelines, records, source counts and checkpoints are equal, whole files or in small
parts, with a reader killed half-way, a session that turns running, or a monitor that stops
being quiet. What is appended to a file after its reader read it is read once. Readers end
with their source and with the process that started them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import psutil
import pytest
from conftest import generate_state_dirs
from test_transcript_light import _middle_time, without_read_time

from monitor.detect.engine import DetectionEngine
from monitor.events import CountedHistory
from monitor.pipeline import Monitor
from monitor.records import as_json_list
from monitor.snapshot_feed import SnapshotFeed
from monitor.sources import history_split
from monitor.sources.sourceset import SourceSet


@pytest.fixture(autouse=True)
def give_from_the_start(monkeypatch):
    """The generated dir has 80 transcripts: readers are given paths from the second on."""
    monkeypatch.setattr(history_split, "LOOKAHEAD_PATHS", 1)


class Scan:
    """A quiet first scan of ``state_dir``'s legacy era as the board runs it: a
    ``SnapshotFeed`` between the sources and the monitor."""

    def __init__(self, state_dir, since: float, readers: int, *, part_bytes: int = 0,
                 poll_budget: int = 0) -> None:
        self.sources = SourceSet(state_dir=str(state_dir), history_readers=readers)
        for source in self.sources.sources:
            source.min_split_bytes = 0
            if part_bytes:
                source.split_part_bytes = part_bytes
            if poll_budget:
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
        }

    def close(self) -> None:
        self.sources.close()


def _scan(state_dir, since, readers, **options) -> tuple[dict, list[dict], dict]:
    scan = Scan(state_dir, since, readers, **options).run()
    try:
        return scan.folded(), without_read_time(scan.records), scan.summed
    finally:
        scan.close()


@pytest.mark.parametrize("options", [{}, {"part_bytes": 2048, "poll_budget": 16384}],
                         ids=["whole files", "small parts"])
def test_a_scan_with_a_reader_folds_what_one_reading_every_file_folds(
        generated_state_dirs, options):
    state_dir = generated_state_dirs / "legacy"
    since = _middle_time(generated_state_dirs)
    alone, alone_records, none_summed = _scan(state_dir, since, 0, **options)
    split, split_records, summed = _scan(state_dir, since, 1, **options)
    assert not none_summed
    assert len(summed) > 20, summed         # most of the 80 sessions came from the reader
    assert split == alone
    assert split_records == alone_records


def test_a_reader_killed_half_way_leaves_the_rest_to_the_source(generated_state_dirs,
                                                                monkeypatch):
    state_dir = generated_state_dirs / "legacy"
    since = _middle_time(generated_state_dirs)
    alone, alone_records, _ = _scan(state_dir, since, 0, part_bytes=4096)
    take = history_split.HistorySplit.take
    killed: list[int] = []

    def take_then_kill(split, path, timeout):
        part = take(split, path, timeout)
        if part and not killed:
            for reader in split._readers:
                killed.append(reader._process.pid)
                reader._process.kill()
        return part

    monkeypatch.setattr(history_split.HistorySplit, "take", take_then_kill)
    split, split_records, summed = _scan(state_dir, since, 1, part_bytes=4096)
    assert killed and summed
    assert split == alone
    assert split_records == alone_records


def test_a_session_that_turns_running_is_read_by_the_source_in_full(generated_state_dirs,
                                                                   monkeypatch):
    """Its index says running before the source reaches its file: the reader's sums of it
    are not taken, and the source reads it as it reads a running session."""
    state_dir = generated_state_dirs / "legacy"
    since = _middle_time(generated_state_dirs)
    reader_of = history_split.HistorySplit.reader_of
    turned: list[str] = []
    scan = Scan(state_dir, since, 1)
    legacy = next(s for s in scan.sources.sources if s.kind == "jsonl")

    def turning_running(split, path):
        given = reader_of(split, path)
        if given and not turned:
            turned.append(legacy._session_ids[path])
            legacy.running_sessions.add(turned[0])
        return given

    monkeypatch.setattr(history_split.HistorySplit, "reader_of", turning_running)
    try:
        scan.run()
        assert turned and len(scan.summed) > 20
        assert turned[0] not in scan.summed and turned[0] not in scan.light
        assert scan.monitor.sessions[turned[0]].tool_calls > 0
    finally:
        scan.close()


def test_a_monitor_that_stops_being_quiet_reads_the_rest_itself(generated_state_dirs):
    state_dir = generated_state_dirs / "legacy"
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
        legacy = next(s for s in split.sources.sources if s.kind == "jsonl")
        assert split.summed == summed_while_quiet and legacy._split is None
        assert split.folded() == alone.folded()
    finally:
        alone.close()
        split.close()


def test_lines_appended_after_the_reader_read_a_file_are_read_once(tmp_path, monkeypatch):
    dirs = generate_state_dirs(tmp_path / "dirs")
    state_dir = dirs / "legacy"
    since = _middle_time(dirs)
    take = history_split.HistorySplit.take
    appended: dict[str, int] = {}
    entry = {"type": "message", "timestamp": "2099-01-01T00:00:00.000Z",
             "message": {"role": "assistant", "timestamp": 4070908800000, "content": [],
                         "usage": {"input": 7, "output": 3, "totalTokens": 10},
                         "stopReason": "stop"}}

    def take_then_append(split, path, timeout):
        part = take(split, path, timeout)
        if part and part.last and part.suspended and len(appended) < 3:
            with open(path, "a") as handle:
                handle.write(json.dumps(entry) + "\n")
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
            handle.write(json.dumps(entry) + "\n")
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
    _gone, alive = psutil.wait_procs(readers, timeout=2)
    assert not alive


def test_readers_end_with_the_process_that_started_them(generated_state_dirs):
    script = (
        "import sys, time\n"
        "from monitor.sources import history_split\n"
        "history_split.LOOKAHEAD_PATHS = 1\n"
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
        started = time.monotonic()
        _gone, alive = psutil.wait_procs(readers, timeout=2)
        assert not alive, time.monotonic() - started
    finally:
        owner.kill()
        owner.wait()

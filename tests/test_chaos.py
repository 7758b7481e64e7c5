"""Exactly-once ingest under chaos, and across monitor restarts.

``test_exactly_once_under_chaos`` runs tests/chaos_writer.py as a separate process that appends
``CLAWWATCH_CHAOS_RECORDS`` (default 200,000) uniquely-identified records to legacy transcripts,
a gateway log and a WAL-mode agent DB while rotating, truncating, deleting and checkpointing
underneath. Two monitors read the same files at the same time:

* in this process, ``SourceSet`` + ``Monitor`` polled in a loop, restarted twice from a
  ``CheckpointStore`` (close everything, reopen from the saved file);
* ``python -m monitor watch --headless --json --from-start --checkpoint F``, stopped with SIGTERM
  and started again with the same checkpoint at the same two points.

While both are stopped, the writer renames the log and a transcript, so rotation during a
restart is always exercised; otherwise it only appends while they restart (a file deleted, or
created and rotated away, while no monitor runs cannot be read by anyone). Both monitors must see
every id exactly once: tool-call ids for transcripts, the ``id=`` in each log line, and
``(session_id, seq)`` for SQLite rows, by count and by id.

The writer paces itself to the slower monitor (at most ``MAX_LAG_RECORDS`` ahead of it), and
each restart waits until both have read what was written before it, so the test asks for
exactly-once from monitors that keep up, on a machine of any speed; how long the writer
waited for them is printed.

The ``*_while_stopped`` tests pin each rotation kind during a restart deterministically.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from monitor.events import GatewayNotice, SourceError, ToolCall
from monitor.pipeline import Monitor
from monitor.records import as_json_list
from monitor.sources.checkpoint import CheckpointStore
from monitor.sources.sourceset import SourceSet
from monitor.sources.tail import FileFollower

REPO = Path(__file__).resolve().parent.parent
WRITER = REPO / "tests" / "chaos_writer.py"
RECORDS = int(os.environ.get("CLAWWATCH_CHAOS_RECORDS", "200000"))
WRITER_RATE = float(os.environ.get("CLAWWATCH_CHAOS_RATE", "8000"))
POLL_SECONDS = 0.05
RESTART_AT = (0.35, 0.7)
DRAIN_SECONDS = 45.0
DUPLICATE_WATCH_SECONDS = 2.5
HANDSHAKE_SECONDS = 15.0
#: How far the writer may run ahead of the slower reader, in records (half a second at the
#: default rate): well below a transcript generation's share, so readers open every one.
MAX_LAG_RECORDS = 4000
LOG_ID_RE = re.compile(r"\bid=(g\d+)\b")
STREAMS = ("jsonl", "log", "sqlite")


# ----------------------------------------------------------------------------- bookkeeping

class Ledger:
    """Every id seen per stream, how often, and the duplicates. Ids are kept as strings (not
    tracked by the garbage collector, so a million of them do not slow the poll loop); a
    SQLite id is its call id ``s:<session_id>:<seq>``."""

    def __init__(self) -> None:
        self.seen: dict[str, set] = {s: set() for s in STREAMS}
        self.count: Counter = Counter()
        self.duplicates: dict[str, list] = {s: [] for s in STREAMS}

    def add(self, stream: str, key) -> None:
        self.count[stream] += 1
        if key in self.seen[stream]:
            self.duplicates[stream].append(key)
        else:
            self.seen[stream].add(key)

    def add_call_id(self, call_id: str) -> None:
        if call_id.startswith("j"):
            self.add("jsonl", call_id)
        elif call_id.startswith("s:"):
            self.add("sqlite", call_id)
        else:
            raise AssertionError(f"a tool call the writer never wrote: {call_id!r}")

    @property
    def total(self) -> int:
        return sum(self.count.values())

    def complete(self, expected: dict[str, set], streams=STREAMS) -> bool:
        return all(len(self.seen[s]) >= len(expected[s]) for s in streams)

    def problems(self, expected: dict[str, set], who: str, streams=STREAMS) -> list[str]:
        found = []
        for stream in streams:
            want, got = expected[stream], self.seen[stream]
            lost, extra = want - got, got - want
            dups = self.duplicates[stream]
            if self.count[stream] != len(want) or lost or extra or dups:
                found.append(
                    f"{who} {stream}: expected {len(want)}, got {self.count[stream]} records "
                    f"({len(lost)} lost e.g. {sorted(lost)[:3]}, {len(dups)} duplicated e.g. "
                    f"{dups[:3]}, {len(extra)} unknown e.g. {sorted(extra)[:3]})")
        return found


def expected_ids(summary: dict) -> dict[str, set]:
    return {
        "jsonl": {f"j{n:07d}" for n in range(summary["jsonl"])},
        "log": {f"g{n:07d}" for n in range(summary["log"])},
        "sqlite": {f"s:{sid}:{seq}" for sid, last in summary["sqlite_last_seq"].items()
                   for seq in range(1, last + 1)},
    }


# ------------------------------------------------------------------------------- monitors

class RecordingSources:
    """A ``SourceSet`` stand-in for ``Monitor`` that also hands each raw event to ``observe``
    (log lines produce no output record, so they are counted at this level)."""

    def __init__(self, inner: SourceSet, observe) -> None:
        self.inner = inner
        self.observe = observe

    def poll(self) -> list:
        events = self.inner.poll()
        for event in events:
            self.observe(event)
        return events

    def __getattr__(self, name):
        return getattr(self.inner, name)


class InProcessMonitor:
    """``SourceSet`` + ``Monitor`` in this process, restartable from a checkpoint file."""

    def __init__(self, state_dir: Path, log_path: Path, checkpoint: Path) -> None:
        self.state_dir, self.log_path = state_dir, log_path
        self.store = CheckpointStore(str(checkpoint))
        self.events = Ledger()
        self.records = Ledger()
        self.errors: list[SourceError] = []
        self.bad_origins: list[str] = []
        self.sources: SourceSet | None = None
        self.monitor: Monitor | None = None
        self.start()

    def start(self) -> None:
        resume = self.store.load()
        self.sources = SourceSet(state_dir=str(self.state_dir), log_path=str(self.log_path),
                                 resume=resume)
        self.monitor = Monitor(RecordingSources(self.sources, self._observe))

    def stop(self) -> None:
        assert self.sources is not None
        self.store.save(self.sources.checkpoint())
        self.sources.close()
        self.sources = self.monitor = None

    def step(self) -> None:
        assert self.monitor is not None
        for record in as_json_list(self.monitor.step()):
            if record["type"] == "tool_call":
                self.records.add_call_id(record["call_id"])

    def _observe(self, event) -> None:
        if isinstance(event, ToolCall):
            self.events.add_call_id(event.call_id)
            if event.call_id.startswith("s:"):
                _, sid, seq = event.call_id.rsplit(":", 2)
                if f"#{sid}:{seq}#" not in event.origin:
                    self.bad_origins.append(f"{event.call_id} from {event.origin}")
        elif isinstance(event, GatewayNotice):
            match = LOG_ID_RE.search(event.message)
            if match is None:
                raise AssertionError(f"a log line the writer never wrote: {event.message!r}")
            self.events.add("log", match.group(1))
        elif isinstance(event, SourceError):
            self.errors.append(event)


class CliMonitor:
    """``python -m monitor watch --headless --json --from-start --checkpoint F`` as a child."""

    def __init__(self, workdir: Path, state_dir: Path, log_path: Path, checkpoint: Path) -> None:
        self.workdir = workdir
        self.argv = [sys.executable, "-m", "monitor", "watch", "--headless", "--json",
                     "--from-start", "--state-dir", str(state_dir), "--log", str(log_path),
                     "--checkpoint", str(checkpoint), "--poll", "0.25"]
        self.records = Ledger()
        self.errors: list[dict] = []
        self.runs = 0
        self.proc: subprocess.Popen | None = None
        self.out_path: Path | None = None
        self.offset = 0
        self.lines_this_run = 0

    def start(self) -> None:
        self.runs += 1
        self.out_path = self.workdir / f"watch-{self.runs}.jsonl"
        err_path = self.workdir / f"watch-{self.runs}.err"
        with open(self.out_path, "wb") as out, open(err_path, "wb") as err:
            self.proc = subprocess.Popen(self.argv, stdout=out, stderr=err, cwd=str(REPO))
        self.offset = 0
        self.lines_this_run = 0

    def collect(self) -> None:
        assert self.out_path is not None
        with open(self.out_path, "rb") as handle:
            handle.seek(self.offset)
            data = handle.read()
        end = data.rfind(b"\n") + 1
        self.offset += end
        for raw in data[:end].splitlines():
            record = json.loads(raw)
            self.lines_this_run += 1
            if record["type"] == "tool_call":
                self.records.add_call_id(record["call_id"])
            elif record["type"] == "error":
                self.errors.append(record)

    def stop(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=30)
        self.collect()
        stderr = (self.workdir / f"watch-{self.runs}.err").read_text()
        assert code == 0, f"watch exited {code}: {stderr[-2000:]}"
        assert "Traceback" not in stderr, stderr[-2000:]

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class WriterControl:
    """The hold/down handshake of tests/chaos_writer.py."""

    def __init__(self, root: Path, writer: subprocess.Popen) -> None:
        self.dir = root / "control"
        self.writer = writer

    def set(self, flag: str) -> dict[str, int]:
        """Raise ``flag`` and wait for its ack: the records written so far, per stream."""
        (self.dir / flag).write_text(flag)
        ack = self.dir / f"{flag}.ack"
        self._wait_for(ack.exists, f"acknowledge {flag}")
        return json.loads(ack.read_text())

    def report_read(self, counts: dict[str, int]) -> None:
        """Tell the writer how many records of each stream the slower reader has seen."""
        temp = self.dir / ".read.tmp"
        temp.write_text(json.dumps(counts))
        temp.replace(self.dir / "read")

    def clear(self, flag: str) -> None:
        """Remove the flag and wait until the writer has seen it go (its ack is removed), so
        the next ``set`` cannot be answered by a stale ack."""
        (self.dir / flag).unlink()
        self._wait_for(lambda: not (self.dir / f"{flag}.ack").exists(), f"release {flag}")

    def finish(self) -> None:
        """Let the writer exit once its records are written (it waits for this)."""
        (self.dir / "finish").write_text("finish")

    def _wait_for(self, condition, what: str) -> None:
        deadline = time.monotonic() + HANDSHAKE_SECONDS
        while not condition():
            code = self.writer.poll()
            assert code is None, f"the writer exited ({code}) before it would {what}"
            assert time.monotonic() < deadline, f"the writer did not {what}"
            time.sleep(0.005)


def wait_until(condition, seconds: float, what: str, tick=None) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        if tick is not None:
            tick()
        time.sleep(POLL_SECONDS)


# ---------------------------------------------------------------------------------- chaos

@pytest.mark.timeout(max(300, int(RECORDS / WRITER_RATE * 4) + 120))
def test_exactly_once_under_chaos(tmp_path: Path) -> None:
    root = tmp_path / "chaos"
    state_dir, log_path = root / "state", root / "logs" / "gw.log"
    writer = subprocess.Popen(
        [sys.executable, str(WRITER), "--root", str(root), "--records", str(RECORDS),
         "--rate", str(WRITER_RATE), "--max-lag-records", str(MAX_LAG_RECORDS)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    cli = CliMonitor(tmp_path, state_dir, log_path, tmp_path / "cli-checkpoint.json")
    try:
        assert writer.stdout is not None
        assert writer.stdout.readline().strip() == "ready", writer.stderr.read()
        control = WriterControl(root, writer)
        local = InProcessMonitor(state_dir, log_path, tmp_path / "checkpoint.json")
        cli.start()
        started = time.monotonic()
        restart_points = list(RESTART_AT)
        restarts = []
        last_tick = [time.monotonic(), 0.0]

        def tick() -> None:
            now = time.monotonic()
            last_tick[1] = max(last_tick[1], now - last_tick[0])
            last_tick[0] = now
            local.step()
            cli.collect()
            control.report_read(read_by_both(local, cli))

        while writer.poll() is None:
            tick()
            if restart_points and local.events.total >= restart_points[0] * RECORDS:
                restart_points.pop(0)
                restarts.append(restart_both(local, cli, control))
                last_tick[0] = time.monotonic()
                if not restart_points:
                    control.finish()
            time.sleep(POLL_SECONDS)
        writer_out, writer_err = writer.communicate()
        assert writer.returncode == 0 and writer_out.strip() == "done", writer_err
        written_in = time.monotonic() - started

        summary = json.loads((root / "summary.json").read_text())
        expected = expected_ids(summary)
        transcript_streams = ("jsonl", "sqlite")
        drain_deadline = time.monotonic() + DRAIN_SECONDS
        while not (local.events.complete(expected)
                   and cli.records.complete(expected, transcript_streams)):
            if time.monotonic() > drain_deadline:
                break
            tick()
            time.sleep(POLL_SECONDS)
        drained_in = time.monotonic() - started
        quiet_until = time.monotonic() + DUPLICATE_WATCH_SECONDS
        while time.monotonic() < quiet_until:
            tick()
            time.sleep(POLL_SECONDS)
        cli.stop()
        local.stop()
    finally:
        cli.kill()
        if writer.poll() is None:
            writer.kill()
            writer.wait()

    assert restart_points == [], "the writer finished before both restarts happened"
    problems = (local.events.problems(expected, "in-process events")
                + [f"in-process error: {e}" for e in local.errors[:5]]
                + [f"watch error: {e}" for e in cli.errors[:5]]
                + local.records.problems(expected, "in-process records", transcript_streams)
                + cli.records.problems(expected, "watch CLI", transcript_streams))
    assert not problems, "\n".join(problems) + (
        f"\nlongest gap between in-process polls: {last_tick[1]:.2f}s (the writer keeps "
        "each file generation >= 1 s; a longer stall of this machine can lose a generation)"
        "\nwriter's operations:\n") + (root / "ops.log").read_text()[-3000:]
    assert local.bad_origins == [], local.bad_origins[:5]
    ops = summary["ops"]
    assert ops["log"]["rename_while_down"] == 2 and ops["jsonl"]["rename_while_down"] == 2
    assert min(ops["log"][op] for op in ("rename", "copytruncate", "delete")) >= 1, ops
    assert min(ops["jsonl"][op] for op in ("rename", "rename_mid_line", "delete")) >= 1, ops
    assert ops["wal_checkpoints"]["TRUNCATE"] + ops["wal_checkpoints"]["RESTART"] > 10, ops
    assert summary["sqlite_zstd_rows"] > 0
    print(f"\nchaos: {RECORDS} records (jsonl {summary['jsonl']}, log {summary['log']}, "
          f"sqlite {summary['sqlite']} incl. {summary['sqlite_zstd_rows']} zstd) written in "
          f"{written_in:.1f}s (waiting {summary['waited_for_readers_seconds']:.1f}s for the "
          f"monitors), drained by both monitors at {drained_in:.1f}s; longest poll gap "
          f"{last_tick[1]:.2f}s; restarts "
          f"(hold+stop+restart, s): {[round(r, 2) for r in restarts]}; ops {ops}")


def read_by_both(local: InProcessMonitor, cli: CliMonitor) -> dict[str, int]:
    """Records of each stream the slower monitor has seen (the watch CLI prints nothing per
    log line, so the log's count is the in-process monitor's)."""
    return {"jsonl": min(len(local.events.seen["jsonl"]), len(cli.records.seen["jsonl"])),
            "sqlite": min(len(local.events.seen["sqlite"]), len(cli.records.seen["sqlite"])),
            "log": len(local.events.seen["log"])}


def restart_both(local: InProcessMonitor, cli: CliMonitor, control: WriterControl) -> float:
    """Stop both monitors once they have read what was written before the hold, let the
    writer rotate while they are down, start them again."""
    began = time.monotonic()
    written = control.set("hold")

    def step() -> None:
        local.step()
        cli.collect()
        control.report_read(read_by_both(local, cli))

    wait_until(lambda: all(n >= written[s] for s, n in read_by_both(local, cli).items()),
               HANDSHAKE_SECONDS, "both monitors to read what was written before the hold",
               step)
    local.stop()
    cli.stop()
    control.set("down")
    local.start()
    local.step()
    cli.start()
    wait_until(lambda: cli.lines_this_run > 0, HANDSHAKE_SECONDS, "the restarted watch",
               lambda: (local.step(), cli.collect()))
    control.clear("down")
    control.clear("hold")
    return time.monotonic() - began


# --------------------------------------------------------------- restarts, deterministically

def tslog(text: str) -> bytes:
    record = {"0": '{"subsystem":"test"}', "1": text, "_meta": {"logLevelName": "INFO"}}
    return (json.dumps(record) + "\n").encode()


def append(path: Path, *texts: str) -> None:
    with open(path, "ab") as handle:
        for text in texts:
            handle.write(tslog(text))


def log_messages(sources: SourceSet) -> list[str]:
    return [e.message for e in sources.poll() if isinstance(e, GatewayNotice)]


def stop(sources: SourceSet, store: CheckpointStore) -> None:
    store.save(sources.checkpoint())
    sources.close()


def test_log_rename_rotation_while_stopped_is_drained_from_the_old_file(tmp_path: Path) -> None:
    log, store = tmp_path / "gw.log", CheckpointStore(str(tmp_path / "cp.json"))
    append(log, "a1", "a2")
    sources = SourceSet(log_path=str(log))
    assert log_messages(sources) == ["a1", "a2"]
    stop(sources, store)
    append(log, "a3")
    log.rename(tmp_path / "gw.1.log")
    append(log, "b1")
    sources = SourceSet(log_path=str(log), resume=store.load())
    assert log_messages(sources) == ["a3", "b1"]
    assert log_messages(sources) == []


def test_a_file_rotated_while_stopped_is_held_from_the_start_not_from_its_first_poll(
        tmp_path: Path) -> None:
    """A source may poll its log only after the transcripts caught up; the rotated file
    deleted in between must not take its unread lines with it."""
    log, store = tmp_path / "gw.log", CheckpointStore(str(tmp_path / "cp.json"))
    append(log, "a1")
    sources = SourceSet(log_path=str(log))
    assert log_messages(sources) == ["a1"]
    stop(sources, store)
    append(log, "a2")
    log.rename(tmp_path / "gw.1.log")
    append(log, "b1")
    sources = SourceSet(log_path=str(log), resume=store.load())
    (tmp_path / "gw.1.log").unlink()
    events = sources.poll()
    assert [e.message for e in events if isinstance(e, GatewayNotice)] == ["a2", "b1"]
    assert not [e for e in events if isinstance(e, SourceError)]


def test_log_copytruncate_while_stopped_keeps_the_lines_in_the_copy(tmp_path: Path) -> None:
    log, store = tmp_path / "gw.log", CheckpointStore(str(tmp_path / "cp.json"))
    append(log, "a1", "a2")
    sources = SourceSet(log_path=str(log))
    assert log_messages(sources) == ["a1", "a2"]
    stop(sources, store)
    append(log, "a3", "a4")
    shutil.copyfile(log, tmp_path / "gw.log.1")
    os.truncate(log, 0)
    append(log, "b1")
    sources = SourceSet(log_path=str(log), resume=store.load())
    assert log_messages(sources) == ["a3", "a4", "b1"]


def test_log_deleted_while_stopped_is_reported_with_the_lost_offset(tmp_path: Path) -> None:
    log, store = tmp_path / "gw.log", CheckpointStore(str(tmp_path / "cp.json"))
    append(log, "a1")
    sources = SourceSet(log_path=str(log))
    assert log_messages(sources) == ["a1"]
    offset = log.stat().st_size
    stop(sources, store)
    with open(log, "rb"):
        # A process still holds the old file (so its inode number cannot be reused: a new
        # file with the old number is indistinguishable from a truncated one).
        log.unlink()
        append(log, "b1")
    sources = SourceSet(log_path=str(log), resume=store.load())
    events = sources.poll()
    assert [e.message for e in events if isinstance(e, GatewayNotice)] == ["b1"]
    errors = [e for e in events if isinstance(e, SourceError)]
    assert len(errors) == 1 and errors[0].where == f"offset {offset}"
    assert sources.summaries()[0]["errors"] == 1


def transcript_call(call_id: str) -> str:
    return json.dumps({"type": "message", "message": {
        "role": "assistant", "content": [{"type": "toolCall", "id": call_id, "name": "x",
                                          "arguments": {}}]}}) + "\n"


def test_a_stopping_monitor_reads_a_rotated_log_while_the_transcripts_are_behind(
        tmp_path: Path) -> None:
    """The log waits for the transcripts; a stopping monitor reads the rotated log all the
    same, or its checkpoint would name a file the next rotation may delete unread."""
    sessions = tmp_path / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    transcript, log = sessions / "s1.jsonl", tmp_path / "gw.log"
    transcript.write_text(transcript_call("c0"))
    append(log, "a1")
    sources = SourceSet(state_dir=str(tmp_path), log_path=str(log))
    assert log_messages(sources) == ["a1"]
    with open(transcript, "a") as handle:
        handle.writelines(transcript_call(f"c{n}") for n in range(1, 200))
    for source in sources.sources:
        if source.kind == "jsonl":
            source.poll_budget_bytes = 1000
    append(log, "a2")
    log.rename(tmp_path / "gw.1.log")
    append(log, "b1")
    assert log_messages(sources) == [] and sources.behind
    sources.note_stopping()
    assert log_messages(sources) == ["a2", "b1"]


def test_a_stopping_monitor_reads_a_reset_transcript_before_the_others(tmp_path: Path) -> None:
    sessions = tmp_path / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    busy, reset = sessions / "s1.jsonl", sessions / "s2.jsonl"
    reset.write_text(transcript_call("d0"))
    os.utime(reset, (1, 1))
    busy.write_text(transcript_call("c0"))
    sources = SourceSet(state_dir=str(tmp_path))
    assert sorted(e.call_id for e in sources.poll() if isinstance(e, ToolCall)) == ["c0", "d0"]
    with open(busy, "a") as handle:
        handle.writelines(transcript_call(f"c{n}") for n in range(1, 200))
    with open(reset, "a") as handle:
        handle.write(transcript_call("d1"))
    reset.rename(sessions / "s2.jsonl.reset.2026-01-01T00-00-00.000Z")
    for source in sources.sources:
        source.poll_budget_bytes = 1000
    sources.note_stopping()
    first = [e.call_id for e in sources.poll() if isinstance(e, ToolCall)]
    assert first[0] == "d1" and sources.behind


def test_transcript_reset_while_stopped_is_drained_from_the_archive(tmp_path: Path) -> None:
    sessions = tmp_path / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    transcript = sessions / "s1.jsonl"
    store = CheckpointStore(str(tmp_path / "cp.json"))
    call = transcript_call

    def call_ids(sources: SourceSet) -> list[str]:
        return [e.call_id for e in sources.poll() if isinstance(e, ToolCall)]

    transcript.write_text(call("c1"))
    sources = SourceSet(state_dir=str(tmp_path))
    assert call_ids(sources) == ["c1"]
    stop(sources, store)
    with open(transcript, "a") as handle:
        handle.write(call("c2"))
    transcript.rename(sessions / "s1.jsonl.reset.2026-01-01T00-00-00.000Z")
    transcript.write_text(call("c3"))
    sources = SourceSet(state_dir=str(tmp_path), resume=store.load())
    assert call_ids(sources) == ["c2", "c3"]
    assert call_ids(sources) == []


def heartbeat(second: int) -> bytes:
    """A real idle-gateway log line: fixed width, and its last ~95 bytes never change."""
    stamp = f"2026-11-29T13:58:{second % 60:02d}.{second // 60:03d}"
    record = (
        '{"0":"{\\"subsystem\\":\\"diagnostic\\"}","1":"heartbeat: webhooks=0/0/0 active=0 '
        'waiting=0 queued=0","_meta":{"runtime":"node","hostname":"vm","date":"' + stamp
        + 'Z","logLevelId":2,"logLevelName":"DEBUG"},"time":"' + stamp + '+00:00",'
        '"hostname":"vm","message":"heartbeat: webhooks=0/0/0 active=0 waiting=0 queued=0"}')
    return (record + "\n").encode()


@pytest.mark.parametrize("restart_between", [False, True], ids=["live", "restarted"])
def test_copytruncate_of_identical_tailed_lines_is_noticed(tmp_path: Path,
                                                           restart_between: bool) -> None:
    """The new file outgrows the old offset before the next poll, and every line ends in the
    same bytes (an idle gateway logs only heartbeats): the truncation must still be seen."""
    log = tmp_path / "gw.log"
    log.write_bytes(b"".join(heartbeat(s) for s in range(10)))
    follower = FileFollower(str(log))
    assert len(follower.poll()) == 10
    with open(log, "ab") as handle:
        handle.write(b"".join(heartbeat(s) for s in range(10, 15)))
    if restart_between:
        saved = follower.state()
        follower.close()
    shutil.copyfile(log, tmp_path / "gw.log.1")
    log.write_bytes(b"".join(heartbeat(s) for s in range(100, 120)))
    if restart_between:
        follower = FileFollower(str(log), resume=saved)
    lines = follower.poll()
    follower.close()
    expected = [heartbeat(s).rstrip(b"\n") for s in [*range(10, 15), *range(100, 120)]]
    assert [line.data for line in lines] == expected

"""The writer half of tests/test_chaos.py: a separate process that appends records with chaos.

It writes, interleaved and at a steady pace, records that each carry a unique id:

* legacy transcripts (``state/agents/main/sessions/<sid>.jsonl`` + ``sessions.json``): one
  assistant message with one ``toolCall`` per record, call id ``j<n>``;
* a gateway log (``logs/gw.log``): one tslog line per record, message ``... id=g<n> ...``;
* an agent DB (``state/agents/main/agent/openclaw-agent.sqlite``, WAL): one transcript row per
  record, call id ``s:<session_id>:<seq>``, some of them zstd-compressed, while a second
  connection runs ``wal_checkpoint(TRUNCATE|RESTART)`` over and over.

Chaos: lines written in 2-3 chunks (the pacing sleep can fall between chunks, so a reader sees
partial lines; splits land inside multi-byte UTF-8 too), rename rotation of transcripts (to
``<sid>.jsonl.reset.<ts>``, sometimes in the middle of a line that is then finished through the
old descriptor), transcript delete+recreate, new sessions appearing, and on the log: rename
rotation (``gw.log`` -> ``gw.1.log``, between lines, as OpenClaw's path-based appends do),
copytruncate (copy to ``gw.log.1`` then truncate in place) and delete+recreate.

Pacing keeps it realistic: a file generation lives for at least ``--min-generation-records``
records of its stream and ``--min-generation-seconds``, so a live reader has opened it before it
is deleted; those seconds count again from the moment restarted readers are released, as they
open their files anew.

The test talks to it through files in ``<root>/control``: while ``hold`` exists (the readers
are being stopped and started) the writer only appends: no rotation, truncation or deletion,
acknowledged with ``hold.ack``, which holds the records written so far per stream, so the
test can let its readers read them all before it stops them. On entering ``down`` (both
readers stopped) it renames the log and the oldest transcript generation once each, so
rotation while no reader runs is always exercised, and acknowledges with ``down.ack``. (A
generation created and rotated away, or a file deleted, while no reader runs cannot be
recovered by any reader, so neither happens.)
The test restarts its readers when they have read a share of the records, which on a loaded
machine can come after the last record, so after it the writer goes on answering until
``finish`` exists (at most ``--finish-wait-seconds``).

The readers' pace bounds the writer's: the test keeps ``control/read`` up to date with how
many records of each stream the slower reader has seen, and the writer waits while it is more
than ``--max-lag-records`` ahead of that. Generations then live long enough for a reader to
have opened them on any machine (``min_records`` is well above a session's share of the lag),
not only on one fast enough to read at ``--rate``; how long the writer waited is in the
summary.

At the end it writes ``<root>/summary.json`` (what was written, per stream) and prints ``done``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import sys
import threading
import time
import uuid

import zstandard

STREAM_WEIGHTS = (("jsonl", 4), ("log", 4), ("sqlite", 2))
LEGACY_SESSIONS = 4
SQLITE_SESSIONS = 3
CONTROL_CHECK_EVERY = 32
UNICODE_FILLER = "grün→über✓"

AGENT_DDL = """
PRAGMA journal_mode = WAL;
PRAGMA user_version = 23;
CREATE TABLE IF NOT EXISTS session_nodes (
  session_key TEXT NOT NULL PRIMARY KEY,
  current_session_id TEXT NOT NULL,
  entry_json TEXT NOT NULL,
  entry_valid INTEGER NOT NULL DEFAULT 0 CHECK (entry_valid IN (-1, 0, 1)),
  updated_at INTEGER NOT NULL,
  status TEXT CHECK (status IS NULL OR status IN ('running', 'done', 'failed', 'killed',
                                                   'timeout')),
  created_at INTEGER,
  label TEXT,
  display_name TEXT
) STRICT;
CREATE TABLE IF NOT EXISTS session_windows (
  session_id TEXT NOT NULL PRIMARY KEY,
  session_key TEXT NOT NULL,
  previous_session_id TEXT,
  reason TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  started_at INTEGER,
  ended_at INTEGER,
  status TEXT CHECK (status IS NULL OR status IN ('running', 'done', 'failed', 'killed',
                                                   'timeout')),
  model_provider TEXT,
  model TEXT,
  FOREIGN KEY (session_key) REFERENCES session_nodes(session_key) ON DELETE CASCADE
) STRICT;
CREATE TABLE IF NOT EXISTS transcript_events (
  session_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  event_json TEXT,
  created_at INTEGER NOT NULL,
  event_zstd BLOB,
  event_utf8_bytes INTEGER CHECK (event_utf8_bytes IS NULL OR event_utf8_bytes >= 0),
  navigation_json TEXT,
  PRIMARY KEY (session_id, seq),
  FOREIGN KEY (session_id) REFERENCES "session_windows"(session_id) ON DELETE CASCADE,
  CHECK (
    (event_json IS NOT NULL AND event_zstd IS NULL)
    OR (
      event_json IS NULL AND event_zstd IS NOT NULL
      AND event_utf8_bytes IS NOT NULL
      AND event_utf8_bytes BETWEEN 1 AND 4194304
      AND length(event_zstd) BETWEEN 1 AND 4194304
      AND navigation_json IS NOT NULL
    )
  )
) STRICT;
"""


class Journal:
    """``<root>/ops.log``: one line per chaos operation, to explain a failure."""

    handle = None

    @classmethod
    def open(cls, root: str) -> None:
        os.makedirs(root, exist_ok=True)
        cls.handle = open(os.path.join(root, "ops.log"), "w", buffering=1)

    @classmethod
    def note(cls, stream: str, op: str, last_id: str, detail: str = "") -> None:
        if cls.handle is not None:
            cls.handle.write(f"{time.monotonic():.3f} {stream} {op} after {last_id} {detail}\n")


def now_ms() -> int:
    return int(time.time() * 1000)


def iso_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + f".{now_ms() % 1000:03d}Z"


def dumps(obj) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def assistant_tool_call(call_id: str, ordinal: int) -> dict:
    """A pi-shaped assistant message entry with exactly one tool call."""
    return {
        "type": "message", "id": uuid.uuid4().hex[:8], "parentId": None, "timestamp": iso_now(),
        "message": {
            "role": "assistant",
            "content": [{"type": "toolCall", "id": call_id, "name": "exec",
                         "arguments": {"command": f"echo {UNICODE_FILLER} {ordinal}"}}],
            "usage": {"input": 10, "output": 2, "cacheRead": 0, "cacheWrite": 0,
                      "totalTokens": 12, "cost": {"total": 0}},
            "stopReason": "toolUse", "provider": "fake", "model": "loop-model",
            "timestamp": now_ms(),
        },
    }


def session_header(session_id: str) -> dict:
    return {"type": "session", "version": 3, "id": session_id, "timestamp": iso_now(),
            "cwd": "/tmp"}


class Pacer:
    """Keeps the writer on a steady ``rate`` records per second."""

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self.started = time.monotonic()
        self.records = 0

    def maybe_sleep(self) -> None:
        ahead = self.records / self.rate - (time.monotonic() - self.started)
        if ahead > 0.002:
            time.sleep(ahead)


class Control:
    """The hold/down handshake with the test (see the module docstring)."""

    def __init__(self, root: str, written) -> None:
        self.dir = os.path.join(root, "control")
        #: ``written()``: records written so far per stream, given with the hold's ack.
        self.written = written
        os.makedirs(self.dir, exist_ok=True)
        self.held = False
        self.down = False

    def _flag(self, name: str) -> bool:
        return os.path.exists(os.path.join(self.dir, name))

    def _ack(self, name: str, on: bool) -> None:
        path = os.path.join(self.dir, name + ".ack")
        if on:
            with open(path + ".tmp", "w") as handle:
                json.dump(self.written(), handle)
            os.replace(path + ".tmp", path)
        else:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass

    def refresh(self, on_down, on_release) -> None:
        held, down = self._flag("hold"), self._flag("down")
        if held != self.held:
            self.held = held
            Journal.note("control", "hold" if held else "release", "-")
            if not held:
                on_release()
            self._ack("hold", held)
        if down != self.down:
            self.down = down
            if down:
                on_down()
            self._ack("down", down)

    def records_read(self) -> int | None:
        """Records of all streams the slower reader has seen (``control/read``), or None
        before the test first wrote it."""
        try:
            with open(os.path.join(self.dir, "read"), encoding="utf-8") as handle:
                return sum(json.load(handle).values())
        except (FileNotFoundError, ValueError):
            return None

    @property
    def finished(self) -> bool:
        return self._flag("finish")

    @property
    def quiet(self) -> bool:
        """Only append: the readers are being restarted."""
        return self.held or self.down


class Generation:
    """Age of the current file generation of one stream, in records and seconds."""

    def __init__(self, min_records: int, min_seconds: float) -> None:
        self.min_records = min_records
        self.min_seconds = min_seconds
        self.restart()

    def restart(self) -> None:
        self.records = 0
        self.started = time.monotonic()

    def restart_clock(self) -> None:
        """Count its age from now (its records kept): readers that just started have not
        opened it yet, and it must not be rotated or deleted before they can have."""
        self.started = time.monotonic()

    def wait_until_seen(self) -> None:
        """Sleep until the generation is ``min_seconds`` old (readers polled it meanwhile)."""
        time.sleep(max(0.0, self.started + self.min_seconds - time.monotonic()))

    @property
    def old_enough(self) -> bool:
        return (self.records >= self.min_records
                and time.monotonic() - self.started >= self.min_seconds)


def write_chunked(fd: int, data: bytes, rng: random.Random, pacer: Pacer,
                  between=None) -> None:
    """Write ``data`` in 1-3 chunks; the pacer may sleep between them (a visible partial line).
    ``between(fd)`` runs after the first chunk and may return a new descriptor for the rest."""
    if between is None and (len(data) < 8 or rng.random() < 0.5):
        os.write(fd, data)
        return
    cuts = sorted(rng.sample(range(1, len(data) - 1), rng.choice((1, 2))))
    pieces = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
    os.write(fd, pieces[0])
    pacer.maybe_sleep()
    if between is not None:
        fd = between(fd)
    for piece in pieces[1:]:
        os.write(fd, piece)


class LegacySession:
    def __init__(self, directory: str, session_id: str, generation: Generation) -> None:
        self.session_id = session_id
        self.path = os.path.join(directory, f"{session_id}.jsonl")
        self.generation = generation
        self.fd = -1
        self.open_new()

    def open_new(self) -> None:
        self.fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(self.fd, (dumps(session_header(self.session_id)) + "\n").encode())
        self.generation.restart()


class LegacyStream:
    """Transcripts under agents/main/sessions, with rotation, deletion and new sessions."""

    def __init__(self, sessions_dir: str, rng: random.Random, pacer: Pacer,
                 min_records: int, min_seconds: float) -> None:
        self.dir = sessions_dir
        os.makedirs(sessions_dir, exist_ok=True)
        self.rng = rng
        self.pacer = pacer
        self.min_records, self.min_seconds = min_records, min_seconds
        self.count = 0
        self.ops = {"rename": 0, "rename_mid_line": 0, "delete": 0, "new_session": 0,
                    "rename_while_down": 0}
        self.index: dict[str, dict] = {}
        self.sessions = [self._new_session() for _ in range(LEGACY_SESSIONS)]

    def _new_session(self) -> LegacySession:
        session = LegacySession(self.dir, str(uuid.UUID(int=self.rng.getrandbits(128))),
                                Generation(self.min_records, self.min_seconds))
        key = f"agent:main:chaos-{len(self.index)}"
        self.index[key] = {"sessionId": session.session_id, "updatedAt": now_ms(),
                           "status": "running", "model": "loop-model",
                           "modelProvider": "fake"}
        self._write_index()
        return session

    def _write_index(self) -> None:
        temp = os.path.join(self.dir, ".sessions.json.tmp")
        with open(temp, "w", encoding="utf-8") as handle:
            json.dump(self.index, handle)
        os.replace(temp, os.path.join(self.dir, "sessions.json"))

    def _archive_name(self, session: LegacySession) -> str:
        stamp = iso_now().replace(":", "-")
        return f"{session.path}.reset.{stamp}.{self.rng.getrandbits(32):08x}"

    def rotate(self, session: LegacySession) -> None:
        os.rename(session.path, self._archive_name(session))
        os.close(session.fd)
        session.open_new()

    def write(self, control: Control) -> None:
        session = self.rng.choice(self.sessions)
        call_id = f"j{self.count:07d}"
        line = (dumps(assistant_tool_call(call_id, self.count)) + "\n").encode()
        self.count += 1
        session.generation.records += 1
        op = self._due_op(session, control)
        if op == "rename_mid_line":
            def rename_between_chunks(fd: int) -> int:
                os.rename(session.path, self._archive_name(session))
                return fd

            write_chunked(session.fd, line, self.rng, self.pacer, rename_between_chunks)
            os.close(session.fd)
            session.open_new()
            return
        write_chunked(session.fd, line, self.rng, self.pacer)
        if op == "rename":
            self.rotate(session)
        elif op == "delete":
            os.unlink(session.path)
            os.close(session.fd)
            session.open_new()
        elif op == "new_session":
            os.close(session.fd)
            self.sessions[self.sessions.index(session)] = self._new_session()

    def _due_op(self, session: LegacySession, control: Control) -> str | None:
        if control.quiet or not session.generation.old_enough:
            return None
        op = self.rng.choice(("rename", "rename_mid_line", "new_session", "delete"))
        self.ops[op] += 1
        Journal.note("jsonl", op, f"j{self.count - 1:07d}", session.path)
        return op

    def rotate_while_down(self) -> None:
        session = min(self.sessions, key=lambda s: s.generation.started)
        session.generation.wait_until_seen()
        Journal.note("jsonl", "rename_while_down", f"j{self.count - 1:07d}", session.path)
        self.rotate(session)
        self.ops["rename_while_down"] += 1

    def close(self) -> None:
        for session in self.sessions:
            os.close(session.fd)


class LogStream:
    """The gateway log: tslog lines; rename rotation, copytruncate, delete+recreate."""

    def __init__(self, path: str, rng: random.Random, pacer: Pacer, min_records: int,
                 min_seconds: float) -> None:
        self.path = path
        os.makedirs(os.path.dirname(path), exist_ok=True)
        self.rng = rng
        self.pacer = pacer
        self.generation = Generation(min_records, min_seconds)
        self.count = 0
        self.ops = {"rename": 0, "copytruncate": 0, "delete": 0, "rename_while_down": 0}
        self.fd = self._open()

    def _open(self) -> int:
        self.generation.restart()
        return os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def _line(self) -> bytes:
        message = (f"chaos line id=g{self.count:07d} runId=chaos-run sessionKey=agent:main:log "
                   f"{UNICODE_FILLER}")
        record = {"0": '{"subsystem":"chaos"}', "1": message,
                  "_meta": {"logLevelName": "INFO", "date": iso_now()},
                  "time": iso_now(), "message": message}
        return (dumps(record) + "\n").encode()

    def rename(self) -> None:
        stem = self.path[: -len(".log")]
        os.rename(self.path, f"{stem}.1.log")
        os.close(self.fd)
        self.fd = self._open()

    def write(self, control: Control) -> None:
        write_chunked(self.fd, self._line(), self.rng, self.pacer)
        self.count += 1
        self.generation.records += 1
        if control.quiet or not self.generation.old_enough:
            return
        op = self.rng.choice(("rename", "copytruncate", "delete"))
        self.ops[op] += 1
        Journal.note("log", op, f"g{self.count - 1:07d}")
        if op == "rename":
            self.rename()
        elif op == "copytruncate":
            shutil.copyfile(self.path, self.path + ".1")
            os.ftruncate(self.fd, 0)
            self.generation.restart()
        else:
            os.unlink(self.path)
            os.close(self.fd)
            self.fd = self._open()

    def rotate_while_down(self) -> None:
        self.generation.wait_until_seen()
        Journal.note("log", "rename_while_down", f"g{self.count - 1:07d}")
        self.rename()
        self.ops["rename_while_down"] += 1

    def close(self) -> None:
        os.close(self.fd)


def navigation_json(entry: dict, utf8_bytes: int) -> str:
    """A ``navigation_json`` of the shape the gateway stores beside zstd rows."""
    nav = {k: entry[k] for k in ("type", "id", "parentId", "timestamp")}
    return dumps({"version": 1, "report": {"kind": "canonical", "hasParentId": False,
                                           "entry": nav},
                  "navigation": nav, "reset": nav, "model": nav, "modelBytes": utf8_bytes,
                  "modelWithoutCheckpointBytes": utf8_bytes,
                  "withoutCustomDataBytes": utf8_bytes})


class SqliteStream:
    """Transcript rows in WAL mode, committed in small batches, some zstd-compressed."""

    def __init__(self, db_path: str, rng: random.Random) -> None:
        os.makedirs(os.path.dirname(db_path), exist_ok=True)
        self.path = db_path
        self.rng = rng
        self.conn = sqlite3.connect(db_path, isolation_level=None, timeout=10.0)
        self.conn.execute("PRAGMA busy_timeout = 10000")
        self.conn.executescript(AGENT_DDL)
        self.compressor = zstandard.ZstdCompressor(level=1, write_checksum=True)
        self.last_seq: dict[str, int] = {}
        self.sessions: list[str] = []
        self.count = 0
        self.zstd_rows = 0
        self.queued: list[tuple[str, int, dict]] = []
        self.batch = 1
        self.conn.execute("BEGIN")
        for _ in range(SQLITE_SESSIONS):
            self._new_session()
        self._commit()

    def _new_session(self) -> None:
        sid = str(uuid.UUID(int=self.rng.getrandbits(128)))
        key = f"agent:main:sqlite-{len(self.last_seq)}"
        entry = {"sessionId": sid, "status": "running", "model": "loop-model"}
        self.conn.execute(
            "INSERT OR REPLACE INTO session_nodes (session_key, current_session_id, entry_json,"
            " entry_valid, updated_at, status, created_at) VALUES (?, ?, ?, 1, ?, 'running', ?)",
            (key, sid, dumps(entry), now_ms(), now_ms()))
        self.conn.execute(
            "INSERT INTO session_windows (session_id, session_key, reason, created_at,"
            " updated_at, status, model_provider, model)"
            " VALUES (?, ?, 'initial', ?, ?, 'running', 'fake', 'loop-model')",
            (sid, key, now_ms(), now_ms()))
        self._insert(sid, 0, session_header(sid))
        self.last_seq[sid] = 0
        self.sessions.append(sid)

    def _insert(self, sid: str, seq: int, entry: dict) -> None:
        raw = dumps(entry)
        if seq > 0 and self.rng.random() < 0.1:
            data = raw.encode()
            self.conn.execute(
                "INSERT INTO transcript_events (session_id, seq, event_json, created_at,"
                " event_zstd, event_utf8_bytes, navigation_json) VALUES (?, ?, NULL, ?, ?, ?, ?)",
                (sid, seq, now_ms(), self.compressor.compress(data), len(data),
                 navigation_json(entry, len(data))))
            self.zstd_rows += 1
        else:
            self.conn.execute(
                "INSERT INTO transcript_events (session_id, seq, event_json, created_at)"
                " VALUES (?, ?, ?, ?)", (sid, seq, raw, now_ms()))

    def _commit(self) -> None:
        self.conn.execute("COMMIT")
        self.batch = self.rng.randint(1, 40)

    def write(self) -> None:
        """Queue one row; a batch is written in one short transaction once it is full (a
        transaction never stays open across the pacing sleep, as the gateway's do not)."""
        sid = self.rng.choice(self.sessions)
        seq = self.last_seq[sid] + 1
        self.last_seq[sid] = seq
        self.queued.append((sid, seq, assistant_tool_call(f"s:{sid}:{seq}", self.count)))
        self.count += 1
        if len(self.queued) >= self.batch:
            self.flush()

    def flush(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")
        for sid, seq, entry in self.queued:
            self._insert(sid, seq, entry)
        if self.rng.random() < 0.01:
            self._new_session()
        self._commit()
        self.queued.clear()

    def close(self) -> None:
        if self.queued:
            self.flush()
        self.conn.close()


class Checkpointer(threading.Thread):
    """Another connection forcing WAL checkpoints (TRUNCATE and RESTART) while rows arrive."""

    def __init__(self, db_path: str, seed: int) -> None:
        super().__init__(name="chaos-checkpointer", daemon=True)
        self.db_path = db_path
        self.rng = random.Random(seed)
        self.stop = threading.Event()
        self.done = {"TRUNCATE": 0, "RESTART": 0, "busy": 0}

    def run(self) -> None:
        conn = sqlite3.connect(self.db_path, isolation_level=None, timeout=10.0)
        conn.execute("PRAGMA busy_timeout = 2000")
        while not self.stop.wait(self.rng.uniform(0.01, 0.08)):
            mode = self.rng.choice(("TRUNCATE", "RESTART"))
            busy, _, _ = conn.execute(f"PRAGMA wal_checkpoint({mode})").fetchone()
            self.done[mode] += 1
            self.done["busy"] += busy
        conn.close()


def wait_for_readers(control: Control, written: int, max_lag: int, refresh) -> float:
    """Sleep while ``written`` records are more than ``max_lag`` ahead of what the slower
    reader has seen, answering the handshake meanwhile; returns the seconds waited."""
    began = time.monotonic()
    while True:
        read = control.records_read()
        if read is None or written - read <= max_lag or control.finished:
            return time.monotonic() - began
        refresh()
        time.sleep(0.005)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", required=True)
    parser.add_argument("--records", type=int, required=True)
    parser.add_argument("--rate", type=float, default=8000.0, help="records per second")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--min-generation-records", type=int, default=2000)
    parser.add_argument("--min-generation-seconds", type=float, default=1.0)
    parser.add_argument("--finish-wait-seconds", type=float, default=120.0)
    parser.add_argument("--max-lag-records", type=int, default=0,
                        help="wait while this many records ahead of control/read (0: never)")
    args = parser.parse_args(argv)

    Journal.open(args.root)
    rng = random.Random(args.seed)
    pacer = Pacer(args.rate)
    state = os.path.join(args.root, "state")
    gen = (args.min_generation_records, args.min_generation_seconds)
    legacy = LegacyStream(os.path.join(state, "agents", "main", "sessions"), rng, pacer, *gen)
    log = LogStream(os.path.join(args.root, "logs", "gw.log"), rng, pacer, *gen)
    db_path = os.path.join(state, "agents", "main", "agent", "openclaw-agent.sqlite")
    sqlite = SqliteStream(db_path, rng)
    checkpointer = Checkpointer(db_path, args.seed + 1)
    checkpointer.start()
    control = Control(args.root, lambda: {"jsonl": legacy.count, "log": log.count,
                                          "sqlite": sqlite.count})

    def rotate_while_down() -> None:
        log.rotate_while_down()
        legacy.rotate_while_down()

    def restart_clocks() -> None:
        for generation in [log.generation, *(s.generation for s in legacy.sessions)]:
            generation.restart_clock()

    def refresh() -> None:
        control.refresh(rotate_while_down, restart_clocks)

    print("ready", flush=True)
    pacer.started = time.monotonic()
    streams = [name for name, weight in STREAM_WEIGHTS for _ in range(weight)]
    waited = 0.0
    for index in range(args.records):
        if index % CONTROL_CHECK_EVERY == 0:
            refresh()
            if args.max_lag_records:
                waited_now = wait_for_readers(control, index, args.max_lag_records, refresh)
                pacer.started += waited_now
                waited += waited_now
        stream = rng.choice(streams)
        if stream == "jsonl":
            legacy.write(control)
        elif stream == "log":
            log.write(control)
        else:
            sqlite.write()
        pacer.records += 1
        pacer.maybe_sleep()
    elapsed = time.monotonic() - pacer.started
    finish_by = time.monotonic() + args.finish_wait_seconds
    while not control.finished and time.monotonic() < finish_by:
        refresh()
        time.sleep(0.01)
    checkpointer.stop.set()
    checkpointer.join()
    legacy.close()
    log.close()
    sqlite.close()
    summary = {
        "records": args.records, "seconds": round(elapsed, 3),
        "waited_for_readers_seconds": round(waited, 3),
        "jsonl": legacy.count, "log": log.count, "sqlite": sqlite.count,
        "sqlite_last_seq": sqlite.last_seq, "sqlite_zstd_rows": sqlite.zstd_rows,
        "ops": {"jsonl": legacy.ops, "log": log.ops, "wal_checkpoints": checkpointer.done},
    }
    temp = os.path.join(args.root, ".summary.json")
    with open(temp, "w") as handle:
        json.dump(summary, handle)
    os.replace(temp, os.path.join(args.root, "summary.json"))
    print("done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

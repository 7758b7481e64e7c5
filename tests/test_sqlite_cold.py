"""OpenClaw's transcript cold storage, read by the SQLite source.

Archives are written here as OpenClaw's ``session-cold-storage-worker`` writes them: the
JSON records ``JSON.stringify`` gives (a ``header``, then one ``event`` per
``transcript_events`` row in seq order), zstd-compressed as a stream (no content size in
the frame), named ``<sha256>.jsonl.zst``, kept as a file in ``agents/<id>/sessions/cold/``
or as the row's ``archive_blob``; the row goes into ``session_transcript_cold_archives``
(the DDL of the real schema, below) and the session's rows leave ``transcript_events``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import zstandard

from monitor import replay_shards
from monitor.config import Config
from monitor.detect.engine import DetectionEngine
from monitor.display import json_dumps
from monitor.events import SourceError
from monitor.pipeline import Monitor
from monitor.replay import ReplayInput, read_to_end, replay
from monitor.sources import sqlite_cold
from monitor.sources.sourceset import SourceSet
from monitor.sources.sqlite_agent import SqliteAgentSource

REPO = Path(__file__).resolve().parent.parent
DIST = Path("/root/.cache/clawwatch/oc-2026.9.6/openclaw/node_modules/openclaw/dist")
AGENT_DB = Path("agents") / "main" / "agent" / "openclaw-agent.sqlite"
COLD_DIR = Path("agents") / "main" / "sessions" / "cold"

#: ``session_transcript_cold_archives`` of OpenClaw 2026.9.6 (schema v23), verbatim.
COLD_DDL = r"""CREATE TABLE IF NOT EXISTS session_transcript_cold_archives (
  session_id TEXT NOT NULL PRIMARY KEY,
  generation TEXT NOT NULL,
  archive_name TEXT NOT NULL UNIQUE,
  archive_sha256 TEXT NOT NULL CHECK (length(archive_sha256) = 64),
  event_count INTEGER NOT NULL CHECK (event_count >= 1),
  raw_bytes INTEGER NOT NULL CHECK (raw_bytes >= 0),
  archive_bytes INTEGER NOT NULL CHECK (archive_bytes >= 0),
  last_seq INTEGER NOT NULL,
  archived_at INTEGER NOT NULL,
  storage TEXT NOT NULL CHECK (storage IN ('file', 'sqlite')),
  archive_blob BLOB,
  FOREIGN KEY (session_id) REFERENCES "session_windows"(session_id) ON DELETE CASCADE,
""" + (
    "  CHECK (length(archive_name) > 0 AND archive_name NOT IN ('.', '..') AND archive_name "
    "NOT LIKE '%/%' AND archive_name NOT LIKE '%\\%'),\n"
    "  CHECK ((storage = 'file' AND archive_blob IS NULL) OR (storage = 'sqlite' AND "
    "archive_blob IS NOT NULL))\n"
    ") STRICT;")


def js_stringify(value) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def compress_stream(data: bytes) -> bytes:
    """``zlib.createZstdCompress()`` in a pipeline: a streamed frame, no content size."""
    compressor = zstandard.ZstdCompressor(level=3).compressobj()
    return compressor.compress(data) + compressor.flush()


def archive_records(conn: sqlite3.Connection, sid: str, generation: str) -> list[dict]:
    records: list[dict] = [{"kind": "header", "version": 1, "sessionId": sid,
                            "generation": generation}]
    decompressor = zstandard.ZstdDecompressor()
    for seq, event_json, event_zstd, created_at in conn.execute(
            "SELECT seq, event_json, event_zstd, created_at FROM transcript_events "
            "WHERE session_id = ? ORDER BY seq", (sid,)):
        if event_json is None:      # transcriptEventJsonSql: the decoded payload
            event_json = decompressor.decompress(event_zstd).decode()
        records.append({"kind": "event", "row": {"seq": seq, "event_json": event_json,
                                                 "created_at": created_at}})
    return records


def encode(records: list[dict]) -> bytes:
    return compress_stream("".join(js_stringify(r) + "\n" for r in records).encode())


def cold_row(sid: str, generation: str, records: list[dict], data: bytes, storage: str
             ) -> dict:
    events = [r["row"] for r in records if r["kind"] == "event"]
    sha = hashlib.sha256(data).hexdigest()
    return {"session_id": sid, "generation": generation, "archive_name": f"{sha}.jsonl.zst",
            "archive_sha256": sha, "event_count": len(events),
            "raw_bytes": sum(len(e["event_json"].encode()) for e in events) + len(events) - 1,
            "archive_bytes": len(data), "last_seq": events[-1]["seq"] if events else 0,
            "archived_at": 1_800_000_000_000, "storage": storage,
            "archive_blob": data if storage == "sqlite" else None}


def cold_store(state: Path, sid: str, storage: str, *, forge=None) -> dict:
    """Archive ``sid`` as OpenClaw does (``forge(records, data, row) -> (data, row)`` may
    spoil it first); returns the row."""
    db = state / AGENT_DB
    conn = sqlite3.connect(db)
    try:
        conn.execute("PRAGMA busy_timeout = 10000")
        conn.execute(COLD_DDL)
        generation = f"gen-{sid[:8]}"
        records = archive_records(conn, sid, generation)
        data = encode(records)
        row = cold_row(sid, generation, records, data, storage)
        if forge is not None:
            data, row = forge(records, data, row)
        if row["storage"] == "file" and data is not None:
            directory = state / COLD_DIR
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            path = directory / row["archive_name"]
            path.write_bytes(data)
            path.chmod(0o600)
        conn.execute(f"INSERT INTO session_transcript_cold_archives ({', '.join(row)}) "
                     f"VALUES ({', '.join('?' * len(row))})", tuple(row.values()))
        conn.execute("DELETE FROM transcript_events WHERE session_id = ?", (sid,))
        conn.commit()
    finally:
        conn.close()
    return row


def query(state: Path, sql: str, params=()) -> list:
    """Rows of ``sql`` on the agent database, the connection closed at once."""
    conn = sqlite3.connect(state / AGENT_DB)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def session_ids(state: Path) -> list[str]:
    return [r[0] for r in query(state, "SELECT DISTINCT session_id FROM transcript_events "
                                       "ORDER BY session_id")]


def tree(root: Path) -> dict:
    """Every path under ``root`` with its type, size and mtime (symlinks not followed)."""
    found = {}
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(directory) / name
            st = path.lstat()
            found[str(path.relative_to(root))] = (st.st_mode, st.st_size, st.st_mtime_ns)
    return found


# --------------------------------------------------------------------------- the DDL


def test_the_cold_table_ddl_is_openclaws():
    schemas = sorted(DIST.glob("openclaw-agent-board-schema-*.mjs")) if DIST.is_dir() else []
    if not schemas:
        pytest.skip("OpenClaw 2026.9.6 is not installed")
    text = schemas[0].read_text()
    literal = re.search(r'const OPENCLAW_AGENT_SCHEMA_SQL = ("(?:[^"\\]|\\.)*");', text)
    assert literal is not None
    assert COLD_DDL in json.loads(literal.group(1))


# --------------------------------------------------------------------------- replay


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("cold-gen")
    subprocess.run([sys.executable, str(REPO / "bench" / "gen_large_state.py"), "--out",
                    str(out), "--sessions", "40", "--big-mb", "1"], check=True,
                   capture_output=True)
    state = out / "sqlite"
    conn = sqlite3.connect(state / AGENT_DB)     # a bad row, read from its archive too
    sid = conn.execute("SELECT min(session_id) FROM transcript_events").fetchone()[0]
    top = conn.execute("SELECT max(seq) FROM transcript_events WHERE session_id = ?",
                       (sid,)).fetchone()[0]
    conn.execute("INSERT INTO transcript_events (session_id, seq, event_json, created_at)"
                 " VALUES (?, ?, ?, 0)", (sid, top + 1, "{not json"))
    conn.commit()
    conn.close()
    return state


def one_process(state: Path) -> dict:
    sources = SourceSet(state_dir=str(state), log_path=str(state / "logs" / "openclaw.log"),
                        replay=True)
    monitor = Monitor(sources, DetectionEngine(Config()))
    monitor.quiet = True
    read_to_end(monitor)
    document = monitor.report()
    sources.close()
    return document


def copy_state(generated: Path, tmp_path: Path) -> Path:
    """A copy at the same depth: the sessions' origins name the database by path, so the
    documents of two copies differ only there."""
    state = tmp_path / "sqlite"
    shutil.copytree(generated, state)
    return state


def normalised(document: dict, state: Path) -> str:
    """The document, paths aside. The cold dir brings ``agents/main/sessions`` into being,
    and with it an (empty) legacy-era source: that one is left out."""
    document = {**document, "sources": [s for s in document["sources"]
                                        if not s["path"].endswith("sessions")]}
    return json_dumps(document).replace(str(state), "STATE")


def archive_half(state: Path, document: dict) -> list[str]:
    """Archive every session with a finding and every other one besides, file and blob in
    turn; returns their ids."""
    sids = session_ids(state)
    with_findings = {s["session_id"] for s in document["sessions"] if s["findings_total"]}
    chosen = [sid for n, sid in enumerate(sids) if sid in with_findings or n % 2 == 0]
    for n, sid in enumerate(chosen):
        cold_store(state, sid, "file" if n % 2 else "sqlite")
    return chosen


def test_replay_reads_cold_sessions_as_it_read_them_hot(generated, tmp_path, monkeypatch):
    state = copy_state(generated, tmp_path)
    before = one_process(state)
    assert sum(s["findings_total"] for s in before["sessions"]) > 5
    assert sum(s["tool_calls"] for s in before["sessions"]) > 50
    reference = normalised(before, state)
    chosen = archive_half(state, before)
    assert len(chosen) > 15
    assert query(state, "SELECT count(*) FROM transcript_events WHERE session_id IN "
                 f"({', '.join('?' * len(chosen))})", chosen) == [(0,)]
    storages = Counter(r[0] for r in query(
        state, "SELECT storage FROM session_transcript_cold_archives"))
    assert storages["file"] > 5 and storages["sqlite"] > 5
    assert len(list((state / COLD_DIR).iterdir())) == storages["file"]
    listing = tree(state)
    assert normalised(one_process(state), state) == reference
    monkeypatch.setattr(replay_shards, "BYTES_PER_JOB", 1)
    what = ReplayInput(state_dir=str(state), log_path=str(state / "logs" / "openclaw.log"))
    for jobs in (1, 3):
        assert normalised(replay(what, Config(), DetectionEngine, jobs), state) == reference
    assert tree(state) == listing       # nothing created or changed


def test_cold_sessions_are_replay_units_named_by_their_archive(generated, tmp_path):
    state = copy_state(generated, tmp_path)
    source = SqliteAgentSource(str(state / AGENT_DB), "main")
    source.read_index()
    hot = source.transcript_units()
    source.close()
    sid = sorted(hot)[3]
    row = cold_store(state, sid, "file")
    source = SqliteAgentSource(str(state / AGENT_DB), "main")
    source.read_index()
    cold = source.transcript_units()
    source.close()
    assert set(cold) == set(hot)
    assert row["archive_name"] in cold[sid][1] and "cold" in cold[sid][1]
    assert cold[sid][0] > 0
    assert all(cold[s] == hot[s] for s in hot if s != sid)


def test_the_replay_cache_misses_a_session_once_it_is_archived(generated, tmp_path):
    state = copy_state(generated, tmp_path)
    cache = tmp_path / "cache"
    what = ReplayInput(state_dir=str(state), log_path=str(state / "logs" / "openclaw.log"))
    reference = normalised(replay(what, Config(), DetectionEngine, 1, cache=cache), state)
    archive_half(state, json.loads(reference))
    read: list[str] = []
    real = sqlite_cold.read_events
    sqlite_cold.read_events = lambda conn, d, archive: read.append(archive.session_id) or \
        real(conn, d, archive)
    try:
        again = normalised(replay(what, Config(), DetectionEngine, 1, cache=cache), state)
        read_before = len(read)
        cached = normalised(replay(what, Config(), DetectionEngine, 1, cache=cache), state)
    finally:
        sqlite_cold.read_events = real
    assert again == reference and cached == reference
    assert read_before > 15           # the archived sessions were read, not taken from cache
    assert len(read) == read_before   # and then cached under their archive's identity


# --------------------------------------------------------------------------- live


def origins(events: list) -> Counter:
    return Counter(getattr(e, "origin", None) for e in events
                   if getattr(e, "origin", None) and "#" in e.origin
                   and not isinstance(e, SourceError))


def test_a_session_archived_while_followed_is_read_exactly_once(generated, tmp_path):
    state = copy_state(generated, tmp_path)
    db = str(state / AGENT_DB)
    everything = SqliteAgentSource(db, "main", poll_budget_bytes=1 << 40, step_rows=1 << 40)
    reference = origins(everything.poll())
    everything.close()
    assert sum(reference.values()) > 500
    sids = session_ids(state)
    # small steps: some sessions are read part way when their archive replaces their rows
    source = SqliteAgentSource(db, "main", sweep_seconds=0, poll_budget_bytes=16 * 1024,
                               step_rows=25)
    seen: Counter = Counter()
    seen.update(origins(source.poll()))
    for n, sid in enumerate(sids):
        if n % 3 == 0:
            cold_store(state, sid, "file" if n % 2 else "sqlite")
        seen.update(origins(source.poll()))
    for _ in range(200):
        events = source.poll()
        seen.update(origins(events))
        if not events and not source.behind:
            break
    assert [e for e in events if isinstance(e, SourceError)] == []
    assert seen == reference
    assert source.errors == 1       # the bad row, once, from wherever it was read
    source.close()


def test_a_monitor_following_the_database_counts_nothing_twice(generated, tmp_path):
    state = copy_state(generated, tmp_path)
    reference = normalised(one_process(state), state)
    sources = SourceSet(state_dir=str(state), log_path=str(state / "logs" / "openclaw.log"),
                        replay=True)
    for source in sources.sources:
        if isinstance(source, SqliteAgentSource):
            source.sweep_seconds = 0
            source.poll_budget_bytes, source.step_rows = 32 * 1024, 50
    monitor = Monitor(sources, DetectionEngine(Config()))
    monitor.quiet = True
    monitor.fold(sources.poll())
    sids = session_ids(state)
    for n, sid in enumerate(sids[::2]):
        cold_store(state, sid, "file" if n % 2 else "sqlite")
        monitor.fold(sources.poll())
    read_to_end(monitor)
    document = monitor.report()
    sources.close()
    assert normalised(document, state) == reference


# --------------------------------------------------------------------------- forged


def _rehash(data: bytes, row: dict) -> tuple[bytes, dict]:
    sha = hashlib.sha256(data).hexdigest()
    return data, {**row, "archive_sha256": sha, "archive_name": f"{sha}.jsonl.zst",
                  "archive_bytes": len(data),
                  "archive_blob": data if row["storage"] == "sqlite" else None}


def wrong_hash(records, data, row):
    return data[:-1] + bytes([data[-1] ^ 1]), row


def name_not_hash(records, data, row):
    data, row = _rehash(data + b"", row)
    return data, {**row, "archive_name": "0" * 64 + ".jsonl.zst"}


def wrong_session(records, data, row):
    records = [{**records[0], "sessionId": "someone-else"}, *records[1:]]
    return _rehash(encode(records), row)


def wrong_generation(records, data, row):
    records = [{**records[0], "generation": "other"}, *records[1:]]
    return _rehash(encode(records), row)


def wrong_count(records, data, row):
    return data, {**row, "event_count": row["event_count"] + 1}


def second_header(records, data, row):
    return _rehash(encode([*records, records[0]]), row)


def oversized_declaration(records, data, row):
    frame = zstandard.ZstdCompressor(level=1, write_content_size=True).compress(
        b"\n" * (sqlite_cold.MAX_COLD_ARCHIVE_BYTES + 1))
    return _rehash(frame, row)


def bomb(records, data, row):
    return _rehash(compress_stream(b" " * (sqlite_cold.MAX_COLD_ARCHIVE_BYTES + 1)), row)


def truncated(records, data, row):
    return _rehash(data[:len(data) // 2], row)


def not_zstd(records, data, row):
    return _rehash("".join(js_stringify(r) + "\n" for r in records).encode(), row)


def blob_wrong_hash(records, data, row):
    return data, {**row, "archive_blob": data[:-1] + b"\0"}


def missing_file(records, data, row):
    return None, row


FORGED = {
    "wrong hash": (wrong_hash, "file", "failed verification"),
    "name is not the hash": (name_not_hash, "file", "failed verification"),
    "wrong session id": (wrong_session, "file", "the header names session 'someone-else'"),
    "wrong generation": (wrong_generation, "sqlite", "generation"),
    "wrong event count": (wrong_count, "file", "metadata does not match"),
    "second header": (second_header, "sqlite", "second header"),
    "oversized frame declaration": (oversized_declaration, "file", "declares 67108865 bytes"),
    "decompression bomb": (bomb, "sqlite", "decompresses past"),
    "truncated zstd": (truncated, "file", "truncated zstd frame"),
    "not zstd": (not_zstd, "sqlite", "not zstd"),
    "blob not its hash": (blob_wrong_hash, "sqlite", "failed verification"),
    "missing file": (missing_file, "file", "missing or unreadable"),
}


@pytest.fixture
def small_state(generated, tmp_path) -> Path:
    return copy_state(generated, tmp_path)


def read_all(state: Path) -> tuple[SqliteAgentSource, list]:
    source = SqliteAgentSource(str(state / AGENT_DB), "main")
    events: list = []
    for _ in range(100):
        batch = source.poll()
        events += batch
        if not batch and not source.behind:
            break
    source.close()
    return source, events


def assert_one_cold_error(state: Path, sid: str, row: dict, expected: str,
                          listing: dict) -> None:
    _, events = read_all(state)
    cold = [e for e in events if isinstance(e, SourceError) and e.where.startswith("cold/")]
    assert len(cold) == 1, cold
    assert cold[0].where == f"cold/{row['archive_name']}"
    assert expected in cold[0].message and sid[:8] in cold[0].message
    assert not read_from(sid, events)
    assert tree(state) == listing


@pytest.mark.parametrize("case", sorted(FORGED))
def test_a_forged_archive_is_an_error_not_a_crash(small_state, case):
    forge, storage, expected = FORGED[case]
    sid = _some_session(small_state)
    row = cold_store(small_state, sid, storage, forge=forge)
    assert_one_cold_error(small_state, sid, row, expected, tree(small_state))


def test_a_fifo_in_place_of_an_archive_is_refused(small_state):
    sid = _some_session(small_state)
    row = cold_store(small_state, sid, "file", forge=missing_file)
    (small_state / COLD_DIR).mkdir(parents=True, exist_ok=True)
    os.mkfifo(small_state / COLD_DIR / row["archive_name"])
    assert_one_cold_error(small_state, sid, row, "a FIFO", tree(small_state))


def test_a_symlink_out_of_the_cold_dir_is_not_followed(small_state, tmp_path):
    sid = _some_session(small_state)
    row = cold_store(small_state, sid, "file")
    path = small_state / COLD_DIR / row["archive_name"]
    outside = tmp_path / "outside.jsonl.zst"
    shutil.move(path, outside)       # a valid archive, but outside the dir
    path.symlink_to(outside)
    assert_one_cold_error(small_state, sid, row, "is a symlink; not followed",
                          tree(small_state))


def test_a_cold_dir_that_is_a_symlink_is_not_followed(small_state, tmp_path):
    sid = _some_session(small_state)
    row = cold_store(small_state, sid, "file")
    elsewhere = tmp_path / "elsewhere"
    shutil.move(small_state / COLD_DIR, elsewhere)
    (small_state / COLD_DIR).symlink_to(elsewhere, target_is_directory=True)
    assert_one_cold_error(small_state, sid, row, "not a directory", tree(small_state))


def test_a_bad_archive_is_reported_once_and_read_once_repaired(small_state):
    sid = _some_session(small_state)
    row = cold_store(small_state, sid, "file", forge=wrong_hash)
    source = SqliteAgentSource(str(small_state / AGENT_DB), "main", sweep_seconds=0)
    first = source.poll() + source.poll() + source.poll()
    assert sum(isinstance(e, SourceError) and e.where.startswith("cold/") for e in first) == 1
    assert not read_from(sid, first)
    path = small_state / COLD_DIR / row["archive_name"]
    data = path.read_bytes()                 # restored from a backup: the bit flipped back
    path.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    later = source.poll()
    assert not [e for e in later if isinstance(e, SourceError)]
    assert read_from(sid, later)
    assert not read_from(sid, source.poll())
    source.close()


def read_from(sid: str, events: list) -> list:
    """The transcript events of ``sid`` (its rows' origins end ``#<sid>:<seq>``)."""
    return [e for e in events if not isinstance(e, SourceError)
            and f"#{sid}:" in getattr(e, "origin", "")]


def _some_session(state: Path) -> str:
    return session_ids(state)[2]


def test_a_cold_table_without_rowid_is_read(tmp_path):
    """A cold table declared ``WITHOUT ROWID`` (its key is the session id): listing it
    failed (``no such column: rowid``) on every poll the database changed, after which the
    database was closed and opened again, and no archive was ever read."""
    from chaos_writer import AGENT_DDL, assistant_tool_call
    from test_hostile_sqlite import add_row, add_session

    from monitor.events import ToolCall

    state = tmp_path / "state"
    (state / AGENT_DB).parent.mkdir(parents=True)
    conn = sqlite3.connect(state / AGENT_DB, isolation_level=None)
    conn.executescript(AGENT_DDL)
    conn.executescript(COLD_DDL.replace(") STRICT;", ") STRICT, WITHOUT ROWID;"))
    sids = {"file": "11111111-0000-0000-0000-000000000001",
            "sqlite": "11111111-0000-0000-0000-000000000002",
            "hot": "11111111-0000-0000-0000-000000000003"}
    for name, sid in sids.items():
        add_session(conn, f"agent:main:{name}", sid, 2)
    for storage in ("file", "sqlite"):
        cold_store(state, sids[storage], storage)
    source = SqliteAgentSource(str(state / AGENT_DB), "main")
    events = []
    for n in range(10):
        add_row(conn, sids["hot"], 3 + n, assistant_tool_call(f"hot-{n}", 3 + n))
        events += source.poll()
    source.close()
    conn.close()
    assert [e for e in events if isinstance(e, SourceError)] == []
    calls = Counter(e.call_id for e in events if isinstance(e, ToolCall))
    assert set(calls.values()) == {1}
    assert {c.rsplit("-", 1)[0] for c in calls} == {
        "agent:main:file-call", "agent:main:sqlite-call", "agent:main:hot-call", "hot"}

"""``replay`` never loses an agent database's rows without saying so, however it is split.

A session id taken from a transcript's file name that is not UTF-8 holds surrogate escapes;
it names no database row and must not fail the database's reading for the whole shard. And
an error no one session owns (``SourceError.shared``: the database as a whole failing)
raised while a shard reads transcripts reaches the document once, whether one shard saw it
or all of them, and is never hidden by the replay cache.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest
from chaos_writer import assistant_tool_call, session_header
from small_state import DB_SID, SID, make_state
from test_hostile_sqlite import GOOD_KEY, GOOD_SID, add_session, add_window, make_db

from monitor import replay_shards
from monitor.config import Config
from monitor.detect.engine import DetectionEngine
from monitor.display import json_dumps
from monitor.replay import ReplayInput, replay
from monitor.sources import base
from monitor.sources.sourceset import SourceSet
from monitor.sources.sqlite_agent import SqliteAgentSource

CLAUDE_FIXTURE = (Path(__file__).parent / "fixtures" / "claude_code" / "projects"
                  / "-tmp-cap-work" / "c00b08a2-3350-4e1a-8ea4-8c22db0e06f5.jsonl")
DB_KEY = "agent:sq:main"
#: What the database raises where a test makes it fail.
SHARD_FAILURE = "file is not a database (test)"


def documents(what: ReplayInput, jobs_list, monkeypatch, **kwargs) -> dict[int, dict]:
    """The replay document of ``what`` for each number of jobs, the dir split into shards
    however small it is."""
    monkeypatch.setattr(replay_shards, "BYTES_PER_JOB", 1)
    return {jobs: json.loads(json_dumps(replay(what, Config(), DetectionEngine, jobs,
                                               **kwargs)))
            for jobs in jobs_list}


def source_of(document: dict, kind: str) -> dict:
    (found,) = [s for s in document["sources"] if s["kind"] == kind]
    return found


def session_of(document: dict, key: str) -> dict:
    (found,) = [s for s in document["sessions"] if s["key"] == key]
    return found


@pytest.mark.parametrize("where", ["legacy", "claude-code"])
def test_a_transcript_name_that_is_not_utf8_loses_no_database_row(tmp_path, where,
                                                                   monkeypatch):
    state, _ = make_state(tmp_path)
    claude_dirs: tuple[str, ...] = ()
    if where == "legacy":
        sessions = state / "agents" / "main" / "sessions"
        name = os.fsdecode(b"\xe9")        # the session id a legacy file name gives
        (sessions / f"{name}.jsonl").write_text("\n".join(json.dumps(entry) for entry in (
            session_header(name), assistant_tool_call("e1", 1))) + "\n")
    else:
        project = tmp_path / "claude" / "projects" / "-home-p"
        project.mkdir(parents=True)
        shutil.copy(CLAUDE_FIXTURE, os.fsdecode(bytes(project) + b"/caf\xe9.jsonl"))
        claude_dirs = (str(tmp_path / "claude" / "projects"),)
    what = ReplayInput(state_dir=str(state), claude_dirs=claude_dirs)
    found = documents(what, (1, 2), monkeypatch)
    for jobs, document in found.items():
        database = source_of(document, "sqlite")
        assert (database["events"], database["errors"]) == (7, 0), f"--jobs {jobs}"
        assert session_of(document, DB_KEY)["tool_calls"] == 3, f"--jobs {jobs}"
        assert session_of(document, DB_KEY)["session_id"] == DB_SID
        assert all(s["kind"] != "internal" for s in document["sources"]), f"--jobs {jobs}"
    assert found[1] == found[2]


def fail_transcript_reads(monkeypatch) -> None:
    """The agent database fails each query that reads its transcripts: a fault met only in
    the shards, since the main process reads the index alone."""
    def failing(self, conn, out):
        raise sqlite3.DatabaseError(SHARD_FAILURE)

    monkeypatch.setattr(SqliteAgentSource, "_read_transcripts", failing)


def test_a_database_failing_in_the_shards_is_one_error_whatever_the_split(tmp_path,
                                                                          monkeypatch):
    state, _ = make_state(tmp_path)
    fail_transcript_reads(monkeypatch)
    found = documents(ReplayInput(state_dir=str(state)), (1, 2, 3), monkeypatch)
    for jobs, document in found.items():
        database = source_of(document, "sqlite")
        assert database["errors"] == 1, f"--jobs {jobs}"
        assert database["error_samples"] == [{
            "path": database["path"], "where": "query",
            "message": f"database unreadable: {SHARD_FAILURE}"}], f"--jobs {jobs}"
        assert source_of(document, "jsonl")["errors"] == 0
    assert found[1] == found[2] == found[3]


def test_a_shard_failure_counted_by_the_index_read_too_is_counted_once(tmp_path,
                                                                       monkeypatch):
    """The same failure met by the main process's index read and by every shard."""
    state, _ = make_state(tmp_path)

    def failing(self, conn, out):
        raise sqlite3.DatabaseError(SHARD_FAILURE)

    monkeypatch.setattr(SqliteAgentSource, "_read_sessions", failing)
    found = documents(ReplayInput(state_dir=str(state)), (1, 3), monkeypatch)
    for jobs, document in found.items():
        assert source_of(document, "sqlite")["errors"] == 1, f"--jobs {jobs}"
    assert found[1] == found[3]


def fail_rows_from(seq: int, monkeypatch) -> None:
    """The agent database fails at the transcript row ``seq`` of a session: the rows before
    it are read, so the session is read partly."""
    read_row = SqliteAgentSource.add_row

    def failing(self, sid, row, out, summing):
        if row[0] >= seq:
            raise sqlite3.DatabaseError(SHARD_FAILURE)
        return read_row(self, sid, row, out, summing)

    monkeypatch.setattr(SqliteAgentSource, "add_row", failing)


def test_the_cache_never_answers_without_a_shard_failure(tmp_path, monkeypatch):
    """A session read partly, up to a failure, is not cached: once the database reads
    again, the replay reads all of it."""
    state, _ = make_state(tmp_path)
    what = ReplayInput(state_dir=str(state))
    cache = tmp_path / "cache"
    with monkeypatch.context() as failing:
        fail_rows_from(2, failing)
        first, again = (documents(what, (2,), monkeypatch, cache=cache)[2] for _ in range(2))
    for document in (first, again):
        assert source_of(document, "sqlite")["errors"] == 1
        assert session_of(document, DB_KEY)["tool_calls"] == 1
    assert again == first
    healed = documents(what, (2,), monkeypatch, cache=cache)[2]
    assert source_of(healed, "sqlite")["errors"] == 0
    assert session_of(healed, DB_KEY)["tool_calls"] == 3


def test_an_index_error_every_shard_meets_keeps_the_cache(tmp_path, monkeypatch):
    """An index that cannot be read is met by the main process's read of the index and
    again by every shard's: it is counted once and keeps no session out of the cache, so a
    replay after one transcript grew reads that session alone."""
    state, _ = make_state(tmp_path)
    sessions_dir = state / "agents" / "main" / "sessions"
    other = "22222222-3333-4444-5555-666666666666"
    (sessions_dir / f"{other}.jsonl").write_text("\n".join(json.dumps(entry) for entry in [
        session_header(other), assistant_tool_call("o1", 1)]) + "\n")
    (sessions_dir / "sessions.json").write_text('{"agent:main:main": {"sessionId": ')
    what = ReplayInput(state_dir=str(state))
    cache = tmp_path / "cache"
    first = documents(what, (2,), monkeypatch, cache=cache)[2]
    assert source_of(first, "jsonl")["errors"] == 1
    read: list[str] = []
    real_read_shard = replay_shards.read_shard

    def reading(what, config, engine_factory, sessions):
        read.extend(sessions)
        return real_read_shard(what, config, engine_factory, sessions)

    monkeypatch.setattr(replay_shards, "read_shard", reading)
    with (sessions_dir / f"{other}.jsonl").open("a") as grown:
        grown.write(json.dumps(assistant_tool_call("o2", 2)) + "\n")
    again = documents(what, (1,), monkeypatch, cache=cache)[1]     # read in this process
    assert read == [other]
    assert source_of(again, "jsonl")["errors"] == 1
    by_id = [{s["session_id"]: s for s in document["sessions"]} for document in (first, again)]
    assert by_id[1][SID] == by_id[0][SID]
    assert by_id[1][other]["tool_calls"] == by_id[0][other]["tool_calls"] + 1


def test_a_database_of_bad_index_rows_is_counted_whole_and_kept_bounded(tmp_path,
                                                                       monkeypatch):
    """Every bad index row is an error of its own, counted by the main process's read of the
    index: a replay's sources keep only the first ``SHARED_ERRORS_KEPT`` of them to match
    against the shards', so a crafted database of millions costs no memory per row."""
    monkeypatch.setattr(base, "SHARED_ERRORS_KEPT", 50)
    state = tmp_path / "state"
    conn = make_db(state / "agents" / "main" / "agent" / "openclaw-agent.sqlite")
    add_session(conn, GOOD_KEY, GOOD_SID, 3)
    for n in range(200):
        add_window(conn, 1000 + n, f"agent:main:bad-{n}")      # an integer session id
    conn.close()
    found = documents(ReplayInput(state_dir=str(state)), (1, 2), monkeypatch)
    for jobs, document in found.items():
        assert source_of(document, "sqlite")["errors"] == 200, f"--jobs {jobs}"
        assert session_of(document, GOOD_KEY)["tool_calls"] == 3
    assert found[1] == found[2]
    sources = SourceSet(state_dir=str(state), replay=True)
    try:
        while sources.poll() or sources.behind:
            pass
        [source] = [s for s in sources.sources if s.kind == "sqlite"]
        assert source.errors == 200 and len(source.shared_errors) == 50
    finally:
        sources.close()

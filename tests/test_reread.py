"""A replay's shards take the session index and the dir's listing the main process made,
unless what they were made from changed (``monitor.sources.reread``)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from monitor.config import Config
from monitor.detect.engine import DetectionEngine
from monitor.replay import ReplayInput, replay
from monitor.sources import legacy_index
from monitor.sources.legacy import LegacySessionsSource
from monitor.sources.legacy_listing import TranscriptListing
from monitor.sources.reread import recall, remembered

HOUR_AGO = time.time() - 3600


def counted(monkeypatch, owner, name: str) -> list:
    """Patch ``owner.name`` to count its calls; the list gets one entry per call."""
    calls: list = []
    real = getattr(owner, name)

    def counting(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, counting)
    return calls


def test_only_inside_remembered_is_a_value_kept():
    made: list[int] = []

    def make() -> int:
        made.append(1)
        return len(made)

    assert (recall("k", make), recall("k", make)) == (1, 2)
    with remembered():
        assert (recall("k", make), recall("k", make), recall("other", make)) == (3, 3, 4)
        with remembered():
            assert recall("k", make) == 3          # a nested block shares the outer's
    assert recall("k", make) == 5


def write_sessions(sessions: Path, ids: list[str], mtime: float) -> None:
    sessions.mkdir(parents=True, exist_ok=True)
    (sessions / "sessions.json").write_text(json.dumps(
        {f"agent:main:{sid}": {"sessionId": sid, "sessionFile": f"{sid}.jsonl"} for sid in ids}))
    for sid in ids:
        (sessions / f"{sid}.jsonl").write_text(json.dumps({"type": "session", "id": sid}) + "\n")
    for path in [*sessions.iterdir(), sessions]:
        os.utime(path, (mtime, mtime))


def read(sessions: Path) -> tuple[list[str], list[str]]:
    source = LegacySessionsSource(str(sessions), "main")
    try:
        ids = sorted(record.session_id for record in source.read_index())
        return ids, sorted(source.transcript_units())
    finally:
        source.close()


def test_an_unchanged_index_and_dir_are_read_once_and_a_changed_one_again(
        tmp_path, monkeypatch):
    decodes = counted(monkeypatch, legacy_index, "index_entries")
    listings = counted(monkeypatch, TranscriptListing, "_every_transcript")
    sessions = tmp_path / "agents" / "main" / "sessions"
    write_sessions(sessions, ["a", "b"], HOUR_AGO)
    with remembered():
        assert read(sessions) == read(sessions) == (["a", "b"], ["a", "b"])
        assert (len(decodes), len(listings)) == (1, 1)
        write_sessions(sessions, ["a", "b", "c"], HOUR_AGO + 60)
        assert read(sessions) == (["a", "b", "c"], ["a", "b", "c"])
        assert (len(decodes), len(listings)) == (2, 2)
    assert read(sessions) == (["a", "b", "c"], ["a", "b", "c"])
    assert (len(decodes), len(listings)) == (3, 3)


def test_a_dir_still_changing_is_listed_again(tmp_path, monkeypatch):
    listings = counted(monkeypatch, TranscriptListing, "_every_transcript")
    sessions = tmp_path / "agents" / "main" / "sessions"
    write_sessions(sessions, ["a"], time.time())
    with remembered():
        read(sessions)
        (sessions / "b.jsonl").write_text(json.dumps({"type": "session", "id": "b"}) + "\n")
        assert read(sessions)[1] == ["a", "b"]
    assert len(listings) == 2


def test_a_replay_in_shards_decodes_each_index_once(generated_state_dirs, monkeypatch):
    decodes = counted(monkeypatch, legacy_index, "index_entries")
    state_dir = generated_state_dirs / "legacy"
    indexes = list(state_dir.glob("agents/*/sessions/sessions.json"))
    document = replay(ReplayInput(state_dir=str(state_dir)), Config(), DetectionEngine, 1)
    assert document["sessions"]
    assert len(decodes) == len(indexes) >= 1

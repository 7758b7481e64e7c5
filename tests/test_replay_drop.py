"""A replay lets go of the detector state of a session whose transcripts it has read to the
end (``DetectionEngine.freeze_idle`` with the sources' ``unfinished_of``) instead of
freezing it, and reads a shard again, freezing, when such a session gets another event.

The state dirs come from ``bench/gen_large_state.py`` (``conftest.generate_state_dirs``);
each document is compared with the one a single ``Monitor`` over every source gives.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from conftest import generate_state_dirs
from test_replay_jobs import one_process

from monitor import replay_shards
from monitor.config import Config
from monitor.detect.engine import DetectionEngine
from monitor.detect.frozen import FrozenStates
from monitor.display import json_dumps
from monitor.replay import ReplayInput, replay
from monitor.sources.sourceset import SourceSet

#: An assistant reply appended to a transcript already read: its tokens change the session's.
GROWN_ENTRY = {"type": "message", "timestamp": "2026-12-06T23:00:00.000Z",
               "message": {"role": "assistant", "timestamp": 1796598000000, "model": "grown",
                           "content": [{"type": "text", "text": "one more reply"}],
                           "usage": {"input": 1234, "output": 56, "totalTokens": 1290},
                           "stopReason": "stop"}}


def replayed(state_dir: Path) -> dict:
    what = ReplayInput(state_dir=str(state_dir), log_path=str(state_dir / "logs" /
                                                               "openclaw.log"))
    return replay(what, Config(), DetectionEngine, 1)


@pytest.fixture
def counted(monkeypatch) -> dict:
    """How many states were frozen and dropped, and whether each shard reading dropped."""
    seen = {"frozen": 0, "dropped": 0, "readings": []}
    real_put, real_freeze, real_read = (FrozenStates.put, DetectionEngine.freeze_idle,
                                        replay_shards._read_shard)

    def put(self, session_id, state):
        seen["frozen"] += 1
        return real_put(self, session_id, state)

    def freeze_idle(self, unfinished_of=None):
        before = len(self._dropped)
        real_freeze(self, unfinished_of)
        seen["dropped"] += len(self._dropped) - before

    def read(*args, drop_finished):
        seen["readings"].append(drop_finished)
        return real_read(*args, drop_finished=drop_finished)

    monkeypatch.setattr(FrozenStates, "put", put)
    monkeypatch.setattr(DetectionEngine, "freeze_idle", freeze_idle)
    monkeypatch.setattr(replay_shards, "_read_shard", read)
    return seen


@pytest.mark.parametrize("era", ["legacy", "sqlite"])
def test_sessions_read_to_the_end_are_dropped_not_frozen(generated_state_dirs, era, counted):
    state_dir = generated_state_dirs / era
    assert json_dumps(replayed(state_dir)) == json_dumps(one_process(state_dir))
    assert counted["readings"] == [True]
    assert counted["frozen"] == 0
    assert counted["dropped"] >= 70             # of 80 sessions, all but the last read


def grow(state_dir: Path, era: str, session_id: str) -> None:
    entry = json.dumps(GROWN_ENTRY)
    if era == "legacy":
        transcript = state_dir / "agents" / "main" / "sessions" / f"{session_id}.jsonl"
        with transcript.open("a") as handle:
            handle.write(entry + "\n")
        return
    with sqlite3.connect(state_dir / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
                         ) as conn:
        top = conn.execute("SELECT max(seq) FROM transcript_events WHERE session_id = ?",
                           (session_id,)).fetchone()[0]
        conn.execute("INSERT INTO transcript_events (session_id, seq, event_json, created_at)"
                     " VALUES (?, ?, ?, 0)", (session_id, top + 1, entry))


@pytest.mark.parametrize("era", ["legacy", "sqlite"])
def test_a_transcript_that_grows_after_its_session_was_dropped_is_read_again(
        tmp_path, era, counted, monkeypatch):
    state_dir = generate_state_dirs(tmp_path) / era
    before = one_process(state_dir)
    grown: list[str] = []
    counting_freeze = DetectionEngine.freeze_idle

    def freeze_and_grow(self, unfinished_of=None):
        counting_freeze(self, unfinished_of)
        if self._dropped and not grown:
            grown.append(sorted(self._dropped)[0])
            grow(state_dir, era, grown[0])

    monkeypatch.setattr(DetectionEngine, "freeze_idle", freeze_and_grow)
    document = replayed(state_dir)
    assert counted["readings"] == [True, False]
    assert counted["frozen"] > 0
    assert json_dumps(document) == json_dumps(one_process(state_dir))
    tokens = {s["session_id"]: s["tokens"]["input"] for s in document["sessions"]}
    assert tokens[grown[0]] == 1234 + next(s["tokens"]["input"] for s in before["sessions"]
                                           if s["session_id"] == grown[0])


@pytest.mark.parametrize("era", ["legacy", "sqlite"])
def test_a_source_names_the_sessions_it_may_read_more_of(generated_state_dirs, era):
    sources = SourceSet(state_dir=str(generated_state_dirs / era), replay=True,
                        transcripts_only=True)
    for source in sources.sources:
        source.poll_budget_bytes = 64 << 10
        source.max_open_followers = 0
    try:
        given: list[str] = []
        while True:
            given += [e.session_id for e in sources.poll() if type(e).__name__ == "ToolCall"]
            if given:
                break
        every = sorted({sid for source in sources.sources for sid in source.transcript_units()})
        unfinished = sources.unfinished_of(every)
        assert set(every) - set(given) <= unfinished
        assert set(given) - {given[-1]} and not (set(given) - {given[-1]}) & unfinished
        while sources.poll() or sources.behind:
            pass
        assert sources.unfinished_of(every) == set()
    finally:
        sources.close()


def test_a_shard_looks_at_the_transcripts_it_read_only_once_it_read_them_all(
        generated_state_dirs, monkeypatch):
    """While a shard reads, the transcripts it read to their end are not looked at again (a
    stat each, every poll); the poll after the one that read everything looks at each
    once, so a change is still seen."""
    from monitor.sources.tail_idle import IdleFollowing

    state_dir = generated_state_dirs / "legacy"
    looks = []
    real_changed = IdleFollowing.changed
    monkeypatch.setattr(IdleFollowing, "changed",
                        lambda self: looks.append(self.path) or real_changed(self))
    monkeypatch.setattr(replay_shards, "SHARD_POLL_BYTES", 16 << 10)    # many polls
    replayed(state_dir)
    transcripts = list((state_dir / "agents" / "main" / "sessions").glob("*.jsonl"))
    assert len(looks) == len(set(looks)) == len(transcripts)

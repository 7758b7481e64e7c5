"""The first poll is small and the whole session index is released at once, so a board shows
every session (running ones included) before history is read."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from monitor.demo.sim.simulator import Simulator
from monitor.events import SessionInfo, SourceNotice
from monitor.pipeline import Monitor
from monitor.snapshot_feed import SnapshotFeed
from monitor.sources import sourceset
from monitor.sources.sourceset import SourceSet

SCENARIOS = ("hammer", "pingpong", "poll", "heavy", "healthy", "burner", "rotation", "drift")


def simulate(tmp_path, era: str) -> str:
    sim = Simulator(tmp_path / "state", era=era, log_path=tmp_path / "gw.log")
    for n, name in enumerate(SCENARIOS * 3):
        sim.add_session(name, key=f"agent:main:{name}-{n}")
    sim.run(calls=2400, rate=0)
    sim.close()
    return str(tmp_path / "state")


def read_all(sources: SourceSet) -> list:
    events = sources.poll()
    while sources.behind:
        events += sources.poll()
    return events


@pytest.mark.parametrize("era", ["sqlite", "legacy"])
def test_first_poll_is_the_index_and_a_small_step(tmp_path, monkeypatch, era):
    state_dir = simulate(tmp_path, era)
    whole = read_all(SourceSet(state_dir=state_dir))
    transcript_events = [e for e in whole if not isinstance(e, SessionInfo)]
    assert len(transcript_events) > 2000
    monkeypatch.setattr(sourceset, "FIRST_POLL_BUDGET_BYTES", 16 * 1024)
    monkeypatch.setattr(sourceset, "STEP_SECONDS", 600.0)   # the budget ends the step
    sources = SourceSet(state_dir=state_dir)
    first = sources.poll()
    index = [e for e in first if isinstance(e, SessionInfo)]
    assert {e.key for e in index} == {e.key for e in whole if isinstance(e, SessionInfo)}
    assert len({e.key for e in index}) == len(SCENARIOS) * 3
    assert sources.behind and sources.backlog_bytes > 0
    assert 0 < len(first) - len(index) < len(transcript_events) / 10
    rest = read_all(sources)
    origins = [e.origin for e in first + rest if hasattr(e, "origin")]
    assert len(origins) == len(set(origins)), "an event was read twice"
    assert sorted(origins) == sorted(e.origin for e in whole if hasattr(e, "origin"))


def touch_index(state_dir: str, era: str) -> None:
    """Change one session's update time in the index, as the gateway does on every run."""
    agent = Path(state_dir) / "agents" / "main"
    if era == "legacy":
        index = agent / "sessions" / "sessions.json"
        entries = json.loads(index.read_text())
        entry = entries[min(entries)]
        entry["updatedAt"] = entry.get("updatedAt", 0) + 1
        index.write_text(json.dumps(entries))
        return
    [database] = (agent / "agent").glob("*.sqlite")
    with sqlite3.connect(database) as conn:
        conn.execute("UPDATE session_nodes SET updated_at = "
                     "(SELECT max(updated_at) FROM session_nodes) + 1 "
                     "WHERE rowid = (SELECT min(rowid) FROM session_nodes)")


@pytest.mark.parametrize("era", ["sqlite", "legacy"])
def test_an_index_that_takes_the_step_is_shown_before_any_transcript(tmp_path, monkeypatch,
                                                                      era):
    """When reading the index takes the step's time (10,000 sessions), the poll ends with
    it, so the board shows every session before a transcript is listed; never two polls in
    a row, so an index rewritten on every poll does not keep the transcripts waiting."""
    state_dir = simulate(tmp_path, era)
    whole = read_all(SourceSet(state_dir=state_dir))
    monkeypatch.setattr(sourceset, "STEP_SECONDS", 0.0)
    sources = SourceSet(state_dir=state_dir)
    first = sources.poll()
    assert first and all(isinstance(e, (SessionInfo, SourceNotice)) for e in first)
    assert len({e.key for e in first if isinstance(e, SessionInfo)}) == len(SCENARIOS) * 3
    assert sources.behind
    polls = [first]
    ended = [[source.index_ended_poll for source in sources.sources]]
    for _ in range(6):
        touch_index(state_dir, era)
        polls.append(sources.poll())
        ended.append([source.index_ended_poll for source in sources.sources])
        assert not any(map(bool.__and__, ended[-2], ended[-1])), "two polls ended at the index"
    assert sum(map(any, ended)) == 4
    monkeypatch.setattr(sourceset, "STEP_SECONDS", 0.1)
    polls.append(read_all(sources))
    origins = [e.origin for poll in polls for e in poll
               if hasattr(e, "origin") and not isinstance(e, SessionInfo)]
    assert len(origins) == len(set(origins)), "an event was read twice"
    assert sorted(origins) == sorted(e.origin for e in whole
                                     if hasattr(e, "origin") and not isinstance(e, SessionInfo))


def test_the_feed_releases_the_whole_index_in_its_first_slice(tmp_path):
    state_dir = simulate(tmp_path, "sqlite")
    feed = SnapshotFeed(SourceSet(state_dir=state_dir), slice_events=5)
    Monitor(feed)
    first = feed.poll()
    assert len({e.key for e in first if isinstance(e, SessionInfo)}) == len(SCENARIOS) * 3
    assert not any(isinstance(e, SessionInfo) for e in feed.pending)
    assert sum(not isinstance(e, SessionInfo) for e in first) == 5
    assert feed.backlog > 0


@pytest.mark.parametrize("era", ["sqlite", "legacy"])
def test_a_stopping_step_is_small_and_loses_nothing(tmp_path, monkeypatch, era):
    """Once stopping, a step reads at most ``STOPPING_POLL_BUDGET_BYTES`` of each source (its
    fold must fit in the 2 s a stop may take), and stepping on reads the rest exactly once."""
    state_dir = simulate(tmp_path, era)
    whole = read_all(SourceSet(state_dir=state_dir))
    monkeypatch.setattr(sourceset, "STOPPING_POLL_BUDGET_BYTES", 16 * 1024)
    sources = SourceSet(state_dir=state_dir)
    for source in sources.sources:      # a normal step that cannot take the whole dir either
        source.poll_budget_bytes = 256 * 1024
    first = sources.poll()
    normal = sources.poll()
    sources.note_stopping()
    stopping = sources.poll()
    assert sources.behind
    assert 0 < len(stopping) < len(normal) / 4
    rest = read_all(sources)
    origins = [e.origin for e in first + normal + stopping + rest if hasattr(e, "origin")]
    assert len(origins) == len(set(origins)), "an event was read twice"
    assert sorted(origins) == sorted(e.origin for e in whole if hasattr(e, "origin"))

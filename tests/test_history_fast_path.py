"""The present first: a board or ``watch`` runs the detectors on what happened within
``history.active_within`` (and on every session the index says is running); older history
is counted (tokens, tool calls) but not detected on, and costs no detector state.

The transcript is a real OpenClaw 2026.9.6 hammer loop (``oc-hammer.jsonl``), its times
moved to the age each test needs.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from monitor.config import Config
from monitor.detect.engine import DetectionEngine
from monitor.pipeline import Monitor
from monitor.replay import read_to_end
from monitor.sources.sourceset import SourceSet

FIXTURE = Path(__file__).parent / "fixtures" / "oc-hammer.jsonl"
DAY = 86_400.0


def shifted_entries(text: str, end_age: float) -> list[dict]:
    """The transcript ``text``'s entries, every time moved so the last is ``end_age`` seconds
    old."""
    lines = [json.loads(line) for line in text.splitlines() if line.strip()]
    last = max(datetime.fromisoformat(e["timestamp"].replace("Z", "+00:00")).timestamp()
               for e in lines if "timestamp" in e)
    shift = time.time() - end_age - last
    for entry in lines:
        if "timestamp" in entry:
            moment = datetime.fromisoformat(entry["timestamp"].replace("Z", "+00:00"))
            entry["timestamp"] = datetime.fromtimestamp(moment.timestamp() + shift, UTC) \
                .isoformat().replace("+00:00", "Z")
        message = entry.get("message")
        if isinstance(message, dict) and isinstance(message.get("timestamp"), int):
            message["timestamp"] += int(shift * 1000)
    return lines


def state_dir_with_hammer(root: Path, age_seconds: float, status: str) -> str:
    """A legacy state dir holding the hammer loop, its last entry ``age_seconds`` old."""
    lines = shifted_entries(FIXTURE.read_text(), age_seconds)
    sid = lines[0]["id"]
    sessions = root / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / f"{sid}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in lines))
    (sessions / "sessions.json").write_text(json.dumps({
        "agent:main:main": {"sessionId": sid, "status": status, "updatedAt": 0}}))
    return str(root)


def board_monitor(state_dir: str) -> Monitor:
    """A monitor as the board and ``watch`` build it, with the default lookback."""
    engine = DetectionEngine(Config())
    monitor = Monitor(SourceSet(state_dir=state_dir, replay=True), engine,
                      detect_since=time.time() - Config().history.active_within)
    read_to_end(monitor)
    return monitor


def test_a_loop_within_the_lookback_is_found(tmp_path):
    monitor = board_monitor(state_dir_with_hammer(tmp_path, 3600, "done"))
    (state,) = monitor.sessions.values()
    assert any(f.level == "critical" for f in state.findings)


def test_old_history_is_counted_not_detected(tmp_path):
    monitor = board_monitor(state_dir_with_hammer(tmp_path, 3 * DAY, "done"))
    (state,) = monitor.sessions.values()
    assert state.tool_calls > 20 and state.tokens_total > 0
    assert state.findings == [] and state.findings_total == 0
    assert monitor.engine._sessions == {}, "old history keeps no detector state"


def test_a_running_session_is_detected_whatever_its_age(tmp_path):
    monitor = board_monitor(state_dir_with_hammer(tmp_path, 3 * DAY, "running"))
    (state,) = monitor.sessions.values()
    assert any(f.level == "critical" for f in state.findings)


def test_replay_detects_on_all_history(tmp_path):
    sources = SourceSet(state_dir=state_dir_with_hammer(tmp_path, 30 * DAY, "done"),
                        replay=True)
    monitor = Monitor(sources, DetectionEngine(Config()))
    read_to_end(monitor)
    (state,) = monitor.sessions.values()
    assert any(f.level == "critical" for f in state.findings)


def scanned_board(state_dir: Path, config: Config, detect_since: float | None):
    """The dashboard's first scan of ``state_dir`` (one session), done: the monitor, the
    session's state and the snapshot builder."""
    from monitor.snapshot_builder import SnapshotBuilder

    monitor = Monitor(SourceSet(state_dir=state_dir), DetectionEngine(config),
                      detect_since=detect_since)
    builder = SnapshotBuilder(monitor, time.time)
    monitor.quiet = True
    while monitor.step() or builder.feed.backlog:
        pass
    builder.finish_scan()
    (state,) = monitor.sessions.values()
    return monitor, state, builder


def test_the_board_shows_an_old_sessions_budget_share_from_its_totals(tmp_path):
    """History keeps no detector state, but its row still shows how much of the session
    budget it spent, from the tokens the monitor counted."""
    from monitor.config import load_config

    config = load_config(None, env={"CLAWWATCH_BUDGETS__SESSION_TOKENS": "1000000"})
    monitor, state, builder = scanned_board(state_dir_with_hammer(tmp_path, 3 * DAY, "done"),
                                            config, time.time() - config.history.active_within)
    row = builder.build().row(state.session_id)
    assert state.tokens_total > 0 and monitor.engine._sessions == {}
    assert row.budget_percent == pytest.approx(state.tokens_total * 100.0 / 1_000_000)


def test_a_history_sessions_timeline_is_read_when_it_is_looked_at(tmp_path):
    """The scan keeps no timeline entry for history (only its calls counted); opening the
    session reads them from its transcript: the same calls, arguments and outcomes a board
    that detected on everything shows."""
    state_dir = state_dir_with_hammer(tmp_path, 3 * DAY, "done")

    def board(detect_since):
        _, state, builder = scanned_board(state_dir, Config(), detect_since)
        builder.focus = state.session_id
        return state, builder

    state, lazy = board(time.time() - DAY)
    line = lazy.feed.timelines[state.session_id]
    assert not line.calls and line.unread == state.tool_calls > 20
    _, full = board(None)

    def shown(builder):
        return [(e.index, e.tool, e.arguments, e.outcome, e.exit_code, e.is_error)
                for e in builder.build().focus.timeline]

    assert shown(lazy) == shown(full)
    assert [index for index, *_ in shown(lazy)] == list(range(1, state.tool_calls + 1))


def test_opening_a_long_history_makes_shown_only_the_calls_the_timeline_keeps(
        tmp_path, monkeypatch):
    """A timeline keeps the newest ``TIMELINE_CALLS``; reading a history session's
    transcript for it makes only those shown (making one shown is redacting its tool name
    and arguments: for 100,000 crafted names that took most of a minute)."""
    import monitor.snapshot_feed as snapshot_feed

    monkeypatch.setattr(snapshot_feed, "TIMELINE_CALLS", 8)
    made = []
    original = snapshot_feed._Call.__init__

    def counted(call, index, event, usage):
        made.append(index)
        original(call, index, event, usage)

    monkeypatch.setattr(snapshot_feed._Call, "__init__", counted)
    _, state, builder = scanned_board(state_dir_with_hammer(tmp_path, 3 * DAY, "done"),
                                      Config(), time.time() - DAY)
    assert made == [] and state.tool_calls > 20
    builder.focus = state.session_id
    timeline = builder.build().focus.timeline
    assert [entry.index for entry in timeline] == list(
        range(state.tool_calls - 7, state.tool_calls + 1))
    assert made == [entry.index for entry in timeline]

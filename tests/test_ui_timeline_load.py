"""The detail view's timeline of a session whose calls are all history (read from its
transcript when it is looked at, ``SnapshotFeed.load_history``), through the dashboard as
the CLI builds it: the newest calls show whether the load happens during the first scan or
after it, live events go on while a long load reads, and quitting during a long load ends
the reader within 2 s (docs/security.md)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from test_ui_scenes import RecordingController, scene_config, wait_for

from monitor.pipeline import Monitor
from monitor.sources.sourceset import SourceSet
from monitor.ui.factory import DashboardOptions, build_app
from monitor.ui.panes.board import SessionsBoard
from monitor.ui.screens.detail import TimelineTable

SIZE = (160, 48)
SESSION_ID = "00000000-0000-0000-0000-000000000001"
SESSION_KEY = "agent:main:long-history"
CALLS = 20000
SHOWN = 200
READ_PER_POLL = 100             # events a slow reader hands over per poll
SLOW_POLL_SECONDS = 0.05
SCAN_SLICE = 100                # events per step of the first scan, each step made slow
SLOW_STEP_SECONDS = 0.01


def write_long_history(root: Path, calls: int) -> tuple[Path, Path]:
    """A legacy-era state dir with one session of ``calls`` exec calls, three days old (so
    all history the monitor only counts), and an empty gateway log."""
    sessions = root / "state" / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    start = time.time() - 3 * 86400
    lines = [json.dumps({"type": "session", "version": 3, "id": SESSION_ID, "cwd": "/tmp",
                         "timestamp": _iso(start)})]
    for n in range(1, calls + 1):
        at = start + n * 0.01
        lines.append(json.dumps({
            "type": "message", "id": f"m{n}", "parentId": None, "timestamp": _iso(at),
            "message": {"role": "assistant", "stopReason": "toolUse", "provider": "fake",
                        "model": "m", "timestamp": int(at * 1000),
                        "content": [{"type": "toolCall", "id": f"c{n}", "name": "exec",
                                     "arguments": {"command": f"ls /tmp/{n}"}}]}}))
        lines.append(json.dumps({
            "type": "message", "id": f"r{n}", "parentId": f"m{n}", "timestamp": _iso(at),
            "message": {"role": "toolResult", "toolCallId": f"c{n}", "toolName": "exec",
                        "isError": False, "timestamp": int(at * 1000),
                        "content": [{"type": "text", "text": f"out {n}"}]}}))
    (sessions / f"{SESSION_ID}.jsonl").write_text("\n".join(lines) + "\n")
    (sessions / "sessions.json").write_text(json.dumps(
        {SESSION_KEY: {"sessionId": SESSION_ID, "updatedAt": int((start + calls) * 1000)}}))
    log = root / "gw.log"
    log.write_text("")
    return root / "state", log


def _iso(at: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(at))


@pytest.fixture(scope="module")
def long_history(tmp_path_factory) -> tuple[Path, Path]:
    return write_long_history(tmp_path_factory.mktemp("long-history"), CALLS)


def open_dashboard(state: Path, log: Path, *, slice_events: int):
    app = build_app(DashboardOptions(state_dir=str(state), log=str(log)),
                    config=scene_config(), controller=RecordingController(), poll_seconds=0.1)
    app.ingest.slice_events = slice_events
    return app


def slow_scan(monkeypatch) -> None:
    """Each monitor step takes a little longer, so the first scan lasts about a second."""
    step = Monitor.step

    def slow_step(monitor):
        time.sleep(SLOW_STEP_SECONDS)
        return step(monitor)

    monkeypatch.setattr(Monitor, "step", slow_step)


async def test_a_long_history_shows_its_newest_calls_when_opened_during_the_scan(
        long_history, monkeypatch):
    slow_scan(monkeypatch)
    app = open_dashboard(*long_history, slice_events=SCAN_SLICE)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.latest.rows and app.latest.rows[0].tool_calls)
        assert app.latest.rows[0].tool_calls < CALLS
        await pilot.press("enter")
        table = app.screen.query_one(TimelineTable)
        await wait_for(pilot, lambda: app.settled, timeout=30)
        row = app.latest.rows[0]
        assert (row.key, row.tool_calls) == (SESSION_KEY, CALLS)
        await wait_for(pilot, lambda: len(table.rows) == SHOWN)
        shown = [int(key) for key, _ in table.rows]
        assert shown == list(range(CALLS - SHOWN + 1, CALLS + 1))
        assert table.cell(str(CALLS), "args")[0] == f"command=ls /tmp/{CALLS}"


class SlowTranscripts:
    """Session readers that hand the transcript over a few events per poll, as from slow
    storage, so a timeline load outlasts the 2 s a stop may take; ``reading`` is set at
    their first poll."""

    def __init__(self, monkeypatch) -> None:
        self.reading = threading.Event()
        real = SourceSet.session_reader
        slow = self

        def session_reader(sources, session_id):
            return slow.Reader(real(sources, session_id), slow.reading)

        monkeypatch.setattr(SourceSet, "session_reader", session_reader)

    class Reader:
        def __init__(self, inner, reading: threading.Event) -> None:
            self.inner, self.reading, self.held = inner, reading, []

        @property
        def behind(self) -> bool:
            return bool(self.held) or self.inner.behind

        def poll(self) -> list:
            self.reading.set()
            time.sleep(SLOW_POLL_SECONDS)
            if not self.held:
                self.held = self.inner.poll()
            out, self.held = self.held[:READ_PER_POLL], self.held[READ_PER_POLL:]
            return out

        def close(self) -> None:
            self.inner.close()


async def test_quitting_during_a_timeline_load_ends_the_reader_within_2_s(
        long_history, monkeypatch):
    slow = SlowTranscripts(monkeypatch)
    app = open_dashboard(*long_history, slice_events=SCAN_SLICE)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, slow.reading.is_set, timeout=30)
        quit_at = time.monotonic()
        await app.action_quit()
    took = time.monotonic() - quit_at
    assert took < 2.0
    assert app.ingest.finished.is_set()


LIVE_SESSION_ID = "00000000-0000-0000-0000-000000000002"
LIVE_KEY = "agent:main:live"


def add_live_session(state: Path) -> Path:
    """A session beside the long history, written now (so detected on, not only counted),
    with one call; its transcript's path, for more calls."""
    sessions = state / "agents" / "main" / "sessions"
    now = time.time()
    transcript = sessions / f"{LIVE_SESSION_ID}.jsonl"
    transcript.write_text(json.dumps({"type": "session", "version": 3, "id": LIVE_SESSION_ID,
                                      "cwd": "/tmp", "timestamp": _iso(now)}) + "\n")
    append_call(transcript, 1)
    index = json.loads((sessions / "sessions.json").read_text())
    index[LIVE_KEY] = {"sessionId": LIVE_SESSION_ID, "updatedAt": int(now * 1000)}
    (sessions / "sessions.json").write_text(json.dumps(index))
    return transcript


def append_call(transcript: Path, n: int) -> None:
    at = time.time()
    with transcript.open("a") as out:
        out.write(json.dumps({
            "type": "message", "id": f"lm{n}", "parentId": None, "timestamp": _iso(at),
            "message": {"role": "assistant", "stopReason": "toolUse", "provider": "fake",
                        "model": "m", "timestamp": int(at * 1000),
                        "content": [{"type": "toolCall", "id": f"lc{n}", "name": "read",
                                     "arguments": {"path": f"/etc/{n}"}}]}}) + "\n")


async def test_live_events_go_on_while_a_long_timeline_loads(tmp_path, monkeypatch):
    """A timeline load that takes many seconds (a slow reader) is read in steps between the
    board's polls: a call appended to another session meanwhile reaches the board while
    the load is still under way, and the timeline's title says how far the load is."""
    state, log = write_long_history(tmp_path, CALLS)
    live = add_live_session(state)
    slow = SlowTranscripts(monkeypatch)
    app = open_dashboard(state, log, slice_events=SCAN_SLICE)

    def live_calls() -> int:
        rows = app.latest.rows if app.latest else ()
        return next((row.tool_calls for row in rows if row.key == LIVE_KEY), 0)

    def reading() -> int | None:
        focus = app.latest.focus if app.latest else None
        return focus.history_read if focus and focus.session_id == SESSION_ID else None

    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.settled and live_calls() == 1, timeout=30)
        board = app.screen.query_one(SessionsBoard)
        for _ in app.latest.rows:
            if board.cursor_key == SESSION_ID:
                break
            await pilot.press("down")
        assert board.cursor_key == SESSION_ID
        await pilot.press("enter")
        table = app.screen.query_one(TimelineTable)
        await wait_for(pilot, slow.reading.is_set)
        append_call(live, 2)
        await wait_for(pilot, lambda: live_calls() == 2, timeout=5)
        assert 0 < (reading() or 0) < CALLS
        assert "reading history" in str(table.border_title)
        await app.action_quit()

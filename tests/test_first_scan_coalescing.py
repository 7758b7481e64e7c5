"""The dashboard's cheaper work on a large state dir (issue 11): snapshots coalesced while the
first scan's backlog drains, unchanged rows refreshed without ``dataclasses.replace`` and
only when their idle time shows differently, the board sorted from its last order, no
timeline containers for sessions whose calls are only counted, log lines made shown only if
they stay in the tail. None of it may change what the board shows."""

from __future__ import annotations

from dataclasses import fields, replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_ui_scenes import run_first_scan, write_world

from monitor.detect.engine import DetectionEngine
from monitor.events import GatewayNotice, ToolCall, ToolResult
from monitor.pipeline import Monitor
from monitor.redaction import redacted_cut
from monitor.session_state import SessionState
from monitor.snapshot import BoardRow
from monitor.snapshot_builder import (
    IDLE_AFTER_SECONDS,
    STALL_AFTER_SECONDS,
    SnapshotBuilder,
    _with_idle,
    shown_idle,
)
from monitor.snapshot_feed import _NO_CALLS, _NO_PENDING, LOG_LINES, SnapshotFeed
from monitor.sources.sourceset import SourceSet
from monitor.ui.style import duration
from monitor.ui.view import BOARD_FILTERS, SORTS, BoardOrder, ViewState


@pytest.fixture(scope="module")
def world():
    made = write_world("coalescing")
    yield made
    made.sim.close()


def first_scan(world, scan_cost_factor: float) -> list:
    return run_first_scan(world, timeout=20, scan_cost_factor=scan_cost_factor)[0]


def test_coalescing_publishes_fewer_scan_snapshots_and_the_same_final_board(world):
    every = first_scan(world, scan_cost_factor=0.0)
    coalesced = first_scan(world, scan_cost_factor=1e9)   # only the forced ones
    assert len([s for s in coalesced if s.scanning]) < len([s for s in every if s.scanning])
    a, b = every[-1], coalesced[-1]
    assert not a.scanning and not b.scanning and len(a.rows) == 6
    assert a.rows == b.rows and a.alerts == b.alerts and a.log == b.log
    assert (a.sources, a.top_burners, a.scan_done, a.events) == \
        (b.sources, b.top_burners, b.scan_done, b.events)


def test_the_idle_refresh_equals_replace():
    names = [f.name for f in fields(BoardRow)]
    row = BoardRow(*[f"value-{name}" for name in names])
    assert _with_idle(row, 42.0, "idle") == replace(row, idle_seconds=42.0, state="idle")


def test_an_idle_time_kept_shows_and_ranks_as_the_exact_one():
    def band(seconds: float) -> tuple[bool, bool]:
        return seconds <= IDLE_AFTER_SECONDS, seconds > STALL_AFTER_SECONDS

    for seconds in [*range(0, 4000), *range(4000, 200_000, 7), *range(10**7, 10**7 + 7200)]:
        kept = shown_idle(float(seconds))
        assert kept <= seconds and duration(kept) == duration(seconds), seconds
        assert band(kept) == band(seconds), seconds
    assert shown_idle(None) is None


def test_a_days_old_row_is_made_again_only_when_its_idle_time_shows_differently():
    class Clock:
        now = 1_000_000.0

        def __call__(self) -> float:
            return self.now

    clock = Clock()
    monitor = _monitor_of_one_session(clock.now - 3 * 86400 - 5)
    builder = SnapshotBuilder(monitor, clock)
    first = builder.build().rows[0]
    clock.now += 60
    assert builder.build().rows[0] is first
    clock.now += 3600
    again = builder.build().rows[0]
    assert again is not first and again.idle_seconds == first.idle_seconds + 3600
    recent = _monitor_of_one_session(clock.now - 10)
    builder = SnapshotBuilder(recent, clock)
    idle = builder.build().rows[0].idle_seconds
    clock.now += 1
    assert builder.build().rows[0].idle_seconds == idle + 1


def _monitor_of_one_session(last_ts: float) -> Monitor:
    monitor = Monitor(SourceSet(paths=[]), DetectionEngine())
    state = SessionState("s1", agent_id="main", key="agent:main:s1", status="done",
                         first_ts=last_ts, last_ts=last_ts)
    monitor.sessions["s1"] = state
    return monitor


class _Events:
    def __init__(self, events) -> None:
        self.events = list(events)

    def poll(self) -> list:
        out, self.events = self.events, []
        return out


def test_counted_history_keeps_no_timeline_containers():
    def call(sid, n, ts):
        return ToolCall(sid, f"c{n}", "exec", {"command": "ls"}, None, ts)

    feed = SnapshotFeed(_Events([*(call(f"old{i}", i, 1.0) for i in range(3)),
                                 call("old0", 9, 99.0),
                                 ToolResult("old0", "c9", "exec", False, {}, "out", None, 99.0),
                                 ToolResult("old1", "c1", "exec", False, {}, "out", None, 2.0)]))
    feed.is_history = lambda event: event.ts < 50
    feed.poll()
    assert feed.timelines["old1"].calls is _NO_CALLS and feed.timelines["old1"].unread == 1
    assert feed.timelines["old2"].pending is _NO_PENDING
    recorded = feed.timelines["old0"]
    assert [c.index for c in recorded.calls] == [2] and recorded.calls[0].outcome == "out"
    assert recorded.pending == {} and _NO_PENDING == {} and _NO_CALLS == ()


def test_the_log_tail_is_made_shown_only_for_the_lines_it_keeps(monkeypatch):
    import monitor.snapshot_feed as snapshot_feed

    redacted = []

    def counting_redact(text, limit):
        redacted.append(text)
        return redacted_cut(text, limit)

    monkeypatch.setattr(snapshot_feed, "redacted_cut", counting_redact)
    secret = "sk-" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6"
    notices = [GatewayNotice("info", "gw", f"line {n}", float(n)) for n in range(LOG_LINES * 3)]
    notices[-1] = GatewayNotice("warn", "gw", f"\x1b]0;pwned\x07token {secret}", 1.0)
    feed = SnapshotFeed(_Events(notices), slice_events=len(notices))
    feed.poll()
    assert redacted == []
    tail = list(feed.log)
    assert len(redacted) == LOG_LINES
    assert [line.seq for line in tail] == list(range(2 * LOG_LINES + 1, 3 * LOG_LINES + 1))
    assert tail[0].message == f"line {2 * LOG_LINES}" and tail[-1].level == "WARN"
    assert secret not in tail[-1].message and "\x1b" not in tail[-1].message
    feed.inner.events = [GatewayNotice("info", "gw", "one more", None)]
    feed.poll()
    assert [line.message for line in feed.log][-2:] == [tail[-1].message, "one more"]
    assert len(feed.log) == LOG_LINES and len(redacted) == LOG_LINES + 1


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.lists(st.integers(0, 11), max_size=6),
                          st.sampled_from(SORTS), st.sampled_from(BOARD_FILTERS)),
                min_size=1, max_size=8))
def test_the_board_sorted_from_its_last_order_is_sorted_as_from_scratch(steps):
    """Snapshot after snapshot (rows changing, new ones appended, the sort and the filter
    switched), ``BoardOrder`` shows what a full sort shows."""
    def row(n: int, version: int) -> BoardRow:
        states = ("running", "idle", "done", "looping", "stalled", "stopped")
        return BoardRow(f"s{n:02d}", f"agent:main:k{n % 5}", "l", "main", "m",
                        states[(n + version) % 6], n * version, version, n, float(version % 3),
                        None, None, ("warning", "critical", None)[(n * version) % 3], 0,
                        float(version), 0.0, 0)

    versions: dict[int, int] = {}
    order = BoardOrder()
    for changed, sort, board_filter in steps:
        for n in changed:
            versions[n] = versions.get(n, 0) + 1
        rows = tuple(row(n, v) for n, v in versions.items())
        view = ViewState(sort=sort, board_filter=board_filter)
        assert order.rows(view, rows) == view.board_rows(rows)

"""Searching a gateway log of long lines, through the dashboard as the CLI builds it: each
key typed into the search repaints the log pane well within the dashboard's 100 ms from a
key to the screen, however many matches a line holds past what the pane can show."""

from __future__ import annotations

import time
from pathlib import Path

from test_ui_scenes import open_app, settle, wait_for, write_world

from monitor.snapshot_feed import LOG_MESSAGE_CHARS
from monitor.ui.panes.gatewaylog import LogView

SIZE = (160, 48)
LONG_LINES = 300
TYPED = "aaaa"
REPAINT_SECONDS = 0.05


async def test_typing_a_search_over_long_log_lines_repaints_within_budget(
        tmp_path: Path, monkeypatch):
    world = write_world("long-log", (("healthy", "agent:main:tidy", 2),), root=tmp_path)
    for n in range(LONG_LINES):
        world.sim.log.write(world.sim_clock.now, "INFO", "gateway",
                            f"line {n} " + "a" * LOG_MESSAGE_CHARS)
    painting = [0.0]
    render_line = LogView.render_line

    def timed_render_line(view, y):
        started = time.perf_counter()
        try:
            return render_line(view, y)
        finally:
            painting[-1] += time.perf_counter() - started

    monkeypatch.setattr(LogView, "render_line", timed_render_line)
    app = open_app(world)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        view = app.query_one(LogView)
        await wait_for(pilot, lambda: len(view.lines) >= LONG_LINES)
        await pilot.press("slash")
        for typed in range(1, len(TYPED) + 1):
            painting.append(0.0)
            await pilot.press("a")
            await wait_for(pilot, lambda typed=typed: view.pattern is not None
                           and view.pattern.pattern == "a" * typed)
            await pilot.pause()
    assert max(painting[1:]) <= REPAINT_SECONDS, painting[1:]

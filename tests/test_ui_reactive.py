"""The dashboard's reactive wiring (issue 12, item 13), driven through Pilot.

State changed through the path the app itself uses (the alert book, the status notes,
the view, a screen coming into view) reaches the panes with no explicit render call,
and a burst of changes renders once. The display is paused first in each test, so no
new snapshot can be what re-rendered a pane: only the wiring under test can.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from test_ui_scenes import open_app, settle, wait_for, write_world

from monitor.ui.screens.detail import DetailScreen
from monitor.ui.view import SORTS

SIZE = (160, 48)
PLAN = (("hammer", "agent:main:hammer", 5), ("healthy", "agent:main:tidy", 2))


@pytest.fixture
def world(tmp_path):
    world = write_world("reactive", PLAN, root=tmp_path)
    yield world
    world.sim.close()


async def pause_display(pilot) -> None:
    await pilot.press("p")
    await pilot.pause()
    assert pilot.app.view.paused


async def test_acknowledging_and_muting_the_book_show_in_the_alerts_pane(world):
    app = open_app(world)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        world.step("agent:main:hammer", 17)
        await wait_for(pilot, lambda: app.book.unacked_critical(app.latest.alerts))
        await settle(pilot)
        await pause_display(pilot)
        pane = app.alerts_pane
        unacked = sum(not app.book.is_acked(a) for a in app.displayed.alerts)
        assert unacked and f"· {unacked} unacknowledged" in str(pane.border_title)
        assert any(pane.cell(key, "ack")[0] == "●" for key in pane.keys)

        app.book.acknowledge(app.latest.alerts)        # what "A" does
        await pilot.pause()
        assert "· 0 unacknowledged" in str(pane.border_title)
        assert all(pane.cell(key, "ack")[0] == " " for key in pane.keys)

        app.book.muted = True                           # what "m" does
        await pilot.pause()
        assert str(pane.border_title).endswith("0 unacknowledged · bell muted")
        app.book.muted = False
        await pilot.pause()
        assert "bell muted" not in str(pane.border_title)


async def test_a_status_note_shows_in_the_status_line(world):
    app = open_app(world)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pause_display(pilot)
        app.status_notes = (*app.status_notes, "reading stopped: disk on fire")
        await pilot.pause()
        assert "✖ reading stopped: disk on fire" in str(app.status_line.status_text.render())


async def test_a_burst_of_view_changes_renders_the_panes_once(world, monkeypatch):
    app = open_app(world)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pause_display(pilot)
        board = app.sessions_board
        shown_with = []
        show = board.show
        monkeypatch.setattr(board, "show", lambda snapshot, view, palette, **options: (
            shown_with.append(view), show(snapshot, view, palette, **options)))
        for n in range(1000):
            app.view = replace(app.view, sort=SORTS[n % len(SORTS)])
        await pilot.pause()
        last = SORTS[999 % len(SORTS)]
        assert [view.sort for view in shown_with] == [last]
        assert f"sort: {last}" in str(board.border_title)


async def test_a_screen_shows_the_current_state_when_it_comes_into_view(world):
    app = open_app(world)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pause_display(pilot)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, DetailScreen))
        await pilot.pause()
        assert app.screen.timeline.rows                 # rendered on being pushed
        board = app.sessions_board
        await pilot.press("t")                          # a new palette while the board is covered
        await pilot.pause()
        assert board.palette is not app.palette
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, DetailScreen))
        await pilot.pause()
        assert board.palette is app.palette             # rendered again on being uncovered



async def test_a_render_pass_after_the_screens_are_gone_does_nothing(world):
    """A snapshot can land while the app shuts down; the render pass it asks for may run
    once no screen is left on the stack, and must then do nothing rather than crash."""
    app = open_app(world)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
    assert not app.screen_stack
    app._render_soon()
    app._render_panes()

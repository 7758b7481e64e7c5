"""The board across sources (issue 14): an OpenClaw state dir plus the Claude Code and Codex
fixture transcripts, opened by ``build_app`` as ``clawwatch --state-dir D --log L
--claude-dir C --codex-dir X`` opens them. Each row names its source; ``F`` cycles the
source filter (all → openclaw → claude-code → codex), which the board keeps to and names
in its title, and the alerts pane follows."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_ui_scenes import RecordingController, scene_config, settle, write_world

from monitor.snapshot import AlertEntry, BoardRow
from monitor.ui.factory import DashboardOptions, build_app
from monitor.ui.panes.alerts import AlertsPane
from monitor.ui.panes.board import SessionsBoard, row_cells
from monitor.ui.view import ViewState

FIXTURES = Path(__file__).parent / "fixtures"
CLAUDE_DIR = FIXTURES / "claude_code" / "projects"
CODEX_DIR = FIXTURES / "codex" / "sessions"
PLAN = (("hammer", "agent:main:hammer", 22), ("healthy", "agent:main:tidy", 3))
SIZE = (160, 48)
SHORT = {"openclaw": "OC", "claude-code": "CC", "codex": "CX"}


@pytest.fixture(scope="module")
def world():
    world = write_world("sources", PLAN)
    yield world
    world.sim.close()


def open_mixed(world):
    options = DashboardOptions(state_dir=str(world.state_dir), log=str(world.log_path),
                               claude_dir=[str(CLAUDE_DIR)], codex_dir=[str(CODEX_DIR)])
    return build_app(options, config=scene_config(), controller=RecordingController(),
                     clock=world.clock, poll_seconds=0.1)


def shown_rows(app) -> list[BoardRow]:
    board = app.query_one(SessionsBoard)
    return [app.latest.row(key) for key in board.keys]


def source_cells(app) -> dict[str, str]:
    board = app.query_one(SessionsBoard)
    return {app.latest.row(key).key: board.cell(key, "source")[0] for key in board.keys}


async def test_every_row_names_its_source_and_the_filter_keeps_one(world):
    app = open_mixed(world)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        board = app.query_one(SessionsBoard)
        rows = shown_rows(app)
        by_source = {source: {r.key for r in rows if r.source == source} for source in SHORT}
        assert by_source["openclaw"] == {"agent:main:hammer", "agent:main:tidy"}
        assert by_source["claude-code"] and all(k.startswith("claude-code:")
                                                for k in by_source["claude-code"])
        assert by_source["codex"] and all(k.startswith("codex:") for k in by_source["codex"])
        cells = source_cells(app)
        assert all(cells[r.key] == SHORT[r.source] for r in rows)
        assert "source: all" in str(board.border_title)
        total = len(rows)

        for source in ("openclaw", "claude-code", "codex"):
            await pilot.press("F")
            await settle(pilot)
            assert app.view.source_filter == source
            kept = shown_rows(app)
            assert {r.key for r in kept} == by_source[source]
            assert set(source_cells(app).values()) == {SHORT[source]}
            title = str(board.border_title)
            assert f"source: {source}" in title
            assert f"({len(kept)} of {total})" in title
            # the selection follows onto a row of the filtered board
            assert app.latest.row(app.view.selected).source == source

        await pilot.press("F")
        await settle(pilot)
        assert app.view.source_filter == "all"
        assert len(shown_rows(app)) == total


async def test_alerts_follow_the_source_filter(world):
    app = open_mixed(world)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        pane = app.query_one(AlertsPane)
        keys = {alert.session_key for alert, _ in (payload for _, payload in pane.rows)}
        assert "agent:main:hammer" in keys
        await pilot.press("F", "F")          # claude-code
        await settle(pilot)
        shown = [alert for _, (alert, _) in pane.rows]
        assert shown and all(a.session_key.startswith("claude-code:") for a in shown)
        assert "source: claude-code" in str(pane.border_title)
        await pilot.press("F", "F")          # codex, then all again
        await settle(pilot)
        assert "source:" not in str(pane.border_title)
        assert {alert.session_key for _, (alert, _) in pane.rows} == keys


def test_source_cell_of_an_unknown_or_hostile_source_is_short():
    row = BoardRow("s", "k", "k", "", "", "running", 0, 0, 0, 0.0, None, None, None, 0,
                   None, None, 0, source="\x1b[31mevil")
    text, kind, _ = row_cells(row)[1]
    assert kind == "source" and len(text) <= 3
    assert row_cells(BoardRow("s", "k", "k", "", "", "running", 0, 0, 0, 0.0, None, None,
                              None, 0, None, None, 0, source="codex"))[1][0] == "CX"


def test_alert_source_by_row_then_by_key_prefix():
    rows = (BoardRow("id-cc", "claude-code:abc", "x", "", "", "running", 0, 0, 0, 0.0, None,
                     None, None, 0, None, None, 0, source="claude-code"),)
    view = ViewState(source_filter="codex")
    sources = view.alert_sources(rows)

    def alert(key: str, session_id: str = "") -> AlertEntry:
        return AlertEntry(1, None, "finding", "warning", key, session_id, "d", 1, None, "m")

    assert not view.alert_visible(alert("claude-code:abc", "id-cc"), sources)
    assert view.alert_visible(alert("codex:zzz"), sources)
    assert not view.alert_visible(alert("agent:main:x"), sources)
    assert view.alert_visible(alert("unknown"), sources)
    assert ViewState().alert_sources(rows) is None

"""SVG snapshots of the dashboard (pytest-textual-snapshot, Textual pinned to 8.2.8).

Each app is built by ``build_app`` on one simulated scene with a fixed clock;
interaction happens in ``run_before`` and ends with ``settle`` so every pane
shows the final snapshot. Review changes with ``pytest --snapshot-update``
only after looking at ``snapshot_report.html``.
"""

from __future__ import annotations

import pytest
from test_ui_scenes import RecordingController, open_app, settle, wait_for, write_world

from monitor.act.api import ProcessInfo
from monitor.ui.panes.alerts import AlertsPane
from monitor.ui.screens.dialogs import ConfirmScreen
from monitor.ui.themes import REPO_THEMES

SIZE = (160, 48)


@pytest.fixture(scope="module")
def scene():
    world = write_world("snap")
    yield world
    world.sim.close()


def select(key: str):
    async def run_before(pilot) -> None:
        await settle(pilot)
        for _ in range(len(pilot.app.latest.rows)):
            if pilot.app.latest.row(pilot.app.view.selected).key == key:
                break
            await pilot.press("down")
        await settle(pilot)

    return run_before


def test_board_with_mixed_severities(snap_compare, scene):
    assert snap_compare(open_app(scene), terminal_size=SIZE, run_before=settle)


def test_pingpong_session_streaks_and_pairs(snap_compare, scene):
    assert snap_compare(open_app(scene), terminal_size=SIZE,
                        run_before=select("agent:main:pingpong"))


def test_burner_session_budget_line_and_eta(snap_compare, scene):
    assert snap_compare(open_app(scene), terminal_size=SIZE,
                        run_before=select("agent:main:log-burner"))


def test_alerts_filtered_to_critical(snap_compare, scene):
    async def run_before(pilot) -> None:
        await settle(pilot)
        while pilot.app.focused is not pilot.app.query_one(AlertsPane):
            await pilot.press("tab")
        await pilot.press("f", "f")
        await settle(pilot)

    assert snap_compare(open_app(scene), terminal_size=SIZE, run_before=run_before)


def test_gateway_log_search_highlights(snap_compare, scene):
    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("slash", *"tool end", "enter", "N")
        await settle(pilot)

    assert snap_compare(open_app(scene), terminal_size=SIZE, run_before=run_before)


def test_detail_screen_timeline(snap_compare, scene):
    async def run_before(pilot) -> None:
        await select("agent:main:deploy")(pilot)
        await pilot.press("enter")
        await settle(pilot)

    assert snap_compare(open_app(scene), terminal_size=SIZE, run_before=run_before)


def test_help_screen(snap_compare, scene):
    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("question_mark")

    assert snap_compare(open_app(scene), terminal_size=SIZE, run_before=run_before)


def test_kill_confirmation_lists_processes(snap_compare, scene):
    controller = RecordingController([
        ProcessInfo(4242, 1.0, "bash -c 'while true; do ls -la /tmp/openclaw-lab-nowhere; done'",
                    "agent:main:night-hammer", "cwd"),
        ProcessInfo(4250, 2.0, "sleep 600", "agent:main:night-hammer", "parent 4242")])

    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("K")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, ConfirmScreen))

    assert snap_compare(open_app(scene, controller=controller), terminal_size=SIZE,
                        run_before=run_before)


def test_light_theme(snap_compare, scene):
    assert snap_compare(open_app(scene, theme="light"), terminal_size=SIZE, run_before=settle)


def test_night_theme(snap_compare, scene):
    assert snap_compare(open_app(scene, theme="night"), terminal_size=SIZE, run_before=settle)


def test_missing_source_in_the_status_line(snap_compare, scene):
    app = open_app(scene, log=scene.root / "openclaw-gone.log")
    assert snap_compare(app, terminal_size=SIZE, run_before=settle)


def test_broken_theme_falls_back_visibly(snap_compare, scene):
    themes = scene.root / "themes"
    themes.mkdir(exist_ok=True)
    (themes / "dark.yaml").write_text((REPO_THEMES / "dark.yaml").read_text())
    (themes / "broken.yaml").write_text("name: broken\nprimary: [not, a, colour\n")
    app = open_app(scene, theme="broken", themes_directory=themes)
    assert snap_compare(app, terminal_size=SIZE, run_before=settle)

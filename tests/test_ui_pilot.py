"""The dashboard driven by its keys (Textual pilot), on simulated OpenClaw state dirs.

Every app is built by ``build_app`` as the CLI builds it. Read-only tests share
one written scene; tests that need live findings write their own and keep the
simulator stepping while the app runs.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from rich.cells import set_cell_size
from test_ui_scenes import (
    SECRET,
    RecordingController,
    open_app,
    settle,
    wait_for,
    write_world,
)
from textual.notifications import Notify

from monitor.act.api import ProcessInfo
from monitor.demo.sim.scenarios import make_scenario
from monitor.redaction import REDACT_SLACK
from monitor.redaction import text as redaction_text
from monitor.ui.messages import Rang
from monitor.ui.panes.alerts import AlertsPane
from monitor.ui.panes.board import SessionsBoard
from monitor.ui.panes.gatewaylog import LogView
from monitor.ui.panes.side import StreaksPane
from monitor.ui.panes.status import StatusLine
from monitor.ui.screens.detail import DetailScreen, DetailSummary, TimelineTable
from monitor.ui.screens.dialogs import BODY_CHARS, ConfirmScreen, HelpScreen
from monitor.ui.themes import REPO_THEMES

SIZE = (160, 48)
LIVE_PLAN = (("hammer", "agent:main:hammer", 5), ("pingpong", "agent:main:pingpong", 5),
             ("healthy", "agent:main:tidy", 2))


@pytest.fixture(scope="module")
def scene():
    world = write_world("pilot")
    yield world
    world.sim.close()


@pytest.fixture
def live(tmp_path):
    world = write_world("live", LIVE_PLAN, root=tmp_path)
    yield world
    world.sim.close()


def board_keys(app) -> list[str]:
    return [app.latest.row(key).key for key in app.query_one(SessionsBoard).keys]


def selected_key(app) -> str:
    return app.latest.row(app.view.selected).key


async def select(pilot, key: str) -> None:
    for _ in range(len(pilot.app.latest.rows)):
        if selected_key(pilot.app) == key:
            await settle(pilot)
            return
        await pilot.press("down")
    raise AssertionError(f"{key} not on the board")


async def test_cursor_selects_a_session_and_the_side_panes_follow(scene):
    app = open_app(scene)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        order = board_keys(app)
        assert order[0] == "agent:main:night-hammer"
        assert selected_key(app) == order[0]
        await pilot.press("down")
        assert selected_key(app) == order[1]
        await settle(pilot)
        assert app.latest.focus.label == order[1]
        assert order[1] in app.query_one(StreaksPane).border_title


async def test_the_selection_is_the_top_row_until_the_cursor_moves(live):
    app = open_app(live)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert selected_key(app) == board_keys(app)[0] != "agent:main:pingpong"
        live.step("agent:main:pingpong", 7)
        await wait_for(pilot, lambda: board_keys(app)[0] == "agent:main:pingpong")
        await settle(pilot)
        assert selected_key(app) == "agent:main:pingpong"
        assert app.latest.focus.label == "agent:main:pingpong"

        await pilot.press("end")
        chosen = board_keys(app)[-1]
        assert selected_key(app) == chosen != "agent:main:hammer"
        live.step("agent:main:hammer", 15)
        await wait_for(pilot, lambda: board_keys(app)[0] == "agent:main:hammer")
        await settle(pilot)
        assert selected_key(app) == chosen


async def test_enter_opens_the_timeline_with_secrets_redacted(scene):
    app = open_app(scene)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, "agent:main:deploy")
        await pilot.press("enter")
        assert isinstance(app.screen, DetailScreen)
        table = app.screen.query_one(TimelineTable)
        await wait_for(pilot, lambda: len(table.rows) == 3)
        args = [table.cell(str(n), "args")[0] for n in (1, 2, 3)]
        assert all("«redacted»" in a for a in args)
        assert not any(SECRET in a or "abc123secret" in a for a in args)
        assert table.cell("3", "exit")[0] == "22"
        assert table.cell("3", "rep")[0] == "↻"
        await pilot.press("f", "slash")
        assert app.view.board_filter == "all" and app.view.search == ""
        await pilot.press("escape")
        assert not isinstance(app.screen, DetailScreen)


async def shown_keys(world) -> tuple[list[str], str, str]:
    """Where the dashboard shows the session key of ``world``'s one looping session: the
    alerts' session cells, the board's, and the detail view's summary."""
    app = open_app(world)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        alerts = app.query_one(AlertsPane)
        await wait_for(pilot, lambda: alerts.rows)
        in_alerts = [alerts.cell(key, "session")[0] for key, _ in alerts.rows]
        on_board = app.query_one(SessionsBoard).cell(app.view.selected, "session")[0]
        await pilot.press("enter")
        summary = app.screen.query_one(DetailSummary)
        await wait_for(pilot, lambda: str(summary.content))
        return in_alerts, on_board, str(summary.content)


async def test_a_session_key_holding_a_token_is_shown_redacted(tmp_path):
    token = "ghp_" + "Bq7" * 12
    world = write_world("token-key", (("hammer", f"agent:main:hook:{token}", 25),),
                        root=tmp_path)
    try:
        in_alerts, on_board, header = await shown_keys(world)
        shown = [*in_alerts, on_board, header]
        assert all("«redacted»" in text and token[-8:] not in text for text in shown), shown
    finally:
        world.sim.close()


async def test_search_highlights_matches_and_n_and_N_move(scene):
    app = open_app(scene)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"tool end")
        view = app.query_one(LogView)
        await wait_for(pilot, lambda: len(view.matches) > 3)
        assert app.view.search == "tool end"
        count = len(view.matches)
        assert view.current is None
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.focused is view)
        assert view.current == count - 1
        line = view.line_text(view.matches[-1])
        assert any(span.style == view.palette.current_match for span in line.spans)
        await pilot.press("n")
        assert view.current == 0
        await pilot.press("N", "N")
        assert view.current == count - 2
        await pilot.press("escape")
        assert app.view.search == "" and view.matches == []


async def test_f_filters_the_focused_pane(scene):
    app = open_app(scene)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        board = app.query_one(SessionsBoard)
        await pilot.press("f")
        assert app.view.board_filter == "active"
        assert "agent:main:tidy" not in board_keys(app) and len(board.rows) == 5
        await pilot.press("f")
        assert app.view.board_filter == "problems"
        assert set(board_keys(app)) == {r.key for r in app.latest.rows if r.worst_level}
        alerts = app.query_one(AlertsPane)
        while app.focused is not alerts:
            await pilot.press("tab")
        await pilot.press("f", "f")
        assert app.view.alert_filter == "critical"
        criticals = [a for a in app.latest.alerts if a.level == "critical"]
        assert criticals and len(alerts.rows) == len(criticals)
        while not isinstance(app.focused, LogView):
            await pilot.press("tab")
        shown = len(app.query_one(LogView).lines)
        await pilot.press("f")
        assert app.view.log_filter == "info"
        lines = app.query_one(LogView).lines
        assert 0 < len(lines) < shown and all(line.level != "DEBUG" for line in lines)


async def test_t_switches_theme_and_recolours_the_board(scene):
    app = open_app(scene)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.theme == "dark"
        seen = []
        for _ in range(3):
            await pilot.press("t")
            await pilot.pause()
            _, style = app.query_one(SessionsBoard).cell(app.view.selected, "worst")
            assert style.color == app.palette.level("critical").color
            seen.append((app.theme, style.color))
        assert [name for name, _ in seen] == ["light", "night", "dark"]
        assert len({colour for _, colour in seen}) == 3


async def test_stop_asks_first_and_cancel_does_nothing(scene):
    controller = RecordingController()
    app = open_app(scene, controller=controller)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        key = selected_key(app)
        await pilot.press("s")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        assert not isinstance(app.screen, ConfirmScreen)
        assert controller.calls == []
        await pilot.press("s", "y")
        await wait_for(pilot, lambda: app.actions)
        assert controller.calls == [("stop", key, "abort")]
        await wait_for(pilot, lambda: any(a.kind == "action" and a.session_key == key
                                          for a in app.latest.alerts))


class CommandEchoingController(RecordingController):
    """A kill whose detail quotes the killed command, as a failed kill's does."""

    def kill(self, session_key, *, trigger=None):
        result = super().kill(session_key, trigger=trigger)
        return replace(result, detail=f"killed {self.candidates[0].command}")


async def test_kill_lists_pids_and_commands_and_needs_a_yes(scene):
    token = "tok9c8b7a6f5e4d"
    candidate = ProcessInfo(4242, 1.0, f"sleep 999 --loop-helper --token {token}",
                            "agent:main:night-hammer", "cwd under the session workspace")
    controller = CommandEchoingController([candidate])
    app = open_app(scene, controller=controller)
    toasts: list = []
    async with app.run_test(size=SIZE, message_hook=lambda message: isinstance(
            message, Notify) and toasts.append(message.notification)) as pilot:
        await settle(pilot)
        key = selected_key(app)
        await pilot.press("K")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        body = str(app.screen.body)
        assert "4242" in body and "sleep 999 --loop-helper" in body and token not in body
        await pilot.press("escape")
        assert controller.calls == [("candidates", key)]
        await pilot.press("K")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await wait_for(pilot, lambda: app.actions)
        assert controller.calls[-1] == ("kill", key)
        assert app.actions[-1].pids == (4242,)
        await wait_for(pilot, lambda: any("sleep 999" in t.message for t in toasts))
        assert not any(token in t.message for t in toasts)


async def test_kill_dialog_leaves_conflicting_evidence_out_of_the_kill(scene):
    own = ProcessInfo(4242, 1.0, "sleep 999 --loop-helper", "agent:main:night-hammer",
                      "command matches the session's exec call")
    disputed = ProcessInfo(5151, 1.0, "sleep 998", None, "ambiguous: …", ambiguous=True,
                           reasons=("command text names agent:main:a",
                                    "transcript pid names agent:main:b",
                                    "task_runs names agent:main:" + "h" * 80 + ":ghp_"
                                    + "G" * 36))
    app = open_app(scene, controller=RecordingController([own, disputed]))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("K")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        body = str(app.screen.body)
        kill_part, _, left_alone = body.partition("Left alone")
        assert "4242" in kill_part and "5151" not in kill_part
        assert "5151" in left_alone and "transcript pid names agent:main:b" in left_alone
        assert "Kill 1 process" in str(app.screen.title_text)
        assert "ghp_" not in body, "a secret the cut halves is masked whole"
    only_disputed = open_app(scene, controller=RecordingController([disputed]))
    async with only_disputed.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("K")
        await wait_for(pilot, lambda: only_disputed.controller.calls)
        await pilot.pause(0.05)
        assert not isinstance(only_disputed.screen, ConfirmScreen)


async def test_kill_without_processes_does_not_ask(scene):
    controller = RecordingController([])
    app = open_app(scene, controller=controller)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("K")
        await wait_for(pilot, lambda: controller.calls)
        await pilot.pause(0.05)
        assert not isinstance(app.screen, ConfirmScreen)
        assert [c[0] for c in controller.calls] == ["candidates"]


async def test_bell_rings_on_a_live_critical_and_not_on_a_warning(live, monkeypatch):
    app = open_app(live)
    rang: list[str] = []
    messages: list[Rang] = []
    monkeypatch.setattr(app, "bell", lambda: rang.append("bell"))
    async with app.run_test(size=SIZE, message_hook=lambda m: isinstance(m, Rang)
                            and messages.append(m)) as pilot:
        await settle(pilot)
        live.step("agent:main:pingpong", 7)
        await wait_for(pilot, lambda: any(a.level == "warning" and not a.history
                                          for a in app.latest.alerts))
        await pilot.pause(0.1)
        assert rang == [] and messages == []
        live.step("agent:main:hammer", 17)
        await wait_for(pilot, lambda: any(a.level == "critical" for a in app.latest.alerts))
        await wait_for(pilot, lambda: rang)
        assert rang == ["bell"]
        assert "agent:main:hammer" in messages[0].reason


async def test_acknowledge_mute_and_repeat(live, monkeypatch):
    config = _with_alerts(bell_repeat_seconds=5.0)
    app = open_app(live, config=config)
    rang: list[str] = []
    monkeypatch.setattr(app, "bell", lambda: rang.append("bell"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        live.step("agent:main:pingpong", 7)
        live.step("agent:main:hammer", 17)
        await wait_for(pilot, lambda: app.book.unacked_critical(app.latest.alerts))
        await wait_for(pilot, lambda: rang == ["bell"])
        await settle(pilot)
        live.clock.now += 6
        app.repeat_bell()
        assert rang == ["bell", "bell"]
        await select(pilot, "agent:main:hammer")
        await pilot.press("a")
        assert app.book.unacked_critical(app.latest.alerts) == []
        pending = [a for a in app.latest.alerts if not app.book.is_acked(a)]
        assert pending and {a.session_key for a in pending} == {"agent:main:pingpong"}
        live.clock.now += 6
        app.repeat_bell()
        assert rang == ["bell", "bell"]
        shown = app.latest.alerts
        await pilot.press("A")
        assert shown and all(app.book.is_acked(a) for a in shown)
        await pilot.press("m")
        assert app.book.muted
        before = app.latest.alerts[-1].seq
        live.step("agent:main:hammer", 10)
        await wait_for(pilot, lambda: any(a.level == "critical" and a.seq > before
                                          for a in app.latest.alerts))
        await pilot.pause(0.1)
        assert rang == ["bell", "bell"]


def burst(world, name: str, sessions: int, steps: int = 22) -> list[str]:
    """New looping sessions, each stepped into its criticals (3 warnings, 2 criticals)."""
    keys = [f"agent:main:{name}-{n}" for n in range(sessions)]
    for key in keys:
        world.sim.add_session(make_scenario("hammer"), key=key)
        world.step(key, steps)
    return keys


async def criticals_of(pilot, keys: list[str]) -> None:
    """Until every session of ``keys`` has both its criticals on display."""
    app = pilot.app
    await wait_for(pilot, lambda: all(
        sum(1 for a in app.latest.alerts if a.session_key == key and a.level == "critical") == 2
        for key in keys))
    await pilot.pause(0.3)
    await settle(pilot)


async def test_alerts_pane_follows_the_newest_until_the_user_moves_away(live):
    app = open_app(live)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        alerts = app.query_one(AlertsPane)
        live.step("agent:main:pingpong", 7)
        await wait_for(pilot, lambda: len(alerts.rows) >= 2)
        await settle(pilot)

        await criticals_of(pilot, burst(live, "first", 2))
        newest = str(app.latest.alerts[-1].seq)
        assert len(alerts.rows) > alerts.scrollable_content_region.height
        assert (alerts.cursor, alerts.cursor_key, alerts.scroll_y) == (0, newest, 0)
        assert alerts.following and "new" not in str(alerts.border_title)

        while app.focused is not alerts:
            await pilot.press("tab")
        await pilot.press("down", "down")
        held, line = alerts.cursor_key, alerts.cursor - round(alerts.scroll_y)
        before = app.latest.alerts[-1].seq
        await criticals_of(pilot, burst(live, "second", 2))
        arrived = sum(1 for a in app.latest.alerts if a.seq > before)
        assert arrived >= 10
        assert alerts.cursor_key == held and not alerts.following
        assert alerts.cursor - round(alerts.scroll_y) == line
        assert str(alerts.border_title).startswith(f"Alerts · ▲ {arrived} new · all")

        await pilot.press("home")
        newest = str(app.latest.alerts[-1].seq)
        assert (alerts.cursor, alerts.cursor_key, alerts.scroll_y) == (0, newest, 0)
        assert alerts.following and "new" not in str(alerts.border_title)
        await pilot.press("down", "up")
        assert alerts.following
        await criticals_of(pilot, burst(live, "third", 1))
        newest = str(app.latest.alerts[-1].seq)
        assert (alerts.cursor, alerts.cursor_key, alerts.scroll_y) == (0, newest, 0)


def error_toasts(toasts: list):
    def hook(message) -> None:
        if isinstance(message, Notify) and message.notification.severity == "error":
            toasts.append(message.notification)

    return hook


async def test_a_burst_of_criticals_is_one_toast_naming_them(live):
    app = open_app(live)
    toasts: list = []
    async with app.run_test(size=SIZE, message_hook=error_toasts(toasts)) as pilot:
        await settle(pilot)
        alerts = app.query_one(AlertsPane)
        live.step("agent:main:pingpong", 7)
        await wait_for(pilot, lambda: len(alerts.rows) >= 2)
        await settle(pilot)
        while app.focused is not alerts:
            await pilot.press("tab")
        await pilot.press("down")
        keys: list[str] = []
        for n in range(3):                              # one session per snapshot
            key = burst(live, f"storm{n}", 1)[0]
            keys.append(key)
            await wait_for(pilot, lambda key=key: any(a.session_key == key
                                                      and a.level == "critical"
                                                      for a in app.latest.alerts))
        await criticals_of(pilot, keys)
        await wait_for(pilot, lambda: toasts)
        await pilot.pause(1.5)
        assert len(toasts) == 1
        assert toasts[0].message.startswith("6 criticals: ")
        assert all(key in toasts[0].message for key in keys)


async def test_no_toast_while_the_alerts_pane_is_in_view_and_following(live):
    app = open_app(live)
    toasts: list = []
    rang: list[str] = []
    app.bell = lambda: rang.append("bell")
    async with app.run_test(size=SIZE, message_hook=error_toasts(toasts)) as pilot:
        await settle(pilot)
        await criticals_of(pilot, burst(live, "quiet", 2))
        await pilot.pause(1.5)
        assert toasts == [] and rang
        await pilot.press("enter")
        assert isinstance(app.screen, DetailScreen)
        await criticals_of(pilot, burst(live, "hidden", 1))
        await wait_for(pilot, lambda: toasts)
        assert toasts[0].message.startswith("2 criticals: agent:main:hidden-0")


async def test_criticals_the_source_filter_hides_from_the_alerts_pane_get_a_toast(live):
    app = open_app(live)
    toasts: list = []
    app.bell = lambda: None
    async with app.run_test(size=SIZE, message_hook=error_toasts(toasts)) as pilot:
        await settle(pilot)
        await pilot.press("F", "F")
        assert app.view.source_filter == "claude-code"
        await criticals_of(pilot, burst(live, "filtered", 1))
        alerts = app.query_one(AlertsPane)
        assert alerts.following and alerts.is_on_screen
        assert not any(alert.session_key == "agent:main:filtered-0"
                       for _, (alert, _) in alerts.rows)
        await wait_for(pilot, lambda: toasts)
        assert toasts[0].message.startswith("2 criticals: agent:main:filtered-0")


async def test_pause_freezes_the_display_while_reading_goes_on(live):
    app = open_app(live)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        board = app.query_one(SessionsBoard)
        hammer = next(r.session_id for r in app.latest.rows if r.key == "agent:main:hammer")
        shown = board.cell(hammer, "calls")[0].strip()
        await pilot.press("p")
        assert app.view.paused
        live.step("agent:main:hammer", 3)
        await wait_for(pilot, lambda: app.latest.row(hammer).tool_calls == int(shown) + 3)
        assert board.cell(hammer, "calls")[0].strip() == shown
        await pilot.press("p")
        assert board.cell(hammer, "calls")[0].strip() == str(int(shown) + 3)


async def test_broken_theme_file_falls_back_with_a_visible_message(scene, tmp_path):
    themes = tmp_path / "themes"
    themes.mkdir()
    (themes / "dark.yaml").write_text((REPO_THEMES / "dark.yaml").read_text())
    (themes / "broken.yaml").write_text("name: broken\nprimary: not-a-colour\n")
    app = open_app(scene, theme="broken", themes_directory=themes)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.theme == "dark"
        notes = " ".join(app.query_one(StatusLine).notes)
        assert "broken.yaml: primary: 'not-a-colour' is not a colour" in notes
        assert "theme 'broken' not found" in notes
        rendered = str(app.query_one("#status-text").render())
        assert "not-a-colour" in rendered


async def test_a_missing_log_shows_in_the_status_line(scene):
    app = open_app(scene, log=Path(scene.root / "gone.log"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        missing = [s for s in app.latest.sources if not s.ok]
        assert len(missing) == 1 and "gone.log" in missing[0].text
        assert "--log FILE" in str(app.query_one("#status-text").render())
        assert len(app.latest.rows) == 6


async def test_every_action_is_in_the_command_palette(scene):
    app = open_app(scene)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        titles = {c.title for c in app.get_system_commands(app.screen)}
        for title in ("Stop session", "Kill processes", "Acknowledge session",
                      "Acknowledge all", "Mute / unmute bell", "Search gateway log", "Filter",
                      "Sort board", "Pause / resume display", "Session detail", "Help",
                      "Next theme", "Theme: night", "Quit"):
            assert title in titles
        await pilot.press("ctrl+p", *"Mute / unmute")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.book.muted)


async def test_help_opens_and_q_quits_stopping_the_reader(scene):
    app = open_app(scene)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("q")
    assert app.ingest.finished.is_set()


def _with_alerts(**changes):
    import dataclasses

    from test_ui_scenes import scene_config

    config = scene_config()
    return dataclasses.replace(config, alerts=dataclasses.replace(config.alerts, **changes))


async def test_a_session_key_of_200_kb_is_redacted_only_as_far_as_it_is_shown(
        tmp_path, monkeypatch):
    """A crafted key (flag-like text, the slowest to redact: seconds per megabyte, on every
    render) ends in a token: the alerts show a digest of its tail (one word, cut where no rule
    can tell what it holds), the detail view its redacted start, and no text the dashboard
    redacts is longer than a dialog's body."""
    token = "ghp_" + "Bq7" * 12
    key = "agent:main:" + "--x-token-" * 20_000 + ":" + token
    longest = [0]
    folded = redaction_text._folded

    def measured(text: str) -> str:
        longest[0] = max(longest[0], len(text))
        return folded(text)

    monkeypatch.setattr(redaction_text, "_folded", measured)
    world = write_world("long-key", (("hammer", key, 25),), root=tmp_path)
    try:
        in_alerts, _, header = await shown_keys(world)
    finally:
        world.sim.close()
    assert in_alerts and all(text.startswith("…#") for text in in_alerts), in_alerts
    assert header.startswith("agent:main:--x-token-") and token[-8:] not in header
    assert longest[0] <= BODY_CHARS + REDACT_SLACK, longest[0]


async def test_alerts_of_wide_keys_that_differ_at_their_end_show_different_sessions(tmp_path):
    keys = [f"agent:main:{'会话' * 10}{end}" for end in ("甲", "乙")]
    world = write_world("wide-keys", tuple(("hammer", key, 1) for key in keys), root=tmp_path)
    app = open_app(world)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for key in keys:
            world.step(key, 21)
        await criticals_of(pilot, keys)
        alerts = app.query_one(AlertsPane)
        shown = {}
        for _, payload in alerts.rows:
            alert = payload[0]
            if alert.session_key in keys:
                cell = alerts.cells_of(payload)[3][0]
                shown.setdefault(alert.session_key, set()).add(set_cell_size(cell, 20))
    assert set(shown) == set(keys)
    assert shown[keys[0]].isdisjoint(shown[keys[1]]), shown
    assert all(cell.rstrip().endswith(key[-1]) for key in keys for cell in shown[key])


async def test_a_wide_label_cut_to_the_boards_column_is_marked_cut(tmp_path):
    key = f"agent:main:{'会话' * 12}"
    world = write_world("wide-label", (("healthy", key, 2),), root=tmp_path)
    app = open_app(world)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        board = app.query_one(SessionsBoard)
        session_id = next(row.session_id for row in app.latest.rows if row.key == key)
        cell = board.cell(session_id, "session")[0]
    assert set_cell_size(cell, 28).rstrip().endswith("…"), cell

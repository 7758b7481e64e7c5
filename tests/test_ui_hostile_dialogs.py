"""Hostile session keys in the stop and kill dialogs and the action toasts, driven through
``build_app`` as the CLI opens the dashboard: a secret in a key stays masked, and the
outcome of an action is never pushed out of its toast by a long key."""

from __future__ import annotations

from pathlib import Path

from test_ui_scenes import RecordingController, open_app, settle, wait_for, write_world
from textual.notifications import Notify

from monitor.act.api import ActionResult, ProcessInfo
from monitor.ui.screens.dialogs import ConfirmScreen

SIZE = (160, 48)
TOKEN = "qZ7xK2mP9vL4wR8tN6yB"
#: tabs, not spaces, between each secret's marker and the secret
SECRET_KEY = f"agent:main:hook --token\t{TOKEN} Bearer\t{TOKEN}"


async def open_dialog(pilot, key: str) -> ConfirmScreen:
    await pilot.press(key)
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, ConfirmScreen))
    return pilot.app.screen


async def test_a_secret_after_a_tab_in_a_key_is_masked_in_the_stop_and_kill_dialogs(
        tmp_path: Path):
    world = write_world("secret-dialog", (("hammer", SECRET_KEY, 12),), root=tmp_path)
    candidates = [ProcessInfo(4242, 1.0, "sleep 1", SECRET_KEY, "cwd")]
    app = open_app(world, controller=RecordingController(candidates))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        stop = await open_dialog(pilot, "s")
        shown = [str(stop.title_text), str(stop.body)]
        await pilot.press("n")
        kill = await open_dialog(pilot, "K")
        shown.append(str(kill.body))
        await pilot.press("n")
    for text in shown:
        assert TOKEN not in text, text
        assert text.count("«redacted»") == 2


LONG_KEY = "agent:main:" + "x" * 1200


class FailingStops(RecordingController):
    """A controller whose stops fail, as when the gateway cannot be reached."""

    def stop(self, session_key, *, method="abort", trigger=None):
        return ActionResult(session_key, method, False, "FAILED: gateway unreachable", trigger)


def toast_recorder(toasts: list):
    return lambda message: isinstance(message, Notify) and toasts.append(message.notification)


async def test_a_failed_stop_of_a_long_key_says_it_failed_in_its_toast(tmp_path: Path):
    world = write_world("long-key-stop", (("hammer", LONG_KEY, 12),), root=tmp_path)
    app = open_app(world, controller=FailingStops())
    toasts: list = []
    async with app.run_test(size=SIZE, message_hook=toast_recorder(toasts)) as pilot:
        await settle(pilot)
        await open_dialog(pilot, "s")
        await pilot.press("y")
        await wait_for(pilot, lambda: app.actions)
        await wait_for(pilot, lambda: any("unreachable" in t.message for t in toasts))
    message = next(t.message for t in toasts if "unreachable" in t.message)
    assert message.startswith("abort: FAILED: gateway unreachable\nsession agent:main:xxx")
    assert len(message) < 200


async def test_nothing_to_kill_of_a_long_key_says_so_in_its_toast(tmp_path: Path):
    world = write_world("long-key-kill", (("hammer", LONG_KEY, 12),), root=tmp_path)
    app = open_app(world, controller=RecordingController([]))
    toasts: list = []
    async with app.run_test(size=SIZE, message_hook=toast_recorder(toasts)) as pilot:
        await settle(pilot)
        await pilot.press("K")
        await wait_for(pilot, lambda: any("to kill" in t.message for t in toasts))
    message = next(t.message for t in toasts if "to kill" in t.message)
    assert message.startswith("no processes to kill\nsession agent:main:xxx")


REAL_KEY = "agent:main:main"
#: keys that read like REAL_KEY: a braille blank, an ideographic space, a Cyrillic а
LOOKALIKE_KEYS = ("agent:main:main\u2800", "agent:main:main\u3000", "agent:main:m\u0430in")


async def test_stop_and_kill_dialogs_of_lookalike_keys_name_different_sessions(
        tmp_path: Path):
    """A hostile index can put a decoy whose key reads like a real session's beside it:
    each dialog names the session id and agent beside the key, and a blank-looking
    character in a key is shown as ``<U+XXXX>``."""
    plan = tuple(("hammer", key, 12) for key in (REAL_KEY, *LOOKALIKE_KEYS))
    world = write_world("lookalikes", plan, root=tmp_path)
    candidates = [ProcessInfo(4242, 1.0, "sleep 1", REAL_KEY, "cwd")]
    app = open_app(world, controller=RecordingController(candidates))
    stops: dict[str, str] = {}
    kills: dict[str, str] = {}
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for _ in plan:
            row = app.displayed.row(app.view.selected)
            stop = await open_dialog(pilot, "s")
            stops[row.session_id] = f"{stop.title_text}\n{stop.body}"
            await pilot.press("n")
            kill = await open_dialog(pilot, "K")
            kills[row.session_id] = str(kill.body)
            await pilot.press("n")
            await pilot.press("down")
            await settle(pilot)
    assert len(stops) == len(plan)
    for session_id in stops:
        assert f"session {session_id} · agent main" in stops[session_id]
        assert f"session {session_id} · agent main" in kills[session_id]
    titles = [text.splitlines()[0] for text in stops.values()]
    assert "Stop agent:main:main<U+2800>?" in titles
    assert "Stop agent:main:main<U+3000>?" in titles


#: An OpenClaw session whose key (data, from sessions.json) names a Claude Code session:
#: actions are routed by a key's prefix, so stopping it would stop that other session.
BORROWED_KEY = "claude-code:0f3c2a9e-victim"


async def test_an_openclaw_session_with_another_sources_key_is_not_acted_on(tmp_path: Path):
    world = write_world("borrowed-key", (("hammer", BORROWED_KEY, 12),), root=tmp_path)
    controller = RecordingController([ProcessInfo(4242, 1.0, "claude", BORROWED_KEY, "cwd")])
    app = open_app(world, controller=controller)
    toasts: list = []
    async with app.run_test(size=SIZE, message_hook=toast_recorder(toasts)) as pilot:
        await settle(pilot)
        row = app.displayed.row(app.view.selected)
        assert (row.key, row.source) == (BORROWED_KEY, "openclaw")
        await pilot.press("s")
        await wait_for(pilot, lambda: toasts or isinstance(app.screen, ConfirmScreen))
        assert not isinstance(app.screen, ConfirmScreen)
        await pilot.press("K")
        await wait_for(pilot, lambda: len(toasts) == 2 or controller.calls)
        await pilot.pause()
    assert controller.calls == []
    assert all("another source" in t.message for t in toasts)

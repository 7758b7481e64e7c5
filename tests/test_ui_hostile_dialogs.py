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
        assert TOKEN not in text
        assert "--token «redacted» Bearer «redacted»" in text


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

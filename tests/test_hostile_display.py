"""The dashboard on hostile data (issue 10, items 1 and 2): every key and screen, both eras.

The hostile corpus (tests/hostile.py) is in every field of a state dir and gateway log
(tests/hostile_world.py). Two proofs:

* Pilot: every key and screen is driven (board, side panes for each session, detail of
  each session, stop and kill dialogs, search, filters, sort, theme, help, command palette,
  a live critical toast); the app stays alive, the stop goes to the session's exact key,
  and the bytes each screen would write (the compositor's full update, rendered as the
  driver writes it) hold no control sequence from data.
* PTY: ``python -m monitor --state-dir DIR --log FILE`` runs in a real pseudo-terminal; keys
  are typed, and every byte it writes is checked.
"""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
import time

import pytest
from hostile import HOSTILE_STRINGS, PAYLOAD, raw_controls, terminal_injections
from hostile_world import CRITICAL_NAME, HostileWorld, write_hostile_world
from test_ui_scenes import FixedClock, RecordingController, wait_for

from monitor.act.api import ProcessInfo
from monitor.config import Config
from monitor.display import printable
from monitor.ui.factory import DashboardOptions, build_app
from monitor.ui.panes.alerts import AlertsPane
from monitor.ui.screens.detail import DetailScreen, TimelineTable
from monitor.ui.screens.dialogs import ConfirmScreen, HelpScreen

ERAS = ("sqlite", "legacy")
SIZE = (160, 48)
SHOWN = printable(HOSTILE_STRINGS["osc0_title"])          # ␛]0;HOSTILE-title␇
CSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")             # the app's own cursor and colour
DIALOG_KEYS = ("markup_close", "markup_click", "markup_link", "textual_variable",
               "osc0_title", "bidi_override")
DETAIL_KEYS = (*DIALOG_KEYS, "markup_style", "markup_escape", "csi_clear", "c1_csi",
               "long_line", "lone_surrogate", "nul", "zero_width")


@pytest.fixture(params=ERAS)
def world(request, tmp_path):
    built = write_hostile_world(tmp_path / request.param, request.param)
    yield built
    built.close()


def frame(app) -> str:
    """What the driver would write for the current screen: a full compositor update."""
    return app.screen._compositor.render_full_update().render_segments(app.console)


def assert_inert(output: str) -> None:
    """No sequence from data, and past the app's own CSI no control character at all."""
    assert terminal_injections(output) == []
    assert raw_controls(CSI.sub("", output), allow="\n\r") == []


async def settle(pilot) -> None:
    await wait_for(pilot, lambda: pilot.app.settled, timeout=30)
    await pilot.pause()


async def select_key(pilot, key: str) -> None:
    app = pilot.app
    await pilot.press("home")
    for _ in range(len(app.latest.rows) + 1):
        if app.latest.row(app.view.selected) and app.latest.row(app.view.selected).key == key:
            await settle(pilot)
            return
        await pilot.press("down")
    raise AssertionError(f"{key!r} not on the board")


def open_hostile_app(world: HostileWorld, controller) -> object:
    options = DashboardOptions(state_dir=str(world.state_dir), log=str(world.log_path))
    return build_app(options, config=Config(), controller=controller,
                     clock=FixedClock(world._ts + 5), poll_seconds=0.1)


async def test_every_key_and_screen_survives_and_writes_nothing_from_data(world):
    command = "sleep 99 # " + HOSTILE_STRINGS["osc52_clipboard"] + HOSTILE_STRINGS["markup_close"]
    controller = RecordingController([ProcessInfo(4242, 0.0, command, "k", "evidence")])
    app = open_hostile_app(world, controller)
    frames: list[str] = []
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert len(app.latest.rows) == len(HOSTILE_STRINGS)
        frames.append(frame(app))
        for _ in app.latest.rows:                       # every session's side panes
            await pilot.press("down")
            await wait_for(pilot, lambda: app.settled)
            frames.append(frame(app))
        for name in DETAIL_KEYS:                        # the detail view
            await select_key(pilot, world.keys[name])
            await pilot.press("enter")
            assert isinstance(app.screen, DetailScreen)
            table = app.screen.query_one(TimelineTable)
            await wait_for(pilot, lambda table=table: len(table.rows) > 0)
            await pilot.press("up")
            await pilot.pause()
            frames.append(frame(app))
            await pilot.press("escape")
        for name in DIALOG_KEYS:                        # stop and kill dialogs
            await select_key(pilot, world.keys[name])
            await pilot.press("s")
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
            frames.append(frame(app))
            await pilot.press("n")
            await pilot.press("K")
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
            await pilot.pause()
            frames.append(frame(app))
            await pilot.press("n")
        await select_key(pilot, world.keys["markup_click"])
        await pilot.press("s")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")                          # the stop acts on the exact key
        await wait_for(pilot, lambda: any(c[0] == "stop" for c in controller.calls))
        assert ("stop", world.keys["markup_click"], "abort") in controller.calls
        await pilot.pause(0.3)
        frames.append(frame(app))
        await pilot.press("slash", *"HOSTILE", "enter", "n", "N")
        frames.append(frame(app))
        await pilot.press("slash", *"[/x]", "enter")
        frames.append(frame(app))
        await pilot.press("escape")
        for key in ("f", "f", "f", "tab", "f", "tab", "f", "o", "o", "o", "t", "a", "A", "m",
                    "p", "p"):
            await pilot.press(key)
            await pilot.pause()
            frames.append(frame(app))
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        frames.append(frame(app))
        await pilot.press("escape")
        await pilot.press("ctrl+p")
        await pilot.pause(0.3)
        frames.append(frame(app))
        await pilot.press("escape")
        app.book.muted = False
        while not isinstance(app.focused, AlertsPane):  # off the alerts' top: a toast
            await pilot.press("tab")
        await pilot.press("end")
        assert not app.query_one(AlertsPane).following
        world.append_log_lines(critical=True)           # a live critical: a toast
        await wait_for(pilot, lambda: any(
            a.tool == printable(HOSTILE_STRINGS[CRITICAL_NAME]) and not a.history
            and a.level == "critical" for a in app.latest.alerts), timeout=20)
        await wait_for(pilot, lambda: any("critical finding" in n.title
                                          for n in app._notifications))
        await pilot.pause(0.5)
        frames.append(frame(app))
        assert app.is_running and app.return_code is None
    assert app.return_code in (None, 0)
    for output in frames:
        assert_inert(output)
    assert any(SHOWN in CSI.sub("", output) for output in frames)


# ---------------------------------------------------------------------- a real terminal


class Terminal:
    """``python -m monitor ARGS`` in a pseudo-terminal of SIZE; every byte it writes is kept."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        import fcntl
        import struct
        import termios

        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", SIZE[1], SIZE[0], 0, 0))
        self.proc = subprocess.Popen([sys.executable, "-m", "monitor", *args], stdin=slave,
                                     stdout=slave, stderr=slave, env=env, close_fds=True,
                                     start_new_session=True)
        os.close(slave)
        self.output = bytearray()

    def read(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.master], [], [], 0.05)
            if ready:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:
                    return
                if not chunk:
                    return
                self.output += chunk

    def text(self) -> str:
        return CSI.sub("", self.output.decode("utf-8", "replace"))

    def wait_for(self, needle: str, timeout: float = 30) -> None:
        start = len(self.output)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.read(0.1)
            if needle in CSI.sub("", self.output[start:].decode("utf-8", "replace")) or \
                    needle in self.text()[-200_000:]:
                return
            if self.proc.poll() is not None:
                raise AssertionError(f"the app exited ({self.proc.returncode}) before "
                                     f"{needle!r}: {self.text()[-2000:]}")
        raise AssertionError(f"{needle!r} not shown in {timeout}s: {self.text()[-2000:]}")

    def type(self, keys: str, settle: float = 0.3) -> None:
        os.write(self.master, keys.encode())
        self.read(settle)

    def close(self) -> int | None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        os.close(self.master)
        return self.proc.returncode


def test_in_a_real_terminal_no_byte_from_data_acts(world, tmp_path):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENCLAW_", "CLAWWATCH_")) or k == "CLAWWATCH_LOG_DIRS"}
    env.update(HOME=str(tmp_path), TMPDIR=str(tmp_path), XDG_STATE_HOME=str(tmp_path / "x"),
               TERM="xterm-256color", COLORTERM="truecolor", TZ="UTC",
               CLAWWATCH_ACTIONS__MODE="off")
    term = Terminal(["--state-dir", str(world.state_dir), "--log", str(world.log_path)], env)
    try:
        term.wait_for(f"Sessions ({len(HOSTILE_STRINGS)})", timeout=60)
        term.wait_for("␛]0;HOSTILE", timeout=30)        # data shown, made visible
        term.type("\r")                                  # detail
        term.wait_for("Tool-call timeline")
        term.type("\x1b", 0.6)
        term.type("s")                                   # stop dialog
        term.wait_for("Abort the active run")
        term.type("n", 0.5)
        term.type("K", 1.5)                              # kill: lists processes (none)
        term.type("ffootm", 0.5)                         # filter, sort, theme, mute
        term.type("?")                                   # help
        term.wait_for("clawwatch — keys")
        term.type("\x1b", 0.6)
        term.type("\x10", 1.0)                           # command palette
        term.type("\x1b", 0.6)
        for _ in range(len(HOSTILE_STRINGS)):            # every session's side panes
            term.type("\x1b[B", 0.05)
        term.read(1.0)
        world.append_log_lines(critical=True)            # a live critical: toast and bell
        term.wait_for("critical finding")
        term.read(0.5)
        assert term.proc.poll() is None, term.text()[-2000:]
        term.type("q", 0.5)
        deadline = time.monotonic() + 15
        while term.proc.poll() is None and time.monotonic() < deadline:
            term.read(0.2)
        assert term.proc.returncode == 0, term.text()[-2000:]
    finally:
        term.close()
    output = bytes(term.output)
    assert "Traceback" not in term.text()
    assert terminal_injections(output) == []
    assert PAYLOAD in term.text()

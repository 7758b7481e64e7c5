"""Deterministic dashboards for the UI tests: simulated OpenClaw state dirs, fixed clocks.

The scenes are written by the real simulator (SQLite era, gateway log) with a
fake clock, then opened through ``build_app`` exactly as ``clawwatch
--state-dir DIR --log FILE`` opens them. Paths are fixed (not tmp_path) so
snapshot SVGs, which show source names, do not change between runs.
Other UI test modules import the helpers; the tests here check the scenes.
"""

from __future__ import annotations

import dataclasses
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from monitor.act.api import ActionResult, ProcessInfo
from monitor.config import Config
from monitor.config.sections import BudgetsConfig
from monitor.demo.sim.scenarios import Scenario, ScenarioEnv, ToolStep, make_scenario
from monitor.demo.sim.session import FakeClock
from monitor.demo.sim.simulator import Simulator
from monitor.detect.engine import DetectionEngine
from monitor.pipeline import Monitor
from monitor.sources.sourceset import SourceSet
from monitor.ui.factory import DashboardOptions, build_app
from monitor.ui.ingest import IngestLoop

SCENE_ROOT = Path("/tmp/clawwatch-ui-scenes")
START = 1_795_960_000.0
SECRET = "sk-live-0123456789abcdef"
MIXED_PLAN = (
    ("hammer", "agent:main:night-hammer", 25),
    ("pingpong", "agent:main:pingpong", 14),
    ("poll", "agent:main:poller", 6),
    ("burner", "agent:main:log-burner", 9),
    ("secret", "agent:main:deploy", 3),
    ("healthy", "agent:main:tidy", 6),
)


def secret_scenario() -> Scenario:
    """Calls whose arguments carry a bearer token and an API key (to be redacted)."""

    def steps(env: ScenarioEnv):
        while True:
            yield ToolStep("exec", {"command": "curl -fsS -H 'Authorization: Bearer "
                                               f"{SECRET}' https://api.example.com/v1/deploy",
                                    "env": {"API_KEY": "abc123secret"}},
                           "curl: (22) The requested URL returned error: 503", is_error=False,
                           details={"status": "completed", "exitCode": 22,
                                    "aggregated": "curl: (22) The requested URL returned "
                                                  "error: 503\n(Command exited with code 22)"})

    return Scenario("secret", "deploy the service", 13050, steps, "a failing deploy call")


class FixedClock:
    """A clock that only moves when told (the app's "now")."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@dataclass
class World:
    root: Path
    state_dir: Path
    log_path: Path
    sim: Simulator
    sim_clock: FakeClock
    clock: FixedClock

    def step(self, key: str, times: int = 1) -> None:
        session = self.sim.session(key)
        for _ in range(times):
            self.sim.step(session)
        self.clock.now = self.sim_clock.now + 2.0


def write_world(name: str, plan=MIXED_PLAN, *, root: Path = SCENE_ROOT) -> World:
    """A fresh state dir + gateway log at ``root/name`` with ``plan`` written round-robin."""
    base = root / name
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    sim_clock = FakeClock(START, tick=0.25)
    log_path = base / "openclaw.log"
    sim = Simulator(base / "state", log_path=log_path, clock=sim_clock, seed=7)
    for scenario, key, _ in plan:
        sim.add_session(secret_scenario() if scenario == "secret" else make_scenario(scenario),
                        key=key)
    remaining = {key: steps for _, key, steps in plan}
    while any(remaining.values()):
        for _, key, _ in plan:
            if remaining[key]:
                sim.step(sim.session(key))
                remaining[key] -= 1
    return World(base, base / "state", log_path, sim, sim_clock,
                 FixedClock(sim_clock.now + 3.0))


def scene_config() -> Config:
    return dataclasses.replace(Config(), budgets=BudgetsConfig(session_tokens=3_000_000))


def run_first_scan(world: World, *, timeout: float, on_publish=None,
                   **loop_options) -> tuple[list, IngestLoop]:
    """The dashboard's ingest thread over ``world`` until a snapshot says its first scan is
    done (within ``timeout`` seconds); every snapshot it published (each also given to
    ``on_publish``, on the ingest thread), and the stopped loop."""
    published: list = []

    def publish(snapshot) -> None:
        if on_publish is not None:
            on_publish(snapshot)
        published.append(snapshot)

    loop = IngestLoop(lambda: Monitor(SourceSet(state_dir=str(world.state_dir),
                                                log_path=str(world.log_path)),
                                      DetectionEngine(scene_config())),
                      FixedClock(world.clock.now), publish, poll_seconds=0.05,
                      min_interval=0.0, slice_events=40, **loop_options)
    thread = threading.Thread(target=loop.run)
    thread.start()
    try:
        deadline = time.monotonic() + timeout
        while not (published and not published[-1].scanning):
            assert time.monotonic() < deadline
            time.sleep(0.01)
    finally:
        loop.stop()
        thread.join(5)
    return published, loop


class RecordingController:
    """An ActionController that performs nothing and records every call."""

    def __init__(self, candidates: list[ProcessInfo] | None = None) -> None:
        self.calls: list[tuple] = []
        self.candidates = candidates or []

    def stop(self, session_key, *, method="abort", trigger=None):
        self.calls.append(("stop", session_key, method))
        return ActionResult(session_key, method, True, "aborted (recorded)", trigger)

    def kill_candidates(self, session_key):
        self.calls.append(("candidates", session_key))
        return list(self.candidates)

    def kill(self, session_key, *, trigger=None):
        self.calls.append(("kill", session_key))
        return ActionResult(session_key, "kill", True, "killed (recorded)", trigger,
                            tuple(p.pid for p in self.candidates))


def open_app(world: World, *, controller=None, theme: str | None = None,
             log: Path | None = None, config: Config | None = None, **app_options):
    """The app as the CLI builds it for ``clawwatch --state-dir … --log …``."""
    options = DashboardOptions(state_dir=str(world.state_dir),
                               log=str(log or world.log_path), theme=theme)
    return build_app(options, config=config or scene_config(),
                     controller=controller or RecordingController(), clock=world.clock,
                     poll_seconds=0.1, **app_options)


async def wait_for(pilot, condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await pilot.pause(0.02)


async def settle(pilot) -> None:
    """Until the first scan is over and every pane shows the latest snapshot."""
    await wait_for(pilot, lambda: pilot.app.settled)
    await pilot.pause()


@pytest.fixture(autouse=True)
def utc(monkeypatch):
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.fixture(scope="module")
def mixed():
    world = write_world("scene-check")
    yield world
    world.sim.close()


async def test_the_mixed_scene_has_every_severity(mixed):
    app = open_app(mixed)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        rows = {r.key: r for r in app.latest.rows}
    assert rows["agent:main:night-hammer"].worst_level == "critical"
    assert rows["agent:main:night-hammer"].state == "looping"
    assert rows["agent:main:pingpong"].worst_level == "warning"
    assert rows["agent:main:tidy"].state == "done"
    assert rows["agent:main:tidy"].worst_level is None
    assert rows["agent:main:log-burner"].budget_percent > 0


def test_scenes_are_deterministic(tmp_path):
    first = write_world("a", root=tmp_path)
    second = write_world("b", root=tmp_path)
    first.sim.close()
    second.sim.close()
    assert first.log_path.read_text().replace("/a/", "/b/") == second.log_path.read_text()
    assert first.clock.now == second.clock.now


"""Tool names are data: the model chooses them, so one can hold a token. The side panes
(streaks, ping-pong pairs) and the detail view's latest finding show tool names; each must
show them redacted, whole (a streak's tool column is cut to 12 cells, which would otherwise
show ``ghp_`` and 8 characters of a token)."""

from __future__ import annotations

from test_ui_scenes import FixedClock, RecordingController, settle, wait_for

from monitor.config import Config
from monitor.demo.sim.scenarios import Scenario, ScenarioEnv, ToolStep
from monitor.demo.sim.session import FakeClock
from monitor.demo.sim.simulator import Simulator
from monitor.ui.factory import DashboardOptions, build_app
from monitor.ui.panes.side import PingPongPane, StreaksPane
from monitor.ui.screens.detail import DetailSummary

GHP = "ghp_aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5"
SKP = "sk-proj-Qw3rTy7uIo9pAs2dFg4hJk6lZx8cVb1nM3qW5eR7tY9uI0oP"
START = 1_795_960_000.0


def fragments(text: str) -> list[str]:
    """Every 8 characters of either token's secret part that ``text`` shows, in any case
    (tool names are compared lower-cased, and a pair shows them so)."""
    text = text.lower()
    return [secret[i:i + 8] for secret in (GHP[4:].lower(), SKP[8:].lower())
            for i in range(len(secret) - 7) if secret[i:i + 8] in text]


def token_tools() -> Scenario:
    """Two tools named by tokens, alternating with stable outcomes: a ping-pong pair, and
    identical calls that raise findings naming the tools."""

    def steps(env: ScenarioEnv):
        while True:
            yield ToolStep(SKP, {"path": "/etc/hostname"}, "vm\n")
            yield ToolStep(GHP, {"path": "/etc/hostname"}, "vm\n")

    return Scenario("tokens", "tool names holding tokens", 13050, steps, "token tools")


async def test_tool_names_holding_tokens_are_redacted_in_the_side_panes_and_detail(tmp_path):
    clock = FakeClock(START, tick=0.25)
    sim = Simulator(tmp_path / "state", log_path=tmp_path / "openclaw.log", clock=clock, seed=7)
    try:
        sim.add_session(token_tools(), key="agent:main:tokens")
        for _ in range(24):
            sim.step(sim.session("agent:main:tokens"))
        app = build_app(DashboardOptions(state_dir=str(tmp_path / "state"),
                                         log=str(tmp_path / "openclaw.log")),
                        config=Config(), controller=RecordingController(),
                        clock=FixedClock(clock.now + 3.0), poll_seconds=0.1)
        async with app.run_test(size=(160, 48)) as pilot:
            await settle(pilot)
            streaks, pairs = app.query_one(StreaksPane), app.query_one(PingPongPane)
            await wait_for(pilot, lambda: "↔" in str(pairs.content)
                           and "█" in str(streaks.content))
            shown = {"streaks": str(streaks.content), "pairs": str(pairs.content)}
            await pilot.press("enter")
            summary = app.screen.query_one(DetailSummary)
            await wait_for(pilot, lambda: "latest finding" in str(summary.content))
            shown["detail"] = str(summary.content)
    finally:
        sim.close()
    assert {name: fragments(text) for name, text in shown.items()} == {
        "streaks": [], "pairs": [], "detail": []}, shown
    assert "«redacted»" in shown["pairs"] and "«redacted»" in shown["detail"], shown

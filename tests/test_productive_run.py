"""Real work is never stopped by default (issue 12, item 14).

A model making real progress — hundreds of tool calls, each a new command with a new
result, the context growing as it does in a real run — is not a loop. With the default
config no budget is critical (``iteration_budget`` only warns), so ``--act auto`` with
``on_critical: stop`` stops loops and leaves such a run alone. Loop criticals still act,
and ``on_loop_critical`` / ``on_budget_critical`` act on their own family.

The sessions are written by the simulator (``monitor.demo.sim``) into a legacy JSONL or SQLite
state dir and read by the real pipeline, detectors and action policy; the controller
records what it is asked to do (or, through the CLI, the real gateway controller reports
the attempt as an ``action`` record).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from monitor.act.api import ActionResult
from monitor.act.audit import AuditLog
from monitor.act.loop import ActionLoop
from monitor.act.policy import ActionPolicy
from monitor.config import ConfigError, load_config
from monitor.demo.sim.scenarios import Scenario, ScenarioEnv, Step, ToolStep, hammer, heavy
from monitor.demo.sim.session import FakeClock
from monitor.demo.sim.simulator import Simulator
from monitor.demo.sim.transcript import exec_details
from monitor.detect.engine import DetectionEngine
from monitor.pipeline import Monitor
from monitor.records import as_json_list
from monitor.sources.sourceset import SourceSet

pytestmark = pytest.mark.timeout(180)

ROOT = Path(__file__).resolve().parents[1]
CALLS = 260
PRODUCTIVE = "agent:main:progress"
LOOPING = "agent:main:hammer"


def progress(limit: int = CALLS) -> Scenario:
    """A model making real progress: every call a new exec command with a new result
    (reading, grepping, editing and testing one module after another), output tokens of a
    working model, and a context that grows by what each call adds."""
    from monitor.demo.sim.scenarios import EndStep, _limited

    end = EndStep("stop", f"Migrated {limit // 4} modules to the new settings API; "
                  "every module's tests pass.", output_tokens=220)

    def steps(env: ScenarioEnv) -> Iterator[Step]:
        def work() -> Iterator[Step]:
            for index in range(1, limit + 1):
                module = f"src/pkg/mod_{(index - 1) // 4:03d}.py"
                kind = index % 4
                if kind == 1:
                    command = f"sed -n '1,{40 + index % 60}p' {module}"
                    output = "".join(f"{n:4} def f_{index}_{n}(x): return x * {n + index}\n"
                                     for n in range(env.rng.randint(12, 40)))
                elif kind == 2:
                    command = f"grep -rn 'settings.get_{index}' src tests"
                    output = "".join(f"{module}:{n * 7}: value = settings.get_{index}('k{n}')\n"
                                     for n in range(env.rng.randint(2, 9)))
                elif kind == 3:
                    command = (f"python - <<'EOF'\nimport re, pathlib\np = pathlib.Path("
                               f"'{module}')\np.write_text(re.sub('get_{index}', "
                               f"'lookup_{index}', p.read_text()))\nEOF")
                    output = f"rewrote {env.rng.randint(1, 9)} call(s) in {module}\n"
                else:
                    tests = env.rng.randint(3, 30)
                    command = f"python -m pytest tests/test_mod_{(index - 1) // 4:03d}.py -q"
                    output = f"{'.' * tests}\n{tests} passed in {env.rng.randint(1, 9)}.{index}s\n"
                text, details = exec_details(output, 0, env.rng.randint(20, 900), env.cwd)
                yield ToolStep("exec", {"command": command}, text, details,
                               output_tokens=env.rng.randint(40, 420),
                               context_growth=env.rng.randint(150, 650))
        return _limited(work(), limit, end)

    return Scenario("progress", "migrate every module to the new settings API", 18000, steps,
                    "each call a new command with a new result")


def write_state_dir(root: Path, era: str, scenarios: list[Scenario]) -> tuple[Path, Path]:
    """Write ``scenarios`` to their end (a turn every 6 s of simulated time)."""
    state_dir, log = root / "state", root / "gateway.log"
    with Simulator(state_dir, era=era, log_path=log, clock=FakeClock(tick=2.0),
                   seed=7) as sim:
        sessions = [sim.add_session(scenario) for scenario in scenarios]
        for session in sessions:
            while sim.step(session):
                pass
        summary = {s["key"]: s for s in sim.expected()}
    for scenario in scenarios:
        key = f"agent:main:{scenario.name}"
        assert summary[key]["ended"], summary[key]
    return state_dir, log


class RecordingController:
    """What the policy asks the gateway to do, answered ``ok``."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str | None]] = []

    def stop(self, session_key, *, method="abort", trigger=None):
        self.calls.append((session_key, method, trigger))
        return ActionResult(session_key, method, True, "done", trigger, ())

    def kill(self, session_key, *, trigger=None):
        self.calls.append((session_key, "kill", trigger))
        return ActionResult(session_key, "kill", True, "done", trigger, (4242,))

    def kill_candidates(self, session_key):
        return []

    def close(self):
        pass


def watch_auto(tmp_path: Path, state_dir: Path, config_yaml: str | None
               ) -> tuple[list[dict], RecordingController]:
    """Read ``state_dir`` to its end with the real pipeline and the action policy in
    ``auto`` mode (what ``watch --act auto --from-start`` does), controller recorded."""
    config_path = None
    if config_yaml is not None:
        config_path = tmp_path / "clawwatch.yaml"
        config_path.write_text(config_yaml)
    config = load_config(str(config_path) if config_path else None,
                         env={"HOME": str(tmp_path / "home")})
    controller = RecordingController()
    policy = ActionPolicy(config, controller, audit=AuditLog(str(tmp_path / "audit.jsonl")),
                          mode="auto")
    loop = ActionLoop(policy)
    sources = SourceSet(state_dir=str(state_dir))
    monitor = Monitor(sources, DetectionEngine(config))
    records: list[dict] = []
    try:
        idle = 0
        while idle < 3:
            step = monitor.step()
            records += as_json_list(step)
            records += as_json_list(loop.process(step))
            idle = 0 if step or sources.behind else idle + 1
        assert policy.wait_idle(10)
        records += as_json_list(loop.close(5))
    finally:
        sources.close()
    return records, controller


def criticals(records: list[dict], key: str) -> list[dict]:
    return [r for r in records if r["type"] == "finding" and r["key"] == key
            and r["level"] == "critical"]


def tool_calls(records: list[dict], key: str) -> int:
    return sum(1 for r in records if r["type"] == "tool_call" and r["key"] == key)


@pytest.mark.parametrize("era", ["legacy", "sqlite"])
@pytest.mark.parametrize("config_yaml", [None, "actions: {on_critical: stop}\n",
                                         "actions: {on_critical: kill}\n"],
                         ids=["defaults", "on_critical-stop", "on_critical-kill"])
def test_a_long_productive_session_raises_no_critical_and_is_never_stopped(
        tmp_path, era, config_yaml):
    state_dir, _ = write_state_dir(tmp_path, era, [progress()])
    records, controller = watch_auto(tmp_path, state_dir, config_yaml)
    assert tool_calls(records, PRODUCTIVE) == CALLS
    assert criticals(records, PRODUCTIVE) == []
    assert controller.calls == []
    assert not [r for r in records if r["type"] == "action"]
    # warnings only; the iteration budget still warns, so the user sees the run is long
    findings = [r for r in records if r["type"] == "finding" and r["key"] == PRODUCTIVE]
    assert {r["level"] for r in findings} == {"warning"}
    assert ("iteration_budget", 100) in [(r["detector"], r["count"]) for r in findings]


def test_a_heavy_refactor_of_270_calls_is_never_stopped(tmp_path):
    """The simulator's own ``heavy`` scenario (read, edit, test one module after another;
    context growing past 130K tokens) run long."""
    state_dir, _ = write_state_dir(tmp_path, "legacy", [heavy(limit=270)])
    records, controller = watch_auto(tmp_path, state_dir, "actions: {on_critical: stop}\n")
    assert tool_calls(records, "agent:main:heavy") == 270
    assert criticals(records, "agent:main:heavy") == [] and controller.calls == []


def test_an_all_night_run_of_600_calls_whose_prompt_grows_eightfold_is_never_stopped(tmp_path):
    """Past ~500 calls the prompt is over 8x its early baseline while each reply stays a
    normal tool-calling turn: context_bloat warns, and stays a warning by default."""
    state_dir, _ = write_state_dir(tmp_path, "legacy", [progress(600)])
    records, controller = watch_auto(tmp_path, state_dir, "actions: {on_critical: stop}\n")
    assert tool_calls(records, PRODUCTIVE) == 600
    assert criticals(records, PRODUCTIVE) == [] and controller.calls == []
    assert "context_bloat" in {r["detector"] for r in records if r["type"] == "finding"
                               and r["key"] == PRODUCTIVE}


def test_loop_criticals_still_act_beside_a_productive_run(tmp_path):
    state_dir, _ = write_state_dir(tmp_path, "legacy", [progress(), hammer(limit=40)])
    records, controller = watch_auto(tmp_path, state_dir, "actions: {on_critical: stop}\n")
    assert criticals(records, LOOPING), "the hammer loop is critical"
    assert criticals(records, PRODUCTIVE) == []
    assert controller.calls == [(LOOPING, "abort", "generic_repeat")]


ITERATION_LIMIT = "detection: {iteration_budget: {critical_tool_calls: 150}}\n"


@pytest.mark.parametrize("actions, expected", [
    # on_critical is the shorthand for both families
    ("{on_critical: stop}", {LOOPING: "abort", PRODUCTIVE: "abort"}),
    # budgets only alert, loops are stopped
    ("{on_critical: stop, on_budget_critical: alert}", {LOOPING: "abort"}),
    # loops are killed, the user's budget stops
    ("{on_loop_critical: kill, on_budget_critical: stop}",
     {LOOPING: "kill", PRODUCTIVE: "abort"}),
    # only the budget acts
    ("{on_loop_critical: alert, on_budget_critical: kill}", {PRODUCTIVE: "kill"}),
])
def test_loop_and_budget_criticals_act_independently(tmp_path, actions, expected):
    """A user who sets an iteration budget gets its critical; which action each family
    takes is theirs to choose."""
    state_dir, _ = write_state_dir(tmp_path, "legacy", [progress(), hammer(limit=40)])
    records, controller = watch_auto(tmp_path, state_dir,
                                     ITERATION_LIMIT + f"actions: {actions}\n")
    (budget,) = criticals(records, PRODUCTIVE)
    assert (budget["detector"], budget["count"]) == ("iteration_budget", 150)
    assert {key: action for key, action, _ in controller.calls} == expected
    triggers = {key: trigger for key, _, trigger in controller.calls}
    assert triggers.get(LOOPING, "generic_repeat") == "generic_repeat"
    assert triggers.get(PRODUCTIVE, "iteration_budget") == "iteration_budget"


def test_watch_headless_act_auto_cli_stops_the_loop_and_not_the_productive_run(tmp_path):
    """``clawwatch watch --headless --act auto --json`` with the default config plus
    ``on_critical: stop`` (as an environment variable), on the live CLI: the looping run
    gets an action record (the gateway is absent, so it fails), the productive one none."""
    state_dir, log = write_state_dir(tmp_path, "sqlite", [progress(), hammer(limit=40)])
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENCLAW_", "CLAWWATCH_")) or k == "CLAWWATCH_LOG_DIRS"}
    env.update(HOME=str(tmp_path / "home"), XDG_CONFIG_HOME=str(tmp_path / "home" / ".config"),
               XDG_STATE_HOME=str(tmp_path / "xdg-state"), CLAWWATCH_ACTIONS__ON_CRITICAL="stop",
               CLAWWATCH_ACTIONS__COOLDOWN_SECONDS="3600")
    result = subprocess.run(
        [sys.executable, "-m", "monitor", "watch", "--headless", "--act", "auto", "--json",
         "--from-start", "--no-checkpoint", "--seconds", "4", "--poll", "0.2",
         "--state-dir", str(state_dir), "--log", str(log)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    assert tool_calls(records, PRODUCTIVE) == CALLS
    assert criticals(records, PRODUCTIVE) == []
    actions = [r for r in records if r["type"] == "action"]
    assert {a["key"] for a in actions} == {LOOPING}, actions
    assert criticals(records, LOOPING)


def test_defaults_no_budget_is_critical_and_the_families_fall_back_to_on_critical(tmp_path):
    config = load_config(None, env={"HOME": str(tmp_path)})
    assert config.detection.iteration_budget.critical_tool_calls is None
    assert config.budgets.session_tokens is None and config.budgets.agent_tokens is None
    assert config.budgets.nightly_tokens is None
    assert (config.actions.on_loop_critical, config.actions.on_budget_critical) == (None, None)
    path = tmp_path / "clawwatch.yaml"
    path.write_text("detection: {iteration_budget: {warning_tool_calls: 300,"
                    " critical_tool_calls: 250}}\nactions: {on_budget_critical: nap}\n")
    with pytest.raises(ConfigError) as raised:
        load_config(str(path), env={})
    assert "actions.on_budget_critical: must be one of: alert, stop, kill" in str(raised.value)
    path.write_text("detection: {iteration_budget: {warning_tool_calls: 300,"
                    " critical_tool_calls: 250}}\n")
    clamped = load_config(str(path), env={})
    assert clamped.detection.iteration_budget.critical_tool_calls == 301


def test_family_precedence():
    from monitor.act.policy import choose_action
    from monitor.config.sections import ActionsConfig

    actions = ActionsConfig(on_critical="kill", on_loop_critical="stop",
                            on_budget_critical="alert",
                            triggers={"ping_pong": "kill", "*": "stop", "*:warning": "alert"})
    assert choose_action(actions, "generic_repeat", "critical") == "stop"   # loop family
    assert choose_action(actions, "ping_pong", "critical") == "kill"        # detector trigger
    assert choose_action(actions, "iteration_budget", "critical") == "alert"  # budget family
    assert choose_action(actions, "token_budget", "critical") == "alert"
    assert choose_action(actions, "turn_failures", "critical") == "stop"    # neither: "*"
    assert choose_action(actions, "iteration_budget", "warning") == "alert"  # *:warning
    shorthand = ActionsConfig(on_critical="stop")
    for detector in ("generic_repeat", "iteration_budget", "hung_process"):
        assert choose_action(shorthand, detector, "critical") == "stop"
    assert choose_action(shorthand, "iteration_budget", "warning") is None


def test_the_board_does_not_call_a_long_productive_run_looping():
    from monitor.detect.findings import Finding
    from monitor.session_state import SessionState
    from monitor.snapshot_builder import SnapshotBuilder

    state = SessionState("s1", status="running")
    budget = Finding(PRODUCTIVE, "s1", "iteration_budget", "warning", 100, "exec", 100, "")
    repeat = Finding(LOOPING, "s2", "generic_repeat", "warning", 10, "exec", 10, "")
    assert SnapshotBuilder._state_of(state, [budget], 1.0) == "running"
    assert SnapshotBuilder._state_of(state, [repeat], 1.0) == "looping"

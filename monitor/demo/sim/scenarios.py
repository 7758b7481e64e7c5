"""Scripted agent behaviours: each scenario yields the tool calls of one run, then its end.

A scenario is deterministic given its :class:`ScenarioEnv` (seeded ``rng`` plus an
injectable clock). Loop scenarios never end by themselves unless given ``limit``
(they then end as a run timeout); the others end with a final text answer.
Tool results mirror what the real tools return (see :mod:`monitor.demo.sim.transcript`).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from monitor.demo.sim.transcript import EXEC_FOLLOW_UP, exec_details, to_ms


@dataclass(frozen=True, slots=True)
class ToolStep:
    """One model turn that calls one tool, and the tool's outcome."""

    tool: str
    arguments: dict[str, Any]
    result_text: str
    details: dict[str, Any] | None = None
    is_error: bool = False
    output_tokens: int = 17
    input_tokens: int | None = None  # None: the running context size of the session
    context_growth: int | None = None  # None: estimated from arguments + result size


@dataclass(frozen=True, slots=True)
class EndStep:
    """How the run ends: a final text (``stop``), a terminal error turn, or a timeout."""

    kind: Literal["stop", "error", "timeout"]
    text: str = ""
    output_tokens: int = 0
    with_usage: bool = True  # False: the runner wrote the text itself, no model call


Step = ToolStep | EndStep


@dataclass(slots=True)
class ScenarioEnv:
    rng: random.Random
    now: Callable[[], float] = time.time
    cwd: str = "/tmp/openclaw-sim/workspace"
    hostname: str = "vm"


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    prompt: str
    base_input: int
    steps: Callable[[ScenarioEnv], Iterator[Step]] = field(repr=False)
    description: str = ""


def _exec(env: ScenarioEnv, command: str, output: str, exit_code: int, **extra: Any) -> ToolStep:
    text, details = exec_details(output, exit_code, env.rng.randint(8, 400), env.cwd)
    return ToolStep("exec", {"command": command}, text, details, **extra)


def _read(path: str, content: str, **extra: Any) -> ToolStep:
    return ToolStep("read", {"path": path}, content, {"kind": "text", "content": content}, **extra)


def _limited(steps: Iterator[Step], limit: int | None, end: EndStep) -> Iterator[Step]:
    """At most ``limit`` tool calls of ``steps`` (all if None), then ``end``."""
    for done, step in enumerate(steps):
        if limit is not None and done >= limit:
            break
        yield step
        if isinstance(step, EndStep):
            return
    yield end


TIMEOUT = EndStep("timeout")
MISSING = "/tmp/openclaw-lab-nowhere"


def hammer(limit: int | None = None, command: str = f"ls -la {MISSING}") -> Scenario:
    output = f"ls: cannot access '{MISSING}': No such file or directory\n"

    def steps(env: ScenarioEnv) -> Iterator[Step]:
        def forever() -> Iterator[Step]:
            while True:
                yield _exec(env, command, output, 2)
        return _limited(forever(), limit, TIMEOUT)

    return Scenario("hammer", "lab hammer loop", 13050, steps,
                    "the same exec with the same failing outcome")


def pingpong(limit: int | None = None) -> Scenario:
    output = f"ls: cannot access '{MISSING}': No such file or directory\n"

    def steps(env: ScenarioEnv) -> Iterator[Step]:
        def forever() -> Iterator[Step]:
            while True:
                yield _read("/etc/hostname", f"{env.hostname}\n")
                yield _exec(env, f"ls -la {MISSING}", output, 2)
        return _limited(forever(), limit, TIMEOUT)

    return Scenario("pingpong", "lab pingpong loop", 13050, steps,
                    "read /etc/hostname and exec alternate, outcomes stable")


def poll(limit: int | None = None) -> Scenario:
    def steps(env: ScenarioEnv) -> Iterator[Step]:
        slug = env.rng.choice(["brisk", "clear", "grand", "sharp", "quiet"]) + "-" + \
            env.rng.choice(["crest", "willow", "bloom", "nudibranch", "harbor"])
        pid = env.rng.randint(2000, 60000)

        def forever() -> Iterator[Step]:
            text = f"Command still running (session {slug}, pid {pid}). {EXEC_FOLLOW_UP}"
            details = {"status": "running", "sessionId": slug, "pid": pid,
                       "startedAt": to_ms(env.now()), "cwd": env.cwd, "tail": "",
                       "followUp": EXEC_FOLLOW_UP}
            yield ToolStep("exec", {"command": "sleep 600", "background": True}, text, details)
            poll_details = {"status": "running", "sessionId": slug, "aggregated": "",
                            "name": "sleep 600", "stdinWritable": True, "waitingForInput": False}
            while True:
                yield ToolStep("process", {"action": "poll", "sessionId": slug},
                               "(no new output)\n\nProcess still running.", dict(poll_details))
        return _limited(forever(), limit, TIMEOUT)

    return Scenario("poll", "lab poll loop", 13050, steps,
                    "exec in background, then process poll with identical results")


def unknown_tool(limit: int | None = 10) -> Scenario:
    end = EndStep("stop", "I could not run frobnicate_widget: that tool is not available.",
                  with_usage=False)

    def steps(env: ScenarioEnv) -> Iterator[Step]:
        def forever() -> Iterator[Step]:
            while True:
                yield ToolStep("frobnicate_widget", {"widget": "alpha", "mode": "spin"},
                               "Tool frobnicate_widget not found", {}, is_error=True)
        return _limited(forever(), limit, end)

    return Scenario("unknown_tool", "lab unknown-tool loop", 13050, steps,
                    "calls a tool that does not exist")


def rotation(
    limit: int | None = None,
    path: str = "/root/.openclaw/workspace/skills/blog-publisher-wordpress",
) -> Scenario:
    """Several commands rotate over the same missing path (each gets its previous outcome)."""
    variants = [
        (f"ls -la {path}/", f"ls: cannot access '{path}/': No such file or directory\n", 2, 33),
        (f"find {path} -type f", f"find: '{path}': No such file or directory\n", 1, 19),
        (f"python3 -c \"import json; print(json.load(open('{path}/session.json')))\"",
         "Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\n"
         f"FileNotFoundError: [Errno 2] No such file or directory: '{path}/session.json'\n",
         1, 20),
        (f"tail -100 {path}/publish.log",
         f"tail: cannot open '{path}/publish.log' for reading: No such file or directory\n",
         1, 8),
    ]
    weights = [v[3] for v in variants]

    def steps(env: ScenarioEnv) -> Iterator[Step]:
        def forever() -> Iterator[Step]:
            previous = -1
            while True:
                index = previous
                while index == previous:
                    index = env.rng.choices(range(len(variants)), weights)[0]
                previous = index
                command, output, code, _ = variants[index]
                yield _exec(env, command, output, code)
        return _limited(forever(), limit, TIMEOUT)

    return Scenario("rotation", "publish the draft with the blog-publisher skill", 14200, steps,
                    "ls / find / python3 -c / tail rotating on the same missing path")


def drift(limit: int | None = None) -> Scenario:
    def steps(env: ScenarioEnv) -> Iterator[Step]:
        def forever() -> Iterator[Step]:
            while True:
                stamp = time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime(env.now()))
                output = f"{stamp}\njob-0042.lock\nqueue.db\n"
                yield _exec(env, "date; ls /var/spool/clawjobs", output, 0)
        return _limited(forever(), limit, TIMEOUT)

    return Scenario("drift", "wait until job 42 finishes", 13050, steps,
                    "the same command; outputs differ only by a timestamp")


def _module_source(rng: random.Random, index: int) -> str:
    lines = [f'"""Module {index}: request handlers."""', "", "import json", ""]
    for fn in range(rng.randint(4, 30)):
        lines += [f"def handler_{index}_{fn}(request):",
                  f"    payload = json.loads(request.body or '{{}}')  # v{rng.randint(1, 999)}",
                  f"    return {{'status': {200 + fn % 3}, 'items': payload.get('items', [])}}", ""]
    return "\n".join(lines)


def heavy(limit: int | None = 60) -> Scenario:
    """Heavy but healthy: many calls, every outcome different, large context, real progress."""
    end = EndStep("stop", "Refactor complete: every handler module now validates its payload "
                  "and all module tests pass.", output_tokens=180)

    def steps(env: ScenarioEnv) -> Iterator[Step]:
        def work() -> Iterator[Step]:
            index = 0
            while True:
                index += 1
                path = f"src/app/module_{index}.py"
                source = _module_source(env.rng, index)
                yield _read(path, source, output_tokens=env.rng.randint(60, 140))
                old = f"def handler_{index}_0(request):"
                diff = f"-{old}\n+{old[:-2]}, *, strict=True):"
                yield ToolStep("edit", {"path": path, "edits": [
                    {"oldText": old, "newText": old[:-2] + ", *, strict=True):"}]},
                    f"Successfully replaced 1 block(s) in {path}.",
                    {"changed": True, "diff": diff, "patch": f"--- {path}\n+++ {path}\n{diff}\n",
                     "firstChangedLine": 5}, output_tokens=env.rng.randint(150, 400))
                tests = env.rng.randint(2, 9)
                seconds = env.rng.randint(10, 99)
                yield _exec(env, f"python -m pytest tests/test_module_{index}.py -q",
                            f"{'.' * tests}\n{tests} passed in 0.{seconds}s\n", 0,
                            output_tokens=env.rng.randint(40, 90))
        return _limited(work(), limit, end)

    return Scenario("heavy", "add strict payload validation to every handler module", 42000,
                    steps, "many calls, every outcome different, real progress")


def healthy(limit: int | None = 4) -> Scenario:
    end = EndStep("stop", "The repository is clean and the test suite passes (42 tests).",
                  output_tokens=64)
    plan: list[tuple[str, str, int]] = [
        ("git status --short", "", 0),
        ("python -m pytest -q", "." * 42 + "\n42 passed in 1.87s\n", 0),
        ("git log --oneline -3", "a1b2c3d Fix parser\n9f8e7d6 Add tests\n1234abc Init\n", 0),
        ("ls", "README.md\npyproject.toml\nsrc\ntests\n", 0),
    ]

    def steps(env: ScenarioEnv) -> Iterator[Step]:
        def work() -> Iterator[Step]:
            yield _read("README.md", "# demo\n\nA small demo project.\n", output_tokens=45)
            while True:
                for command, output, code in plan:
                    yield _exec(env, command, output, code, output_tokens=env.rng.randint(30, 80))
        return _limited(work(), limit, end)

    return Scenario("healthy", "check that the repo is clean and tests pass", 13050, steps,
                    "a few varied calls, then a final answer")


def burner(limit: int | None = None, growth: int = 6000) -> Scenario:
    """Large input per turn, tiny output: crosses a token budget without repeating itself."""

    def steps(env: ScenarioEnv) -> Iterator[Step]:
        def forever() -> Iterator[Step]:
            offset = 0
            while True:
                lines = "".join(
                    f"{offset + n} INFO worker heartbeat seq={env.rng.randint(0, 10**9)}\n"
                    for n in range(12))
                yield ToolStep("read", {"path": "logs/worker.log", "offset": offset, "limit": 2000},
                               lines, {"kind": "text", "content": lines}, output_tokens=3,
                               context_growth=growth)
                offset += 2000
        return _limited(forever(), limit, TIMEOUT)

    return Scenario("burner", "summarise the worker log", 60000, steps,
                    "large input tokens per turn, tiny output")


SCENARIOS: dict[str, Callable[..., Scenario]] = {
    "hammer": hammer,
    "pingpong": pingpong,
    "poll": poll,
    "unknown_tool": unknown_tool,
    "rotation": rotation,
    "drift": drift,
    "heavy": heavy,
    "healthy": healthy,
    "burner": burner,
}


def make_scenario(name: str, **params: Any) -> Scenario:
    """Build a scenario by name (``unknown-tool`` is accepted for ``unknown_tool``)."""
    factory = SCENARIOS.get(name.replace("-", "_"))
    if factory is None:
        raise ValueError(f"unknown scenario {name!r}; known: {', '.join(SCENARIOS)}")
    return factory(**params)

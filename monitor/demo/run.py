"""``clawwatch demo``: simulated OpenClaw sessions written live into a temp state dir, a
local gateway endpoint that really stops them, real exec children that ``K`` kills, and one
looping Claude Code session written by a real process that looks like ``claude -p``
(``monitor.demo.claude_cli``), which the stop key and ``--act auto`` really interrupt
(SIGINT, through ``RoutingController``'s CLI path).

``DemoWorld`` owns everything the demo creates (temp dir, simulator thread, endpoint,
children) and ``close()`` removes all of it. ``config_env()`` is the demo's config
overlay (budgets and actions tuned so that within ~20 s both a stop and a kill happen
under ``--act auto``), passed to ``load_config`` as ``CLAWWATCH_*`` layers over the
user's config file; the user's own ``CLAWWATCH_*`` variables still win.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from pathlib import Path

from monitor.demo.claude_cli import DemoClaude
from monitor.demo.gateway import DemoGateway
from monitor.demo.sim.simulator import Simulator
from monitor.discovery import Discovered

DEMO_SCENARIOS = (
    ("hammer", "agent:main:demo-hammer"),
    ("pingpong", "agent:main:demo-pingpong"),
    ("poll", "agent:main:demo-poll"),
    ("rotation", "agent:main:demo-rotation"),
    ("burner", "agent:main:demo-burner"),
    ("healthy", "agent:main:demo-healthy"),
)
LOOPING = ("hammer", "pingpong", "poll", "rotation")
DEFAULT_RATE = 8.0
TOKEN_ENV = "CLAWWATCH_DEMO_GATEWAY_TOKEN"


def exec_command(scenario: str, gateway_pid: int) -> tuple[str, bool]:
    """(the harmless command of the scenario's exec child, whether it is backgrounded).

    The command waits for the process playing the gateway to end (``tail --pid``), so a
    child never outlives the demo by more than a second, however the demo ends. The poll
    scenario's run has it in the background (it outlives an abort, as in OpenClaw); the
    others have it in flight in the foreground (an abort ends it)."""
    command = f"tail -f /dev/null --pid={gateway_pid}"
    if scenario == "poll":
        return command, True
    return f"{command}  # clawwatch demo {scenario}", False


class DemoWorld:
    """A temp state dir with a simulator writing into it from a background thread, the
    demo gateway endpoint, one exec child per looping session, and (``claude=True``) the
    fake Claude Code CLI writing ``claude_dir``."""

    def __init__(self, *, era: str = "sqlite", rate: float | None = None,
                 gateway: bool = True, claude: bool = True) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="clawwatch-demo-"))
        self.state_dir = self.root / "state"
        self.log_path = self.root / "logs" / "openclaw.log"
        self.log_path.parent.mkdir(parents=True)
        self.simulator = Simulator(self.state_dir, era=era, log_path=self.log_path)
        for scenario, key in DEMO_SCENARIOS:
            self.simulator.add_session(scenario, key=key)
        self.rate = rate or DEFAULT_RATE
        self.gateway = DemoGateway(self.simulator, self.state_dir) if gateway else None
        # one Bash call every ~2 turns' time: its 20 repeats turn critical within seconds
        self.claude = DemoClaude(self.root, pace=min(1.0, max(0.05, 2.0 / self.rate))) \
            if claude else None
        self.stop_event = threading.Event()
        self._thread = threading.Thread(target=self._run, name="clawwatch-demo-sim", daemon=True)
        self._closed = False

    def _run(self) -> None:
        self.simulator.run(rate=self.rate, stop_event=self.stop_event)

    def start(self) -> DemoWorld:
        try:
            for session in self.simulator.sessions:
                self.simulator.step(session)
            if self.gateway is not None:
                self.gateway.start()
                for scenario, key in DEMO_SCENARIOS:
                    if scenario in LOOPING:
                        command, background = exec_command(scenario, self.gateway.pid)
                        self.gateway.spawn_exec(key, command, background=background)
            self._thread.start()
            if self.claude is not None:
                self.claude.start()
        except BaseException:
            self.close()
            raise
        return self

    # ------------------------------------------------------------------ wiring

    @property
    def claude_dirs(self) -> tuple[str, ...]:
        """The Claude Code projects dirs the demo's ``SourceSet`` reads (``--claude-dir``)."""
        return (str(self.claude.projects_dir),) if self.claude is not None else ()

    @property
    def claude_key(self) -> str | None:
        """The session key of the demo's Claude Code session."""
        return self.claude.key if self.claude is not None else None

    def config_env(self, env=None) -> dict[str, str]:
        """The environment for ``load_config``: the demo overlay under ``env``'s own
        ``CLAWWATCH_*`` variables (defaults to ``os.environ``)."""
        env = os.environ if env is None else env
        overlay = {
            "CLAWWATCH_BUDGETS__SESSION_TOKENS": "2000000",
            "CLAWWATCH_DETECTION__BURN_RATE__ETA_CRITICAL_MINUTES": "2",
            "CLAWWATCH_ACTIONS__ON_CRITICAL": "stop",
            "CLAWWATCH_ACTIONS__TRIGGERS__BURN_RATE": "alert",
            "CLAWWATCH_ACTIONS__TRIGGERS__GENERIC_REPEAT": "kill",
            "CLAWWATCH_ACTIONS__TRIGGERS__KNOWN_POLL_NO_PROGRESS": "kill",
            "CLAWWATCH_ACTIONS__KILL_GRACE_SECONDS": "2",
            "CLAWWATCH_ACTIONS__AUDIT_LOG": str(self.root / "audit.jsonl"),
            "CLAWWATCH_GATEWAY__TOKEN_ENV": TOKEN_ENV,
        }
        return {**overlay, **env}

    def discovered(self) -> Discovered:
        """What discovery would have found for this world (for the action controller: its
        ``claude_dirs`` route ``claude-code:`` keys to the demo's CLI; no Codex dir)."""
        return Discovered(state_dir=str(self.state_dir), openclaw_config_path=None,
                          openclaw_config={}, log_path=str(self.log_path), log_dirs=[],
                          gateway_url=self.gateway.url if self.gateway else None,
                          gateway_token=self.gateway.token if self.gateway else None,
                          claude_dirs=list(self.claude_dirs), codex_dirs=[])

    def controller(self, config):
        """A ``GatewayActionController`` pointed at the demo endpoint, its token and the
        process that plays the gateway (the ``openclaw`` CLI is never used), behind a
        ``RoutingController`` that sends the Claude Code key to the demo's CLI process."""
        from monitor.act.cli_controller import routed
        from monitor.act.controller import GatewayActionController

        if self.gateway is None:
            raise RuntimeError("this demo world has no gateway")
        env = {**os.environ, config.gateway.token_env: self.gateway.token}
        controller = GatewayActionController(
            self.discovered(), config, gateway_pid=self.gateway.pid, url=self.gateway.url,
            env=env, openclaw_bin="-")
        controller.openclaw_bin = None
        return routed(controller, config, discovered=self.discovered())

    def dashboard_actions(self, config, mode: str | None) -> dict:
        """``controller``/``after_step``/``on_close`` for the dashboard on this world."""
        from monitor.act.loop import dashboard_action_hooks

        return dashboard_action_hooks(self.controller(config), self.discovered(), config,
                                      mode=mode)

    # ------------------------------------------------------------------ cleanup

    def close(self) -> None:
        """Stop the simulator, the endpoint and every child (the fake Claude Code CLI and
        its tool calls too); remove the temp dir."""
        if self._closed:
            return
        self._closed = True
        self.stop_event.set()
        if self.claude is not None:
            self.claude.close()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        if self.gateway is not None:
            self.gateway.close()
        self.simulator.close()
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> DemoWorld:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

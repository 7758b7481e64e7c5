"""``clawwatch demo``: simulated OpenClaw sessions written live into a temp state dir."""

from __future__ import annotations

import shutil
import tempfile
import threading
from pathlib import Path

from monitor.sim.simulator import Simulator

DEMO_SCENARIOS = (
    ("hammer", "agent:main:demo-hammer"),
    ("pingpong", "agent:main:demo-pingpong"),
    ("poll", "agent:main:demo-poll"),
    ("rotation", "agent:main:demo-rotation"),
    ("burner", "agent:main:demo-burner"),
    ("healthy", "agent:main:demo-healthy"),
)


class DemoWorld:
    """A temp state dir with a simulator writing into it from a background thread."""

    def __init__(self, *, era: str = "sqlite", rate: float = 8.0) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="clawwatch-demo-"))
        self.state_dir = self.root / "state"
        self.log_path = self.root / "logs" / "openclaw.log"
        self.log_path.parent.mkdir(parents=True)
        self.simulator = Simulator(self.state_dir, era=era, log_path=self.log_path)
        for scenario, key in DEMO_SCENARIOS:
            self.simulator.add_session(scenario, key=key)
        self.rate = rate
        self.stop_event = threading.Event()
        self._thread = threading.Thread(target=self._run, name="clawwatch-demo-sim", daemon=True)

    def _run(self) -> None:
        self.simulator.run(rate=self.rate, stop_event=self.stop_event)

    def start(self) -> DemoWorld:
        self.simulator.step(self.simulator.sessions[0])
        self._thread.start()
        return self

    def close(self) -> None:
        self.stop_event.set()
        self._thread.join(timeout=5)
        self.simulator.close()
        shutil.rmtree(self.root, ignore_errors=True)

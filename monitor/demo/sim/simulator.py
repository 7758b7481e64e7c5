"""Drives scripted sessions and writes them live, as an OpenClaw 2026.9.6 gateway would.

Each :meth:`Simulator.step` writes one model turn of one session (``RunWriter``: the
transcript entries, the session index, the gateway lines of that turn). :meth:`expected`
is the ground truth that readers and detectors are compared against.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from monitor.demo.sim import transcript as tx
from monitor.demo.sim.log_writer import GatewayLogWriter, Trace
from monitor.demo.sim.run_writer import RunWriter
from monitor.demo.sim.scenarios import EndStep, Scenario, ScenarioEnv, ToolStep, make_scenario
from monitor.demo.sim.session import FakeClock, SimSession, short_id
from monitor.demo.sim.stores import LegacyStore, SqliteStore, Store

Era = Literal["sqlite", "legacy"]
FINAL_STATUSES = ("done", "failed", "killed", "timeout")
__all__ = ["FakeClock", "SimSession", "Simulator"]


class Simulator:
    """Writes scripted sessions into ``state_dir`` (SQLite or legacy JSONL era) live.

    Thread-safe: :meth:`run` may loop in one thread while another calls
    :meth:`end_session` (what a gateway abort does).
    """

    def __init__(
        self,
        state_dir: str | Path,
        era: Era = "sqlite",
        log_path: str | Path | None = None,
        agent_id: str = "main",
        clock: Callable[[], float] = time.time,
        seed: int = 0,
        *,
        provider: str = "fake",
        model: str = "loop-model",
        api: str = "openai-completions",
        loop_warnings: bool = False,
        split_writes: bool = False,
        trajectory: bool = True,
        hostname: str = "vm",
        workspace: str | None = None,
    ) -> None:
        self.state_dir = Path(state_dir)
        self.era = era
        self.agent_id = agent_id
        self.clock = clock
        self.seed = seed
        self.hostname = hostname
        self.cwd = workspace or str(self.state_dir / "workspace")
        if era == "sqlite":
            self.store: Store = SqliteStore(self.state_dir, agent_id)
        elif era == "legacy":
            self.store = LegacyStore(self.state_dir, agent_id, split_writes=split_writes)
        else:
            raise ValueError(f"unknown era {era!r}")
        self.log = GatewayLogWriter(log_path, hostname=hostname) if log_path else None
        self.writer = RunWriter(self.store, self.log, clock, era=era, agent_id=agent_id,
                                provider=provider, model=model, api=api, cwd=self.cwd,
                                loop_warnings=loop_warnings,
                                trajectory=trajectory and era == "sqlite")
        self._sessions: list[SimSession] = []
        self._lock = threading.RLock()
        self._closed = False
        if self.log:
            self.log.startup(self.clock(), provider, model)

    @property
    def path(self) -> Path:
        """The agent database (SQLite era) or the sessions directory (legacy era)."""
        return self.store.path

    @property
    def sessions(self) -> list[SimSession]:
        return list(self._sessions)

    def session(self, key: str) -> SimSession:
        """The current (latest) generation of ``key``."""
        for candidate in reversed(self._sessions):
            if candidate.key == key:
                return candidate
        raise KeyError(key)

    # -- building sessions --

    def add_session(
        self, scenario: Scenario | str, key: str | None = None, run_id: str | None = None
    ) -> SimSession:
        """Register a session; nothing is written until its first :meth:`step`.

        ``key`` defaults to ``agent:<agent>:<scenario>`` (``-2``, ``-3``... when taken).
        """
        spec = make_scenario(scenario) if isinstance(scenario, str) else scenario
        with self._lock:
            if key is not None and any(s.key == key and s.live for s in self._sessions):
                raise ValueError(f"session {key!r} is already live")
            if key is None:
                key = f"agent:{self.agent_id}:{spec.name}"
                taken = {s.key for s in self._sessions}
                suffix = 2
                while key in taken:
                    key = f"agent:{self.agent_id}:{spec.name}-{suffix}"
                    suffix += 1
            return self._new_generation(spec, key, run_id)

    def _new_generation(self, spec: Scenario, key: str, run_id: str | None,
                        previous: str | None = None) -> SimSession:
        rng = random.Random(f"{self.seed}:{len(self._sessions)}:{key}:{spec.name}")
        ids = tx.IdSource(rng)
        session = SimSession(key=key, session_id=ids.uuid(), run_id=run_id or ids.uuid(),
                             agent_id=self.agent_id, scenario=spec, previous_session_id=previous)
        session.ids = ids
        session.env = ScenarioEnv(rng=rng, now=self.clock, cwd=self.cwd, hostname=self.hostname)
        session.context = spec.base_input
        self._sessions.append(session)
        return session

    # -- writing --

    def step(self, session: SimSession) -> bool:
        """Write the next model turn of ``session``; False once the session has ended."""
        with self._lock:
            if session.ended:
                return False
            if not session.started:
                self.writer.begin(session)
            if session.steps is None:
                session.steps = session.scenario.steps(session.env)
            item = next(session.steps, None)
            if isinstance(item, ToolStep):
                self.writer.tool_turn(session, item)
                self.writer.index(session)
                return True
            self.writer.finish(session, item or EndStep("stop", "Done.", output_tokens=12))
            return False

    def end_session(self, key: str, status: str = "killed", aborted: bool = True) -> bool:
        """What an abort does: the run stops and the index says ``status``/``abortedLastRun``.

        Returns False when the session had already ended.
        """
        if status not in FINAL_STATUSES:
            raise ValueError(f"status must be one of {FINAL_STATUSES}")
        with self._lock:
            s = self.session(key)
            if s.ended:
                return False
            if not s.started:
                self.writer.begin(s)
            if self.log and aborted:
                request = Trace.new(s.ids)
                self.log.chat_abort(self.clock(), request, short_id(s.ids), short_id(s.ids))
            s.status, s.aborted = status, aborted
            self.writer.close_run(s, aborted=aborted, timed_out=status == "timeout",
                                  stop_reason="rpc" if aborted else "stop")
            return True

    def reset_session(self, key: str) -> SimSession:
        """``/reset``: end the current generation, archive it (legacy era), start a new
        ``session_id`` under the same key with a fresh run of the same scenario."""
        with self._lock:
            old = self.session(key)
            if not old.ended:
                self.end_session(key, status="done", aborted=False)
            self.store.archive(old.session_id, self.clock())
            return self._new_generation(old.scenario, key, None, previous=old.session_id)

    # -- driving --

    def run(
        self,
        duration: float | None = None,
        calls: int | None = None,
        rate: float | None = 10.0,
        stop_event: threading.Event | None = None,
    ) -> int:
        """Step live sessions round-robin, ``rate`` turns per second (None/0: no pause),
        until ``duration`` seconds pass, ``calls`` tool calls were written, ``stop_event``
        is set, or every session has ended. Returns the tool calls written."""
        deadline = time.monotonic() + duration if duration is not None else None
        written = 0
        turn = 0
        while True:
            if stop_event is not None and stop_event.is_set():
                break
            if deadline is not None and time.monotonic() >= deadline:
                break
            if calls is not None and written >= calls:
                break
            with self._lock:
                live = [s for s in self._sessions if s.live]
                if not live:
                    break
                session = live[turn % len(live)]
                before = session.tool_calls
                self.step(session)
                written += session.tool_calls - before
            turn += 1
            if rate:
                pause = 1.0 / rate
                if deadline is not None:
                    pause = max(0.0, min(pause, deadline - time.monotonic()))
                if stop_event is not None:
                    stop_event.wait(pause)
                else:
                    time.sleep(pause)
        return written

    def expected(self) -> list[dict[str, Any]]:
        """Ground truth per session generation, in creation order."""
        with self._lock:
            return [s.summary() for s in self._sessions]

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self.store.close()
            if self.log:
                self.log.close()

    def __enter__(self) -> Simulator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

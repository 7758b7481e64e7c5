"""Drives scripted sessions and writes them live, as an OpenClaw 2026.9.6 gateway would.

Each :meth:`Simulator.step` writes one model turn of one session (assistant
``toolCall`` message, its ``toolResult``, the growing ``openclaw.cache-ttl`` entry),
updates the session index, and logs the gateway lines of that turn. :meth:`expected`
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
from monitor.demo.sim.scenarios import EndStep, Scenario, ScenarioEnv, ToolStep, make_scenario
from monitor.demo.sim.session import FakeClock, SimSession, session_entry, short_id
from monitor.demo.sim.stores import IndexRow, LegacyStore, SqliteStore, Store

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
        self.provider, self.model, self.api = provider, model, api
        self.loop_warnings = loop_warnings
        self.trajectory_enabled = trajectory and era == "sqlite"
        self.hostname = hostname
        self.cwd = workspace or str(self.state_dir / "workspace")
        if era == "sqlite":
            self.store: Store = SqliteStore(self.state_dir, agent_id)
        elif era == "legacy":
            self.store = LegacyStore(self.state_dir, agent_id, split_writes=split_writes)
        else:
            raise ValueError(f"unknown era {era!r}")
        self.log = GatewayLogWriter(log_path, hostname=hostname) if log_path else None
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
                self._begin(session)
            if session.steps is None:
                session.steps = session.scenario.steps(session.env)
            item = next(session.steps, None)
            if isinstance(item, ToolStep):
                self._tool_turn(session, item)
                self._index(session)
                return True
            self._finish(session, item or EndStep("stop", "Done.", output_tokens=12))
            return False

    def _append(self, s: SimSession, event: dict[str, Any], ts: float) -> None:
        self.store.append(s.session_id, event, ts)
        s.events += 1
        if event.get("type") != "session":
            s.parent_id = event["id"]

    def _begin(self, s: SimSession) -> None:
        received = self.clock()
        s.created_at = received
        s.started = True
        s.request_trace = Trace.new(s.ids)
        s.run_trace = s.request_trace.child(s.ids)
        if self.log:
            self.log.chat_send(received, s.request_trace, s.run_id, short_id(s.ids),
                               short_id(s.ids))
        user_ts = self.clock()
        header_version = 4 if self.era == "sqlite" else 3
        self._append(s, tx.session_header(s.session_id, user_ts, self.cwd, header_version),
                     user_ts)
        self._append(s, tx.user_message(s.ids.uuid(), user_ts, s.scenario.prompt, s.run_id,
                                        received), user_ts)
        self._index(s)
        s.started_at = self.clock()
        if self.log:
            self.log.run_started(s.started_at, s.request_trace, s.run_trace, run_id=s.run_id,
                                 session_id=s.session_id, session_key=s.key,
                                 agent_id=self.agent_id, provider=self.provider,
                                 model=self.model)
        ts = self.clock()
        self._append(s, tx.thinking_level_change(s.ids.uuid(), s.parent_id, ts), ts)
        ts = self.clock()
        self._append(s, tx.model_snapshot(s.ids.uuid(), s.parent_id, ts, self.provider,
                                          self.api, self.model), ts)
        self._trajectory(s, "session.started", {
            "trigger": "user", "sessionFile": s.key, "workspaceDir": self.cwd,
            "agentId": self.agent_id, "messageProvider": "webchat", "localModelLean": False,
            "toolCount": 12, "clientToolCount": 0})
        self._trajectory(s, "prompt.submitted",
                         {"prompt": s.scenario.prompt, "messages": [], "imagesCount": 0})

    def _tool_turn(self, s: SimSession, step: ToolStep) -> None:
        requested = self.clock()
        if self.log:
            self.log.model_fetch(requested, s.run_trace, provider=self.provider, model=self.model,
                                 api=self.api, elapsed_ms=s.env.rng.randint(200, 900))
        input_tokens = step.input_tokens if step.input_tokens is not None else s.context
        call_id = s.ids.call_id()
        ts = self.clock()
        self._append(s, tx.assistant_message(
            s.ids.uuid(), s.parent_id, ts,
            content=[tx.tool_call_item(call_id, step.tool, step.arguments)],
            model_usage=tx.usage(input_tokens, step.output_tokens), stop_reason="toolUse",
            started_ts=requested, response_id=s.ids.response_id(), run_id=s.run_id,
            provider=self.provider, model=self.model, api=self.api), ts)
        self._count_usage(s, input_tokens, step.output_tokens)
        s.tool_calls += 1
        s.tools[step.tool] += 1
        if self.log:
            self.log.tool(ts, s.run_trace, "start", run_id=s.run_id, tool=step.tool,
                          call_id=call_id)
        self._trajectory(s, "tool.call",
                         {"toolCallId": call_id, "name": step.tool, "args": step.arguments})
        result_ts = self.clock()
        self._append(s, tx.tool_result(
            s.ids.uuid(), s.parent_id, result_ts, call_id=call_id, tool=step.tool,
            text=step.result_text, details=step.details, is_error=step.is_error,
            run_id=s.run_id), result_ts)
        s.tool_errors += int(step.is_error)
        result: dict[str, Any] = {"content": [{"type": "text", "text": step.result_text}]}
        if step.details is not None:
            result["details"] = step.details
        self._trajectory(s, "tool.result", {"toolCallId": call_id, "name": step.tool,
                                            "success": not step.is_error, "result": result})
        if self.log:
            self.log.tool(result_ts, s.run_trace, "end", run_id=s.run_id, tool=step.tool,
                          call_id=call_id)
        s.frozen.append({"key": f"tool:{call_id}:{tx.to_ms(result_ts)}",
                         "sourceHash": tx.source_hash([step.result_text])})
        ts = self.clock()
        self._append(s, tx.cache_ttl(s.ids.uuid(), s.parent_id, ts, s.frozen), ts)
        growth = step.context_growth
        if growth is None:
            growth = 45 + (len(tx.dumps(step.arguments)) + len(step.result_text)) // 3
        s.context = input_tokens + growth
        self._maybe_warn(s, step, ts)

    def _maybe_warn(self, s: SimSession, step: ToolStep, ts: float) -> None:
        """Emulate OpenClaw's repeat warnings (``loop_warnings``): at every 10th call of an
        unbroken run of identical calls. Alternating patterns get none (OpenClaw logs its
        ping-pong detector for those, which is not emulated); unknown tools get none."""
        signature = step.tool + tx.dumps(step.arguments)
        s.streak = s.streak + 1 if signature == s.streak_signature else 1
        s.streak_signature = signature
        unknown_tool = step.is_error and step.result_text == f"Tool {step.tool} not found"
        if self.log and self.loop_warnings and s.streak % 10 == 0 and not unknown_tool:
            self.log.loop_warning(ts, s.run_trace, tool=step.tool, count=s.streak,
                                  session_id=s.session_id, session_key=s.key,
                                  polling=step.arguments.get("action") == "poll")

    def _count_usage(self, s: SimSession, input_tokens: int, output_tokens: int) -> None:
        s.assistant_messages += 1
        s.input_tokens += input_tokens
        s.output_tokens += output_tokens
        s.total_tokens += input_tokens + output_tokens
        if input_tokens:
            s.last_input = input_tokens

    def _finish(self, s: SimSession, end: EndStep) -> None:
        started = self.clock()
        if end.kind == "stop":
            input_tokens, output_tokens = (s.context, end.output_tokens) if end.with_usage \
                else (0, 0)
            ts = self.clock()
            self._append(s, tx.assistant_message(
                s.ids.uuid(), s.parent_id, ts, content=[{"type": "text", "text": end.text}],
                model_usage=tx.usage(input_tokens, output_tokens), stop_reason="stop",
                started_ts=started, response_id=s.ids.response_id(), run_id=s.run_id,
                provider=self.provider, model=self.model, api=self.api), ts)
            self._count_usage(s, input_tokens, output_tokens)
            s.status = "done"
        elif end.kind == "error":
            self._append(s, tx.bootstrap_context(s.ids.uuid(), s.parent_id, started, s.run_id,
                                                 s.session_id), started)
            ts = self.clock()
            self._append(s, tx.assistant_error(
                s.ids.uuid(), s.parent_id, ts, error=end.text, started_ts=started,
                run_id=s.run_id, provider=self.provider, model=self.model, api=self.api), ts)
            self._count_usage(s, 0, 0)
            s.status, s.error = "failed", end.text
            if self.log:
                self.log.run_error(ts, s.run_trace, run_id=s.run_id, provider=self.provider,
                                   model=self.model, error=end.text)
        else:
            s.status = "timeout"
        self._close_run(s, aborted=False, timed_out=end.kind == "timeout",
                        stop_reason={"stop": "stop", "error": "error"}.get(end.kind, "timeout"))

    def _close_run(self, s: SimSession, *, aborted: bool, timed_out: bool,
                   stop_reason: str) -> None:
        s.ended = True
        s.ended_at = self.clock()
        duration = tx.to_ms(s.ended_at - (s.started_at or s.created_at))
        if self.log:
            if aborted or timed_out:
                self.log.run_cleanup(s.ended_at, s.request_trace, s.run_trace, run_id=s.run_id,
                                     session_id=s.session_id, session_key=s.key,
                                     duration_ms=duration, timed_out=timed_out)
            else:
                self.log.run_done(s.ended_at, s.request_trace, s.run_trace, run_id=s.run_id,
                                  session_id=s.session_id, session_key=s.key,
                                  duration_ms=duration)
        flags = {"aborted": aborted, "externalAbort": aborted, "timedOut": timed_out}
        self._trajectory(s, "model.completed", {**flags, "usage": {
            "input": s.input_tokens, "output": s.output_tokens, "cacheRead": 0, "cacheWrite": 0,
            "total": s.total_tokens, "cost": {"total": 0}}, "stopReason": stop_reason})
        status = {"done": "success", "failed": "error", "timeout": "timeout"}.get(s.status,
                                                                                "aborted")
        self._trajectory(s, "session.ended", {"status": status, **flags,
                                              "stopReason": stop_reason})
        self._index(s)

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
                self._begin(s)
            if self.log and aborted:
                request = Trace.new(s.ids)
                self.log.chat_abort(self.clock(), request, short_id(s.ids), short_id(s.ids))
            s.status, s.aborted = status, aborted
            self._close_run(s, aborted=aborted, timed_out=status == "timeout",
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

    def _index(self, s: SimSession) -> None:
        now = self.clock()
        self.store.index(IndexRow(
            key=s.key, session_id=s.session_id,
            entry=session_entry(s, now, self.provider, self.model), status=s.status,
            created=s.created_at, updated=now, started=s.started_at, ended=s.ended_at,
            provider=self.provider, model=self.model,
            previous_session_id=s.previous_session_id,
            reason="reset" if s.previous_session_id else None))

    def _trajectory(self, s: SimSession, kind: str, data: dict[str, Any]) -> None:
        if not self.trajectory_enabled:
            return
        ts = self.clock()
        s.trajectory_seq += 1
        event = {"traceSchema": "openclaw-trajectory", "schemaVersion": 1,
                 "traceId": s.session_id, "source": "runtime", "type": kind,
                 "ts": tx.iso_ms(ts), "seq": s.trajectory_seq, "sourceSeq": s.trajectory_seq,
                 "sessionId": s.session_id, "sessionKey": s.key, "runId": s.run_id,
                 "workspaceDir": self.cwd, "provider": self.provider, "modelId": self.model,
                 "modelApi": self.api, "data": data}
        self.store.trajectory(s.session_id, s.run_id, event, ts)

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

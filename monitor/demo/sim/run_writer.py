"""Writes what one session's run puts on disk, as an OpenClaw 2026.9.6 gateway would: its
start, each tool turn (assistant ``toolCall`` message, its ``toolResult``, the growing
``openclaw.cache-ttl`` entry) and its end, into the transcript store, the session index,
the trajectory (SQLite era) and the gateway log.

The ``Simulator`` decides which session takes the next turn and holds its lock while a
``RunWriter`` writes it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from monitor.demo.sim import transcript as tx
from monitor.demo.sim.log_writer import GatewayLogWriter, Trace
from monitor.demo.sim.scenarios import EndStep, ToolStep
from monitor.demo.sim.session import SimSession, session_entry, short_id
from monitor.demo.sim.stores import IndexRow, Store


class RunWriter:
    """Writes sessions' runs into ``store`` and, when there is one, the gateway ``log``."""

    def __init__(self, store: Store, log: GatewayLogWriter | None, clock: Callable[[], float],
                 *, era: str, agent_id: str, provider: str, model: str, api: str, cwd: str,
                 loop_warnings: bool, trajectory: bool) -> None:
        self.store = store
        self.log = log
        self.clock = clock
        self.era = era
        self.agent_id = agent_id
        self.provider, self.model, self.api = provider, model, api
        self.cwd = cwd
        self.loop_warnings = loop_warnings
        self.trajectory_enabled = trajectory

    def _append(self, s: SimSession, event: dict[str, Any], ts: float) -> None:
        self.store.append(s.session_id, event, ts)
        s.events += 1
        if event.get("type") != "session":
            s.parent_id = event["id"]

    def begin(self, s: SimSession) -> None:
        """The run starts: the user's message, the model chosen, the index entry."""
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
        self.index(s)
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

    def tool_turn(self, s: SimSession, step: ToolStep) -> None:
        """One model turn that calls a tool, and the tool's result."""
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

    def finish(self, s: SimSession, end: EndStep) -> None:
        """The run ends as its scenario says: a last answer, an error or a timeout."""
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
        self.close_run(s, aborted=False, timed_out=end.kind == "timeout",
                       stop_reason={"stop": "stop", "error": "error"}.get(end.kind, "timeout"))

    def close_run(self, s: SimSession, *, aborted: bool, timed_out: bool,
                  stop_reason: str) -> None:
        """The run is over (finished or aborted): its last log lines and index entry."""
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
        self.index(s)

    def index(self, s: SimSession) -> None:
        """Write the session's entry of the session index as it stands."""
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

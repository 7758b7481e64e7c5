"""Per-session state of the simulator, the session-index entry it implies, and a fake clock."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from monitor.demo.sim import transcript as tx
from monitor.demo.sim.log_writer import Trace
from monitor.demo.sim.scenarios import Scenario, ScenarioEnv, Step


def short_id(ids: tx.IdSource) -> str:
    """A connection/request id as the gateway abbreviates it in ``⇄ res`` lines."""
    return f"{ids.hex(8)}…{ids.hex(4)}"


class FakeClock:
    """A deterministic clock: every call returns a time ``tick`` seconds after the last."""

    def __init__(self, start: float = 1_795_960_000.0, tick: float = 0.05) -> None:
        self.now = start
        self.tick = tick

    def __call__(self) -> float:
        current = self.now
        self.now += self.tick
        return current


@dataclass(eq=False)
class SimSession:
    """One transcript generation (``session_id``) of a session key, with its counters."""

    key: str
    session_id: str
    run_id: str
    agent_id: str
    scenario: Scenario
    previous_session_id: str | None = None
    status: str = "running"
    started: bool = False
    ended: bool = False
    aborted: bool = False
    tool_calls: int = 0
    tools: Counter[str] = field(default_factory=Counter)
    tool_errors: int = 0
    assistant_messages: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    events: int = 0
    # writing state
    ids: tx.IdSource = field(repr=False, default=None)  # type: ignore[assignment]
    env: ScenarioEnv = field(repr=False, default=None)  # type: ignore[assignment]
    steps: Iterator[Step] | None = field(repr=False, default=None)
    context: int = 0
    last_input: int = 0
    parent_id: str | None = None
    frozen: list[dict[str, str]] = field(repr=False, default_factory=list)
    streak_signature: str = ""
    streak: int = 0
    request_trace: Trace | None = None
    run_trace: Trace | None = None
    created_at: float = 0.0
    started_at: float | None = None
    ended_at: float | None = None
    error: str | None = None
    trajectory_seq: int = 0

    @property
    def live(self) -> bool:
        return not self.ended

    def summary(self) -> dict[str, Any]:
        return {
            "key": self.key, "session_id": self.session_id, "agent_id": self.agent_id,
            "run_id": self.run_id, "scenario": self.scenario.name, "status": self.status,
            "aborted": self.aborted, "ended": self.ended,
            "previous_session_id": self.previous_session_id,
            "tool_calls": self.tool_calls, "tools": dict(sorted(self.tools.items())),
            "tool_errors": self.tool_errors, "assistant_messages": self.assistant_messages,
            "events": self.events,
            "tokens": {"input": self.input_tokens, "output": self.output_tokens,
                       "total": self.total_tokens},
        }


def session_entry(s: SimSession, now: float, provider: str, model: str) -> dict[str, Any]:
    """The SessionEntry (``entry_json`` / ``sessions.json`` value), key order as the gateway's.

    ``totalTokens`` is the last prompt size (as the real entry has it); ``inputTokens`` and
    ``outputTokens`` are the run's sums.
    """
    entry: dict[str, Any] = {
        "createdVia": "operator", "createdAt": tx.to_ms(s.created_at),
        "sessionId": s.session_id, "updatedAt": tx.to_ms(now),
        "sessionStartedAt": tx.to_ms(s.created_at),
        "lastInteractionAt": tx.to_ms(s.created_at), "systemSent": True,
        "abortedLastRun": s.aborted, "chatType": "direct", "delivery": {"kind": "internal"},
        "compactionCount": 0, "totalTokens": s.last_input, "totalTokensFresh": True,
        "totalTokensVersion": 1, "activeWriterRunId": s.run_id, "status": s.status,
    }
    if s.started_at is not None:
        entry["startedAt"] = tx.to_ms(s.started_at)
    if s.error:
        entry["lastRunError"] = f"⚠️ Agent run failed (model: {provider}/{model})."
    if s.ended_at is not None:
        entry["endedAt"] = tx.to_ms(s.ended_at)
        entry["runtimeMs"] = tx.to_ms(s.ended_at - (s.started_at or s.created_at))
    entry.update({
        "lastRunId": s.run_id, "modelProvider": provider, "model": model,
        "agentHarnessId": "openclaw", "contextTokens": 128000,
        "inputTokens": s.input_tokens, "outputTokens": s.output_tokens,
        "cacheRead": 0, "cacheWrite": 0, "estimatedCostUsd": 0,
    })
    return entry

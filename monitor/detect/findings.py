"""What a detector reports."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Literal

Level = Literal["warning", "critical"]
LEVEL_RANK = {"warning": 1, "critical": 2}
# Detectors that report a loop (the board calls such a session "looping"; the policy's
# on_loop_critical applies), and those that report a budget spent (on_budget_critical).
LOOP_DETECTORS = frozenset({
    "generic_repeat", "known_poll_no_progress", "ping_pong", "unknown_tool_repeat",
    "global_circuit_breaker", "argument_churn", "session_no_progress",
    "post_compaction_repeat", "gateway_loop_notice"})
BUDGET_DETECTORS = frozenset({"token_budget", "burn_rate", "iteration_budget", "context_bloat"})
_SHARED_FIELDS = ("session_key", "session_id", "tool", "pattern")


@dataclass(frozen=True, slots=True)
class Finding:
    """A detector reaching a level for one pattern of one session.

    ``at_call`` is the 1-based index, within the session, of the tool call on
    which the finding fired (0 when it did not fire on a tool call, e.g. a
    budget crossed by an assistant message). ``pattern`` identifies what
    repeats (tool + argument hash, a pair, ...) so each level is reported once
    per pattern.

    A session keeps its recent findings for hours, and the key, session id, tool and
    pattern repeat from one finding to the next while each arrives as a fresh string
    (read from a new log line or index row, or formatted anew): they are interned so
    the kept findings share one copy of each.
    """

    session_key: str
    session_id: str
    detector: str
    level: Level
    count: int
    tool: str | None
    at_call: int
    message: str
    pattern: str = ""
    ts: float | None = None

    def __post_init__(self) -> None:
        for name in _SHARED_FIELDS:
            value = getattr(self, name)
            if type(value) is str:
                object.__setattr__(self, name, sys.intern(value))

    def as_json(self) -> dict:
        return {
            "detector": self.detector,
            "level": self.level,
            "count": self.count,
            "tool": self.tool,
            "at_call": self.at_call,
            "message": self.message,
        }

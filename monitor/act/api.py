"""The contract between the dashboard / policy and whatever performs actions.

The dashboard's ``s`` and ``K`` keys, ``clawwatch stop`` and the automatic
policy all call an ``ActionController``. ``DryRunController`` is the stand-in
used until a gateway is configured: it performs nothing and says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol

ActionKind = Literal["abort", "stop-text", "cli", "kill"]


@dataclass(frozen=True, slots=True)
class ProcessInfo:
    """A process the monitor could kill, with what proves it belongs to the session."""

    pid: int
    create_time: float
    command: str
    session_key: str | None
    evidence: str


@dataclass(frozen=True, slots=True)
class ActionResult:
    session_key: str
    action: ActionKind
    ok: bool
    detail: str
    trigger: str | None = None
    pids: tuple[int, ...] = field(default_factory=tuple)

    def as_record(self) -> dict:
        return {"type": "action", "key": self.session_key, "action": self.action,
                "trigger": self.trigger, "ok": self.ok, "detail": self.detail,
                "pids": list(self.pids)}


class ActionController(Protocol):
    def stop(self, session_key: str, *, method: ActionKind = "abort",
             trigger: str | None = None) -> ActionResult: ...

    def kill_candidates(self, session_key: str) -> list[ProcessInfo]: ...

    def kill(self, session_key: str, *, trigger: str | None = None) -> ActionResult: ...


class DryRunController:
    """Performs nothing; every call reports what would have been done."""

    def stop(self, session_key: str, *, method: ActionKind = "abort",
             trigger: str | None = None) -> ActionResult:
        return ActionResult(session_key, method, False, "dry run: no gateway action taken",
                            trigger)

    def kill_candidates(self, session_key: str) -> list[ProcessInfo]:
        return []

    def kill(self, session_key: str, *, trigger: str | None = None) -> ActionResult:
        return ActionResult(session_key, "kill", False, "dry run: no process killed", trigger)

    def close(self) -> None:
        pass

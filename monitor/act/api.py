"""The contract between the dashboard / policy and whatever performs actions.

The dashboard's ``s`` and ``K`` keys, ``clawwatch stop`` and the automatic
policy all call an ``ActionController``. ``DryRunController`` is the stand-in
used until a gateway is configured: it performs nothing and says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol

from monitor.records import ActionRecord
from monitor.redaction import bounded

ActionKind = Literal["abort", "stop-text", "cli", "kill"]


@dataclass(frozen=True, slots=True)
class ProcessInfo:
    """A process the monitor could kill, with what proves it belongs to the session.

    ``ambiguous``: the evidence about it names this session and another one (or says
    different things), so it is NOT killed; ``session_key`` is then None and ``reasons``
    holds each piece of evidence (``evidence`` the same, joined)."""

    pid: int
    create_time: float
    command: str
    session_key: str | None
    evidence: str
    ambiguous: bool = False
    reasons: tuple[str, ...] = ()
    more_reasons: int = 0       # pieces of evidence beyond ``reasons``, counted only

    @property
    def listed_reasons(self) -> list[str]:
        """The reasons (the evidence, without any), then how many more there are."""
        return [*(self.reasons or (self.evidence,)),
                *([more_evidence(self.more_reasons)] if self.more_reasons else [])]

    def as_record(self) -> dict:
        """The JSON/audit form; the command (a process's argv: up to megabytes) is kept
        whole up to 1,000 characters, else redacted and cut there."""
        return {"pid": self.pid, "create_time": self.create_time,
                "command": bounded(self.command),
                "session_key": self.session_key, "ambiguous": self.ambiguous,
                "reasons": self.listed_reasons}


def more_evidence(count: int) -> str:
    """The line that counts the pieces of evidence a list of reasons leaves out."""
    return f"and {count} more pieces of evidence"


@dataclass(frozen=True, slots=True)
class ActionResult:
    session_key: str
    action: ActionKind
    ok: bool
    detail: str
    trigger: str | None = None
    pids: tuple[int, ...] = field(default_factory=tuple)
    ambiguous: tuple[ProcessInfo, ...] = field(default_factory=tuple)  # left alone

    def as_record(self) -> dict:
        record = {"type": "action", "key": self.session_key, "action": self.action,
                  "trigger": self.trigger, "ok": self.ok, "detail": self.detail,
                  "pids": list(self.pids)}
        if self.ambiguous:
            record["ambiguous"] = [info.as_record() for info in self.ambiguous]
        return record

    def to_record(self, ts: str | None) -> ActionRecord:
        """The output record of an action taken by hand (no finding triggered it)."""
        return ActionRecord(ts=ts, key=self.session_key, action=self.action,
                            trigger=self.trigger, ok=self.ok, detail=self.detail,
                            pids=list(self.pids), session_id=None, level=None,
                            ambiguous=[info.as_record() for info in self.ambiguous] or None)


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

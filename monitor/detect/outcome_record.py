"""What OpenClaw's ``recordToolCallOutcome`` stores on a history record (``Outcome``), the
outcome kinds the loop detectors look for, and ``made_now``, the way an outcome's hashes are
made when nothing defers them (``outcome_keys.LazyDigest`` makes them when compared).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

VETO_KIND = "tool-loop-veto"
TERMINAL_EXEC_FAILURE = "terminal-exec-failure"


@dataclass(slots=True)
class Outcome:
    """What ``recordToolCallOutcome`` stores on a history record (each hash a string, or
    what ``outcome_of``'s ``defer`` gave for it)."""

    result_hash: Any = None
    kind: str | None = None
    failure_identity: Any = None
    no_progress: bool = False
    unknown_tool_name: str | None = None


def made_now(make: Callable[..., str], *args: Any) -> str:
    """``outcome_of``'s ``defer`` when nothing is deferred: the digest, made now."""
    return make(*args)

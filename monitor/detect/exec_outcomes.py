"""The outcome of an ``exec`` result as ``hashToolOutcome`` makes it: a hash of its status and
what it printed, and for a terminal failure (a nonzero exit that did not time out and printed
something) an identity digest of its output with the volatile values masked
(``exec_failure_masks``), which the loop detectors compare across calls.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from monitor.detect.exec_failure_masks import mask_exec_output
from monitor.detect.jsstable import UNDEFINED, js_float, js_number, js_trim
from monitor.detect.outcome_digests import digest_outcome, digest_outcome_afresh
from monitor.detect.outcome_record import TERMINAL_EXEC_FAILURE, Outcome, made_now
from monitor.detect.remembered_digests import remembered_digest


def _string_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _nullable_string(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    trimmed = js_trim(value)
    return trimmed or None


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _exec_hash(details: dict, text: str, defer: Callable = made_now) -> Any:
    status = _string_or_none(details.get("status"))
    if not status:
        return None
    if status == "running":
        tail = _string_or_none(details.get("tail")) or ""
        return defer(digest_outcome, {"status": status, "tail": tail})
    if status in ("completed", "failed"):
        exit_code = details.get("exitCode")
        return defer(digest_outcome, {
            "status": status,
            "exitCode": exit_code if _is_number(exit_code) else None,
            "timedOut": details.get("timedOut") is True,
            "output": _nullable_string(details.get("aggregated")) or text,
        })
    if status in ("approval-pending", "approval-unavailable"):
        return defer(digest_outcome, {
            "status": status,
            "reason": _string_or_none(details.get("reason")),
            "host": _string_or_none(details.get("host")),
            "command": _string_or_none(details.get("command")) or "",
            "warningText": _string_or_none(details.get("warningText")) or "",
        })
    return None


def exec_failure_identity(details: dict, exit_code: Any, output: str) -> str:
    """The digest that identifies a terminal exec failure, its output masked; remembered
    for a short output (``remembered_digest``)."""
    failure = {
        "status": details.get("status", UNDEFINED),
        "exitCode": exit_code,
        "timedOut": details.get("timedOut") is True,
        "output": output,
    }
    return remembered_digest("exec failure", failure, _masked_failure_digest)


def _masked_failure_digest(failure: dict) -> str:
    return digest_outcome_afresh({**failure, "output": mask_exec_output(failure["output"])})


def exec_outcome(details: dict, text: str, defer: Callable = made_now) -> Outcome | None:
    """The outcome of an ``exec`` result (``text``: its text, trimmed), or None when its
    details have no status ``hashToolOutcome`` knows (it is then hashed as any other tool's)."""
    exec_hash = _exec_hash(details, text, defer)
    if not exec_hash:
        return None
    exit_code = details.get("exitCode")
    output = _nullable_string(details.get("aggregated")) or text
    if (details.get("status") in ("completed", "failed") and _is_number(exit_code)
            and math.isfinite(js_float(exit_code)) and exit_code != 0
            and details.get("timedOut") is not True and output != ""
            and output != f"(Command exited with code {js_number(exit_code)})"):
        return Outcome(exec_hash, TERMINAL_EXEC_FAILURE,
                       defer(exec_failure_identity, details, exit_code, output))
    return Outcome(exec_hash)

"""OpenClaw 2026.9.6's outcome hashing, rebuilt from transcript records.

``outcome_of`` reproduces ``hashToolOutcome`` of ``dist/tool-loop-detection-*.mjs``
(``hashToolCall`` is ``tool_call_hashing.hash_tool_call``). OpenClaw hashes the result
object the tool returned; the transcript stores that object with, at most, a ``[System
note: Tool-loop warning …]`` text part appended by the loop guard, which is removed here
before hashing. Thrown errors reach the transcript as ``isError`` results whose text is the
error message. The results OpenClaw hashes in ways of their own are in modules of their
own (``exec_outcomes``, ``send_results``); each hash is an ``outcome_digests`` digest.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from monitor.detect.exec_outcomes import exec_outcome
from monitor.detect.jsstable import JS_SPACE, UNDEFINED, js_trim
from monitor.detect.outcome_digests import digest_outcome
from monitor.detect.outcome_record import VETO_KIND, Outcome, made_now
from monitor.detect.send_results import is_volatile_send, strip_volatile_send_ids

_LOOP_NOTE = re.compile(
    r"\n?\[System note: Tool-loop warning after \d+ repeated calls\. Change your approach or"
    r" stop if you are not making progress\.\]\Z"
)
_LOOP_NOTE_END = " repeated calls. Change your approach or stop if you are not making progress.]"
# OpenClaw's ``/i`` regexes (no ``u``): case folds between ASCII letters only (``ſ`` is no
# ``s``, the Kelvin sign no ``k``, ``İ`` no ``i``), and ``\s`` is JavaScript's.
_UNKNOWN_TOOL = (
    re.compile(rf"""unknown tool(?::|{JS_SPACE})+["']?([a-z0-9_.-]+)["']?""",
               re.ASCII | re.IGNORECASE),
    re.compile(rf"""tool{JS_SPACE}+["']?([a-z0-9_.-]+)["']?{JS_SPACE}+"""
               r"(?:not found|is not available)", re.ASCII | re.IGNORECASE),
)


def strip_loop_note(text: str) -> str:
    """Remove the warning text part OpenClaw appends after hashing the real result. Only a
    text that ends as the note ends can hold it: the rest are not searched."""
    return _LOOP_NOTE.sub("", text) if text.endswith(_LOOP_NOTE_END) else text


def unknown_tool_name(message: str) -> str | None:
    """The tool an "unknown tool" error ``message`` names (lowercased), else None."""
    raw = js_trim(message)
    if not raw:
        return None
    for pattern in _UNKNOWN_TOOL:
        match = pattern.search(raw)
        if match:
            return js_trim(match.group(1)).lower() or None
    return None


# The params ``outcome_of`` reads (``process``'s ``action``; ``is_volatile_send``'s
# ``action`` and ``to``).
OUTCOME_PARAM_KEYS = ("action", "to")


def outcome_params(params: Any) -> dict[str, Any] | None:
    """The part of a call's params that ``outcome_of`` reads, for ``outcome_of`` to be
    given instead of the whole params with the same result.

    A call waiting for its result keeps only this: its arguments can be large (a
    ``write`` carries the file) and a result may never come (an aborted run).
    """
    if not isinstance(params, dict):
        return None
    return {key: params[key] for key in OUTCOME_PARAM_KEYS if key in params}


def _error_hash(message: str) -> str:
    return f"error:{digest_outcome(message)}"


def error_outcome(message: str, defer: Callable = made_now) -> Outcome:
    return Outcome(defer(_error_hash, message), no_progress=True,
                   unknown_tool_name=unknown_tool_name(message))


def outcome_of(tool: str, params: Any, *, is_error: bool, details: Any, text: str,
               is_veto: bool, defer: Callable = made_now) -> Outcome:
    """``hashToolOutcome`` for one transcript tool result (``text`` = joined text parts).

    Each hash is ``defer(make, *args)``: made now by default, or a value that makes it when
    compared (``outcome_keys.LazyDigest``)."""
    if is_veto:
        return Outcome(kind=VETO_KIND)
    text = strip_loop_note(text)
    if is_error and not (isinstance(details, dict) and details):
        return error_outcome(text, defer)
    details = details if isinstance(details, dict) else {}
    text = js_trim(text)
    if tool == "exec":
        outcome = exec_outcome(details, text, defer)
        if outcome is not None:
            return outcome
    if tool == "write" and details.get("changed") is False:
        return Outcome(defer(digest_outcome, {"status": "unchanged"}), no_progress=True)
    if tool == "process" and isinstance(params, dict):
        action = params.get("action")
        if action == "poll":
            return Outcome(defer(digest_outcome, {
                "action": action,
                "status": details.get("status", UNDEFINED),
                "exitCode": details.get("exitCode"),
                "exitSignal": details.get("exitSignal"),
                "aggregated": details.get("aggregated"),
                "text": text,
            }))
        if action == "log":
            return Outcome(defer(digest_outcome, {
                "action": action,
                "status": details.get("status", UNDEFINED),
                "totalLines": details.get("totalLines"),
                "totalChars": details.get("totalChars"),
                "truncated": details.get("truncated"),
                "exitCode": details.get("exitCode"),
                "exitSignal": details.get("exitSignal"),
                "text": text,
            }))
    if is_volatile_send(tool, params):
        return Outcome(defer(digest_outcome, strip_volatile_send_ids(details)))
    return Outcome(defer(digest_outcome, {"details": details, "text": text}))

"""Recognise OpenClaw's own loop-detection lines in the gateway log.

OpenClaw 2026.9.6 writes, per detection, a plain line from its ``agents/loop-detection``
subsystem (``Loop warning: …``, ``Critical … loop detected``, ``Global circuit breaker
triggered: …``), and when it acts, from ``agents/tools``: ``Loop warning for T: WARNING: …`` /
``Blocking T due to critical loop: CRITICAL: …``, plus from ``diagnostic`` a
``tool loop: sessionId=… sessionKey=… tool=… level=… action=… detector=… count=N
message="…"`` line (``logToolLoopAction``).

A line counts only when its subsystem is the one OpenClaw writes that shape from and the
message starts with the shape (``openclaw_loop_line``): the same words anywhere else (an exec
failure quoting them, a console line, another subsystem) are text a tool or a user can put
in the log, and raise nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class LoopLine:
    """One detection OpenClaw logged: what it found, and (``diagnostic`` lines only) the
    session it named and its own message text."""

    detector: str
    level: str
    count: int
    tool: str | None
    session_id: str | None = None
    session_key: str | None = None
    text: str = ""


_DIRECT: tuple[tuple[re.Pattern, str, str], ...] = (
    (re.compile(r"^Loop warning: (?P<tool>\S+) called (?P<count>\d+) times with identical"),
     "generic_repeat", "warning"),
    (re.compile(r"^Ping-pong loop warning: alternating calls count=(?P<count>\d+)"
                r"(?: currentTool=(?P<tool>\S+))?"), "ping_pong", "warning"),
    (re.compile(r"^Polling loop warning: (?P<tool>\S+) repeated (?P<count>\d+) times"),
     "known_poll_no_progress", "warning"),
    (re.compile(r"^Argument churn warning: (?P<tool>\S+) cycled"), "argument_churn", "warning"),
    (re.compile(r"^Critical generic loop detected: (?P<tool>\S+) repeated (?P<count>\d+) times"),
     "generic_repeat", "critical"),
    (re.compile(r"^Critical ping-pong loop detected: alternating calls count=(?P<count>\d+)"
                r"(?: currentTool=(?P<tool>\S+))?"), "ping_pong", "critical"),
    (re.compile(r"^Critical polling loop detected: (?P<tool>\S+) repeated (?P<count>\d+) times"),
     "known_poll_no_progress", "critical"),
    (re.compile(r"^Global circuit breaker triggered: (?P<tool>\S+) repeated (?P<count>\d+)"),
     "global_circuit_breaker", "critical"),
    (re.compile(r"^Critical (?P<kind>[\w-]+) loop detected"), "", "critical"),
)
_DIAGNOSTIC = re.compile(
    r"^tool loop: sessionId=(?P<sid>\S+) sessionKey=(?P<key>\S+) tool=(?P<tool>\S+) "
    r"level=(?P<level>warning|critical) (?:action=\S+ )?detector=(?P<detector>\S+) "
    r"count=(?P<count>\d+)(?: pairedTool=\S+)?(?: message=\"(?P<text>.*)\")?\s*$", re.DOTALL)
_ACTED = re.compile(r"^(?:Loop warning for (?P<wtool>\S+?)|Blocking (?P<btool>\S+) due to "
                    r"critical loop): (?P<text>.*)", re.DOTALL)
_MESSAGE_KINDS = (
    ("unavailable tool", "unknown_tool_repeat"),
    ("global circuit breaker", "global_circuit_breaker"),
    ("polling loop", "known_poll_no_progress"),
    ("Stop polling", "known_poll_no_progress"),
    ("ping-pong", "ping_pong"),
    ("alternating between", "ping_pong"),
    ("cycled through", "argument_churn"),
    ("identical", "generic_repeat"),
)
_COUNT_IN_TEXT = re.compile(r"\((\d+) consecutive calls\)|(\d+) times")


_MAX_COUNT = 10**15


def _count(digits: str) -> int:
    """A count from a log line's digits, at most ``_MAX_COUNT``: ``int()`` of a forged
    5,000-digit count would raise (Python's integer-string limit)."""
    digits = digits.lstrip("0") or "0"
    return int(digits) if len(digits) <= 15 else _MAX_COUNT


def _detector_of_message(text: str) -> str:
    for needle, detector in _MESSAGE_KINDS:
        if needle in text:
            return detector
    return "unknown"


def _count_of_message(text: str) -> int:
    match = _COUNT_IN_TEXT.search(text)
    if not match:
        return 0
    return _count(match.group(1) or match.group(2))


def _unknown(value: str | None) -> str | None:
    return None if value in (None, "", "unknown") else value


def _diagnostic(message: str) -> LoopLine | None:
    match = _DIAGNOSTIC.match(message)
    if not match:
        return None
    return LoopLine(match["detector"], match["level"], _count(match["count"]), match["tool"],
                    _unknown(match["sid"]), _unknown(match["key"]), match["text"] or "")


def _acted(message: str) -> LoopLine | None:
    acted = _ACTED.match(message)
    if not acted:
        return None
    text = acted["text"]
    level = "critical" if acted["btool"] else "warning"
    return LoopLine(_detector_of_message(text), level, _count_of_message(text),
                    acted["btool"] or acted["wtool"], text=text)


def _direct(message: str) -> LoopLine | None:
    for pattern, detector, level in _DIRECT:
        match = pattern.match(message)
        if match:
            groups = match.groupdict()
            kind = groups.get("kind")
            return LoopLine(detector or f"{kind}_loop", level,
                            _count(groups.get("count") or "0"), groups.get("tool"), text=message)
    return None


# The subsystem OpenClaw writes each shape from (``createSubsystemLogger`` names in
# dist/diagnostic-*.mjs, agent-tools.before-tool-call-*.mjs, tool-loop-detection-*.mjs).
LOOP_SHAPES_BY_SUBSYSTEM = {
    "diagnostic": _diagnostic,
    "agents/tools": _acted,
    "agents/loop-detection": _direct,
}


def openclaw_loop_line(subsystem: str | None, message: str) -> LoopLine | None:
    """The detection a gateway-log record reports, or None: only OpenClaw's own loop lines
    count, i.e. ``subsystem`` is the one OpenClaw logs that shape from and ``message``
    starts with it. The file log's JSON records and the console's ``[subsystem] message``
    lines give the same pair."""
    shape = LOOP_SHAPES_BY_SUBSYSTEM.get(subsystem or "")
    return shape(message.rstrip()) if shape is not None else None


def parse_loop_line(message: str) -> LoopLine | None:
    """The detection a message has the shape of (any of OpenClaw's loop lines, anchored at
    its start), whatever its subsystem; ``openclaw_loop_line`` also checks the subsystem."""
    message = message.rstrip()
    return _diagnostic(message) or _acted(message) or _direct(message)


def loop_finding_message(line: LoopLine, session: str) -> str:
    """A ``gateway_loop_notice`` finding's message: OpenClaw's parsed fields, then its own
    text (secrets masked, clipped), never the raw log line."""
    from monitor.redaction import bounded, clip_redacted

    head = (f"OpenClaw {line.detector} {line.level}: tool={bounded(line.tool) or '-'} "
            f"count={line.count} session={bounded(session) or '-'}")
    text = clip_redacted(line.text, 200) if line.text else ""
    return f"{head}: {text}" if text else head

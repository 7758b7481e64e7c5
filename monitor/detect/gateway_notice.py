"""Recognise OpenClaw's own loop-detection lines in the gateway log.

OpenClaw 2026.9.6 writes, per detection, a plain line from
``agents/loop-detection`` (``Loop warning: …``, ``Critical … loop detected``,
``Global circuit breaker triggered: …``), and when it acts, ``Loop warning for
T: WARNING: …`` / ``Blocking T due to critical loop: CRITICAL: …`` plus a
``tool loop: … level=… detector=… count=N`` diagnostic line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class LoopLine:
    detector: str
    level: str
    count: int
    tool: str | None


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
    r"tool loop: .*?\btool=(?P<tool>\S+) level=(?P<level>warning|critical)\b.*?"
    r"\bdetector=(?P<detector>\S+) count=(?P<count>\d+)")
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


def _detector_of_message(text: str) -> str:
    for needle, detector in _MESSAGE_KINDS:
        if needle in text:
            return detector
    return "unknown"


def _count_of_message(text: str) -> int:
    match = _COUNT_IN_TEXT.search(text)
    if not match:
        return 0
    return int(match.group(1) or match.group(2))


def parse_loop_line(message: str) -> LoopLine | None:
    """The detection an OpenClaw loop line reports, or None for any other line."""
    message = message.strip()
    diagnostic = _DIAGNOSTIC.search(message)
    if diagnostic:
        return LoopLine(diagnostic["detector"], diagnostic["level"], int(diagnostic["count"]),
                        diagnostic["tool"])
    acted = _ACTED.match(message)
    if acted:
        text = acted["text"]
        level = "critical" if acted["btool"] else "warning"
        return LoopLine(_detector_of_message(text), level, _count_of_message(text),
                        acted["btool"] or acted["wtool"])
    for pattern, detector, level in _DIRECT:
        match = pattern.match(message)
        if match:
            groups = match.groupdict()
            kind = groups.get("kind")
            return LoopLine(detector or f"{kind}_loop", level,
                            int(groups.get("count") or 0), groups.get("tool"))
    return None

"""What OpenClaw's own loop guard did in one session, from its gateway log and its transcript.

Independent of ``monitor``: the e2e detector tests compare clawwatch's findings with this.

Evidence used (OpenClaw 2026.9.6, ``shared/reference/openclaw-formats.md`` §2.3 and §4.6):

- ``tool loop: sessionId=… sessionKey=… tool=… level=… action=… detector=… count=…`` (subsystem
  ``diagnostic``), logged once per warning bucket and at every critical: the decisions.
- the human-readable lines of the same run, joined to the session through the ``traceId`` of its
  ``embedded run start: runId=… sessionId=…`` line: ``Loop warning for T: …`` / ``Blocking T due
  to critical loop: …`` with the same message, and the detector's own line with the same count
  (``Loop warning: T called N times…``, ``Polling loop warning…``, ``Ping-pong loop warning…``,
  ``Critical … loop detected…``, ``Global circuit breaker triggered…``).
- the transcript: a critical vetoes the call it fired on (``details.intervention`` carries the
  detector and count); a warning adds ``[System note: Tool-loop warning after N …]`` to the result
  of the call it fired on. That call's 1-based index is the finding's ``at_call``.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import truth

LOOP_SUBSYSTEMS = {"agents/loop-detection", "agents/tools", "diagnostic"}
TOOL_LOOP_RE = re.compile(
    r"^tool loop: sessionId=(?P<session_id>\S+) sessionKey=(?P<key>\S+) tool=(?P<tool>\S+) "
    r"level=(?P<level>\w+) action=(?P<action>\w+) detector=(?P<detector>\S+) "
    r"count=(?P<count>\d+)(?: pairedTool=\S+)?(?: message=\"(?P<message>.*)\")?\s*$", re.S)
RUN_START_RE = re.compile(r"^embedded run start: runId=(\S+) sessionId=(\S+)")
CRITICAL_LINE_RE = re.compile(r"^(Critical .*loop detected|Blocking \S+ due to critical loop"
                              r"|Global circuit breaker triggered)")
# The detector's own line for (detector, level); {tool} and {count} are filled in.
DETECTOR_LINES = {
    ("generic_repeat", "warning"): "Loop warning: {tool} called {count} times with identical "
                                   "arguments",
    ("generic_repeat", "critical"): "Critical generic loop detected: {tool} repeated {count} times",
    ("known_poll_no_progress", "warning"): "Polling loop warning: {tool} repeated {count} times",
    ("known_poll_no_progress", "critical"): "Critical polling loop detected: {tool} repeated "
                                            "{count} times",
    ("ping_pong", "warning"): "Ping-pong loop warning: alternating calls count={count} "
                              "currentTool={tool}",
    ("ping_pong", "critical"): "Critical ping-pong loop detected: alternating calls "
                               "count={count} currentTool={tool}",
    ("global_circuit_breaker", "critical"): "Global circuit breaker triggered: {tool} repeated "
                                            "{count} times with no progress",
}
GUARD_LINES = {"warning": "Loop warning for {tool}: {message}",
               "critical": "Blocking {tool} due to critical loop: {message}"}


@dataclass(frozen=True)
class LogLine:
    trace_id: str
    level: str
    subsystem: str
    message: str


@dataclass(frozen=True)
class LoopAction:
    """One ``tool loop:`` diagnostic line: a warning or a block OpenClaw decided on."""

    session_id: str
    key: str
    tool: str
    level: str
    detector: str
    count: int
    message: str
    trace_id: str


@dataclass(frozen=True)
class Expected:
    """A finding OpenClaw's guard made, placed on the call it acted on."""

    detector: str
    level: str
    count: int
    at_call: int
    tool: str | None = None

    def row(self) -> tuple[str, str, int, int]:
        return (self.detector, self.level, self.count, self.at_call)


@dataclass
class SessionEvidence:
    """OpenClaw's loop evidence for one session (one transcript generation)."""

    key: str
    session_id: str
    actions: list[LoopAction]
    lines: list[LogLine]
    calls: list[truth.CallEvidence]
    expected: list[Expected] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def critical_lines(self) -> list[str]:
        """Every critical loop line OpenClaw logged for this session (empty when none)."""
        found = [f"tool loop … level=critical detector={a.detector} count={a.count}"
                 for a in self.actions if a.level == "critical"]
        return found + [line.message[:160] for line in self.lines
                        if CRITICAL_LINE_RE.match(line.message)]

    def vetoed_calls(self) -> list[int]:
        return [call.index for call in self.calls if call.veto is not None]

    def warned_calls(self) -> list[int]:
        return [call.index for call in self.calls if call.warning_after is not None]


def _subsystem(record: dict) -> str:
    for raw in (record.get("0"), (record.get("_meta") or {}).get("name")):
        if isinstance(raw, str) and raw.startswith("{"):
            try:
                return str(json.loads(raw).get("subsystem") or "")
            except (ValueError, AttributeError):
                continue
    return ""


def read_log(path: str | Path) -> list[LogLine]:
    """The gateway log's JSON lines (others skipped), in file order."""
    lines = []
    with open(path, encoding="utf-8", errors="replace") as fh:
        for text in fh:
            try:
                record = json.loads(text)
            except ValueError:
                continue
            message = record.get("message") if isinstance(record, dict) else None
            if not isinstance(message, str):
                continue
            level = str((record.get("_meta") or {}).get("logLevelName") or record.get("level")
                        or "")
            lines.append(LogLine(str(record.get("traceId") or ""), level, _subsystem(record),
                                 message))
    return lines


def loop_actions(lines: list[LogLine], key: str) -> list[LoopAction]:
    """The ``tool loop:`` lines of session ``key``, in log order."""
    actions = []
    for line in lines:
        match = TOOL_LOOP_RE.match(line.message)
        if match and match["key"] == key:
            actions.append(LoopAction(match["session_id"], key, match["tool"], match["level"],
                                      match["detector"], int(match["count"]),
                                      match["message"] or "", line.trace_id))
    return actions


def session_traces(lines: list[LogLine], session_id: str) -> set[str]:
    """Trace ids of the runs of ``session_id`` (``traceId`` is constant within a run)."""
    traces = set()
    for line in lines:
        match = RUN_START_RE.match(line.message)
        if match and match[2] == session_id and line.trace_id:
            traces.add(line.trace_id)
    return traces


def session_evidence(lines: list[LogLine], agent_db: str | Path, key: str,
                     session_id: str) -> SessionEvidence:
    """Everything OpenClaw's guard did in one session, paired up into expected findings."""
    traces = session_traces(lines, session_id)
    evidence = SessionEvidence(
        key, session_id, loop_actions(lines, key),
        [line for line in lines if line.trace_id in traces
         and line.subsystem in LOOP_SUBSYSTEMS and "loop" in line.message.lower()],
        truth.call_evidence(agent_db, session_id))
    if not traces:
        evidence.problems.append(f"no 'embedded run start' line for session {session_id}")
    for action in evidence.actions:
        evidence.problems += _log_problems(action, evidence.lines, traces)
    evidence.expected, problems = pair_with_calls(evidence.actions, evidence.calls)
    evidence.problems += problems
    return evidence


def _log_problems(action: LoopAction, lines: list[LogLine], traces: set[str]) -> list[str]:
    """What the log lacks around one ``tool loop:`` line (the lines OpenClaw logs with it)."""
    label = f"tool loop {action.detector} {action.level} count={action.count}"
    if action.session_id != "unknown" and action.trace_id not in traces:
        return [f"{label}: trace {action.trace_id} is not a run of this session"]
    problems = []
    messages = [line.message for line in lines if line.trace_id == action.trace_id]
    guard = GUARD_LINES.get(action.level, "").format(tool=action.tool, message=action.message)
    if guard not in messages:
        problems.append(f"{label}: no line {guard[:90]!r}")
    detector_line = DETECTOR_LINES.get((action.detector, action.level))
    if detector_line:
        wanted = detector_line.format(tool=action.tool, count=action.count)
        if not any(message.startswith(wanted) for message in messages):
            problems.append(f"{label}: no line {wanted!r}")
    return problems


def pair_with_calls(actions: list[LoopAction], calls: list[truth.CallEvidence]
                    ) -> tuple[list[Expected], list[str]]:
    """Place each action on the call it acted on; list evidence that does not pair up.

    A critical pairs with the vetoed call whose intervention has its detector and count, a
    warning with the call whose result note says "after <count>"; both on the same tool.
    """
    vetoed = [call for call in calls if call.veto is not None]
    warned = [call for call in calls if call.warning_after is not None]
    expected, problems = [], []
    for action in actions:
        pool = vetoed if action.level == "critical" else warned
        call = next((c for c in pool if _acted_on(c, action)), None)
        if call is None:
            problems.append(f"tool loop {action.detector} {action.level} count={action.count} "
                            f"tool={action.tool}: no matching call in the transcript")
            continue
        pool.remove(call)
        expected.append(Expected(action.detector, action.level, action.count, call.index,
                                 action.tool))
    problems += [f"call {c.index} ({c.name}) vetoed ({c.veto.get('detector')} "
                 f"count={c.veto.get('count')}) without a tool loop line" for c in vetoed]
    problems += [f"call {c.index} ({c.name}) has a warning note (after {c.warning_after}) "
                 f"without a tool loop line" for c in warned]
    return expected, problems


def _acted_on(call: truth.CallEvidence, action: LoopAction) -> bool:
    if call.name != action.tool:
        return False
    if action.level == "critical":
        return (call.veto is not None and call.veto.get("detector") == action.detector
                and call.veto.get("count") == action.count)
    return call.warning_after == action.count


def wait_for_evidence(log_path: str | Path, agent_db: str | Path, sessions: dict[str, str],
                      timeout: float = 20.0) -> dict[str, SessionEvidence]:
    """Evidence per key of ``sessions`` (key -> session_id), once it pairs up or at ``timeout``.

    The log may trail the transcript by a moment; each attempt re-reads both.
    """
    deadline = time.monotonic() + timeout
    while True:
        lines = read_log(log_path)
        found = {key: session_evidence(lines, agent_db, key, session_id)
                 for key, session_id in sessions.items()}
        if all(not e.problems for e in found.values()) or time.monotonic() > deadline:
            return found
        time.sleep(0.5)

"""OpenClaw 2026.9.6's tool-loop decision (``detectToolCallLoop``) over a call history.

A ``Record`` is one entry of OpenClaw's ``toolCallHistory``. ``evaluate`` takes
the history already scoped to the current run (plus the projected vetoes of
earlier calls in the same assistant batch) and returns the verdict OpenClaw
would reach for the next call, in OpenClaw's order: unknown tool → global
breaker → known-poll critical/warning → ping-pong critical/warning → generic
critical → argument churn → generic warning.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from monitor.detect.outcome_record import TERMINAL_EXEC_FAILURE, VETO_KIND

MIN_STABLE_CALLS_PER_VARIANT = 3


class Record:
    """One call in the history; the outcome fields are filled when its result arrives.

    ``tool`` is the name OpenClaw keys the call by (``normalize_tool_name``); ``shown`` the
    name it was called by, which the dashboard shows."""

    __slots__ = ("args_hash", "call_id", "call_index", "failure_identity", "kind",
                 "no_progress", "result_hash", "run_id", "shown", "tool", "unknown_tool_name")

    def __init__(self, tool: str, args_hash: str, call_id: str | None, run_id: str | None,
                 call_index: int = 0, shown: str | None = None) -> None:
        self.tool = tool
        self.shown = shown or tool
        self.args_hash = args_hash
        self.call_id = call_id
        self.run_id = run_id
        self.call_index = call_index
        self.result_hash: str | None = None
        self.kind: str | None = None
        self.failure_identity: str | None = None
        self.no_progress = False
        self.unknown_tool_name: str | None = None

    @property
    def has_outcome(self) -> bool:
        return self.result_hash is not None or self.kind is not None


@dataclass(frozen=True, slots=True)
class Thresholds:
    warning: int = 10
    critical: int = 20
    global_breaker: int = 30
    unknown_tool: int = 10
    generic_repeat: bool = True
    known_poll_no_progress: bool = True
    ping_pong: bool = True
    unknown_tool_repeat: bool = True
    global_circuit_breaker: bool = True
    argument_churn: bool = True


@dataclass(slots=True)
class Verdict:
    """OpenClaw's verdict on a call. Its ``message`` is made when read: a looping session
    gets a verdict on most calls, and its report gate lets few of them through."""

    detector: str
    level: str
    count: int
    tool: str
    warning_key: str
    paired_tool: str | None = None
    #: The unavailable tool's name (``unknown_tool_repeat``), or how many argument
    #: variants cycled (``argument_churn``).
    detail: str | int | None = None

    @property
    def message(self) -> str:
        """The text OpenClaw gives the model with this verdict."""
        return self.message_naming(self.tool)

    def message_naming(self, tool: str) -> str:
        """OpenClaw's text with ``tool`` where it names the tool by its loop-detection name:
        a finding names the tool as it was called (``Bash``, not ``exec``)."""
        count, critical = self.count, self.level == "critical"
        detector = self.detector
        if detector == "unknown_tool_repeat":
            return (f"CRITICAL: attempted unavailable tool {self.detail} {count} times. Stop "
                    "retrying that missing tool and answer without it.")
        if detector == "global_circuit_breaker":
            return (f"CRITICAL: {tool} repeated identical no-progress outcomes {count} "
                    "times. Session execution blocked by global circuit breaker to prevent "
                    "runaway loops.")
        if detector == "known_poll_no_progress":
            if critical:
                return (f"CRITICAL: Called {tool} with identical arguments and no progress "
                        f"{count} times. This appears to be a stuck polling loop. Session "
                        "execution blocked to prevent resource waste.")
            return (f"WARNING: You have called {tool} {count} times with identical "
                    "arguments and no progress. Stop polling and either (1) increase "
                    "wait time between checks, or (2) report the task as failed if the "
                    "process is stuck.")
        if detector == "ping_pong":
            if critical:
                return ("CRITICAL: You are alternating between repeated tool-call patterns "
                        f"({count} consecutive calls) with no progress. This appears "
                        "to be a stuck ping-pong loop. Session execution blocked to prevent "
                        "resource waste.")
            return ("WARNING: You are alternating between repeated tool-call patterns "
                    f"({count} consecutive calls). This looks like a ping-pong "
                    "loop; stop retrying and report the task as failed.")
        if detector == "argument_churn":
            return (f"WARNING: {tool} has cycled through {self.detail} repeated argument "
                    f"patterns with the same stable outcome {count} times. Continued churn "
                    "is treated as stalled run activity, but this tool call remains allowed.")
        if critical:
            return (f"CRITICAL: Called {tool} with identical outcomes {count} times. "
                    "Session execution blocked to prevent runaway loops.")
        return (f"WARNING: You have called {tool} {count} times with identical "
                "arguments. If this is not making progress, stop retrying and report "
                "the task as failed.")


@dataclass(frozen=True, slots=True)
class PingPong:
    count: int
    no_progress_evidence: bool
    paired_tool: str | None = None
    paired_signature: str | None = None


_NO_PING_PONG = PingPong(0, False)


@dataclass(frozen=True, slots=True)
class Metrics:
    """Every counter ``evaluate`` computed, for the dashboard's streak view."""

    tool: str
    args_hash: str
    recent_count: int
    no_progress: int
    known_poll: bool
    ping_pong: PingPong
    unknown_tool: int
    argument_churn: int


def no_progress_streak(history: list[Record], tool: str, args_hash: str) -> tuple[int, str | None]:
    """``getNoProgressStreak``: (count, latest result hash)."""
    repeated = _count_no_progress(history, tool, args_hash, False)
    if tool != "exec":
        return repeated
    failures = _count_no_progress(history, tool, args_hash, True)
    return failures if failures[0] > repeated[0] else repeated


def _count_no_progress(history: list[Record], tool: str, args_hash: str,
                       failures_only: bool) -> tuple[int, str | None]:
    streak = 0
    latest: Record | None = None
    crossed_boundary = False
    pending_vetoes = 0
    for record in reversed(history):
        if record.tool != tool:
            if failures_only:
                break
            continue
        if not failures_only and record.args_hash != args_hash:
            continue
        if record.kind == VETO_KIND:
            pending_vetoes += 1
            continue
        if not record.result_hash:
            continue
        if failures_only and record.kind != TERMINAL_EXEC_FAILURE:
            break
        if latest is None:
            latest = record
            crossed_boundary = record.args_hash != args_hash
            streak = pending_vetoes + 1
            pending_vetoes = 0
            continue
        if failures_only:
            if crossed_boundary and record.args_hash == args_hash:
                break
            if record.args_hash != args_hash:
                crossed_boundary = True
        same_failure = (failures_only and record.failure_identity is not None
                        and record.failure_identity == latest.failure_identity)
        if record.result_hash != latest.result_hash and not same_failure:
            break
        streak += pending_vetoes + 1
        pending_vetoes = 0
    if latest is not None:
        return streak, latest.result_hash
    return (0 if failures_only else pending_vetoes), None


def unknown_tool_streak(history: list[Record], tool: str) -> tuple[int, str | None]:
    streak = 0
    name: str | None = None
    for record in reversed(history):
        if record.tool != tool or not record.unknown_tool_name:
            break
        if name is None:
            name = record.unknown_tool_name
            streak = 1
            continue
        if record.unknown_tool_name != name:
            break
        streak += 1
    return streak, name


def ping_pong_streak(history: list[Record], current_hash: str, evidence_from: int = 0
                     ) -> PingPong:
    """``getPingPongStreak``: the alternating tail that the current call would continue.
    Its results are compared for the no-progress evidence only from a count of
    ``evidence_from`` (below it the evidence is False, as a caller that reads it only at
    a threshold needs)."""
    none = _NO_PING_PONG
    if not history:
        return none
    last = history[-1]
    other: Record | None = None
    for record in reversed(history[:-1]):
        if record.args_hash != last.args_hash:
            other = record
            break
    if other is None:
        return none
    if current_hash != other.args_hash:
        return none
    tail = 0
    for record in reversed(history):
        expected = last.args_hash if tail % 2 == 0 else other.args_hash
        if record.args_hash != expected:
            break
        tail += 1
    if tail < 2:
        return none
    if tail + 1 < evidence_from:
        return PingPong(tail + 1, False, last.tool, last.args_hash)
    hash_a: str | None = None
    hash_b: str | None = None
    evidence = True
    for record in history[len(history) - tail:]:
        if not record.result_hash:
            evidence = False
            break
        if record.args_hash == last.args_hash:
            if hash_a is None:
                hash_a = record.result_hash
            elif hash_a != record.result_hash:
                evidence = False
                break
            continue
        if record.args_hash == other.args_hash:
            if hash_b is None:
                hash_b = record.result_hash
            elif hash_b != record.result_hash:
                evidence = False
                break
            continue
        evidence = False
        break
    if hash_a is None or hash_b is None:
        evidence = False
    return PingPong(tail + 1, evidence, last.tool, last.args_hash)


def argument_churn_streak(history: list[Record], tool: str, current_hash: str
                          ) -> tuple[int, int]:
    """``getArgumentChurnNoProgressStreak``: (count, variant count)."""
    outcomes: dict[str, list[Any]] = {}
    for record in reversed(history):
        if record.tool != tool:
            break
        if not record.result_hash:
            continue
        if not record.no_progress:
            break
        previous = outcomes.get(record.args_hash)
        if previous is not None and previous[0] != record.result_hash:
            break
        if previous is None:
            outcomes[record.args_hash] = [record.result_hash, 1]
        else:
            previous[1] += 1
    total = sum(count for _, count in outcomes.values())
    stable = [(result, count) for result, count in outcomes.values()
              if count >= MIN_STABLE_CALLS_PER_VARIANT]
    current = outcomes.get(current_hash)
    if (len(stable) > 1 and sum(count for _, count in stable) == total
            and len({result for result, _ in stable}) == 1
            and (current[1] if current else 0) >= MIN_STABLE_CALLS_PER_VARIANT):
        return total, len(stable)
    return 0, 0


def measure(history: list[Record], tool: str, args_hash: str, known_poll: bool) -> Metrics:
    streak, _ = no_progress_streak(history, tool, args_hash)
    churn, _ = argument_churn_streak(history, tool, args_hash)
    return Metrics(
        tool=tool,
        args_hash=args_hash,
        recent_count=_same_call_counts(history, tool, args_hash)[1],
        no_progress=streak,
        known_poll=known_poll,
        ping_pong=ping_pong_streak(history, args_hash),
        unknown_tool=unknown_tool_streak(history, tool)[0],
        argument_churn=churn,
    )


def _same_call_counts(history: list[Record], tool: str, args_hash: str) -> tuple[int, int]:
    """(calls of ``tool`` at the end of the history, calls with these arguments in it).
    Neither the no-progress streak nor the argument churn can exceed the larger: the first
    counts calls with these arguments or, for exec failures, the calls of ``tool`` at the
    end, and the churn counts those too."""
    same_tool_tail = 0
    for record in reversed(history):
        if record.tool != tool:
            break
        same_tool_tail += 1
    same_call = 0
    for record in history:
        if record.args_hash == args_hash and record.tool == tool:
            same_call += 1
    return same_tool_tail, same_call


def _streaks_below(same_tool_tail: int, same_call: int, limits: Thresholds) -> bool:
    """Whether neither the no-progress streak nor the argument churn can reach a threshold
    they are compared with (see ``_same_call_counts``), so no result need be compared."""
    return max(same_tool_tail, same_call) < min(limits.warning, limits.critical,
                                                 limits.global_breaker)


def _only_this_call(same_call: int, history: list[Record]) -> bool:
    """Whether every record of the history is a call of this tool with these arguments (half
    of the calls of a looping session): then there is no other call to alternate with, so no
    ping-pong, and no second variant, so no argument churn."""
    return same_call == len(history)


def evaluate(history: list[Record], tool: str, args_hash: str, known_poll: bool,
             limits: Thresholds) -> Verdict | None:
    """The verdict OpenClaw's ``detectToolCallLoop`` returns for the next call, or None."""
    unknown, unknown_name = unknown_tool_streak(history, tool)
    same_tool_tail, recent = _same_call_counts(history, tool, args_hash)
    only_this_call = _only_this_call(recent, history)
    if _streaks_below(same_tool_tail, recent, limits):
        streak, latest_result, churn, variants = 0, None, 0, 0
    else:
        streak, latest_result = no_progress_streak(history, tool, args_hash)
        churn, variants = (0, 0) if only_this_call else \
            argument_churn_streak(history, tool, args_hash)
    pingpong = _NO_PING_PONG if only_this_call else \
        ping_pong_streak(history, args_hash, limits.critical)
    result_key = latest_result or "none"

    if limits.unknown_tool_repeat and unknown >= limits.unknown_tool:
        return Verdict("unknown_tool_repeat", "critical", unknown, tool,
                       f"unknown-tool:{tool}:{unknown_name or 'unknown'}",
                       detail=unknown_name or tool)
    if limits.global_circuit_breaker and streak >= limits.global_breaker:
        return Verdict("global_circuit_breaker", "critical", streak, tool,
                       f"global:{tool}:{args_hash}:{result_key}")
    if known_poll and limits.known_poll_no_progress:
        if streak >= limits.critical:
            return Verdict("known_poll_no_progress", "critical", streak, tool,
                           f"poll:{tool}:{args_hash}:{result_key}")
        if streak >= limits.warning:
            return Verdict("known_poll_no_progress", "warning", streak, tool,
                           f"poll:{tool}:{args_hash}:{result_key}")
    if limits.ping_pong:
        critical = pingpong.count >= limits.critical and pingpong.no_progress_evidence
        if critical or pingpong.count >= limits.warning:
            if pingpong.paired_signature:
                pair = "|".join(sorted((args_hash, pingpong.paired_signature)))
                pp_key = f"pingpong:{pair}"
            else:
                pp_key = f"pingpong:{tool}:{args_hash}"
            return Verdict("ping_pong", "critical" if critical else "warning", pingpong.count,
                           tool, pp_key, pingpong.paired_tool)
    if limits.generic_repeat and not known_poll and streak >= limits.critical:
        return Verdict("generic_repeat", "critical", streak, tool,
                       f"generic:{tool}:{args_hash}:{result_key}")
    if limits.argument_churn and churn >= limits.warning:
        return Verdict("argument_churn", "warning", churn, tool, f"argument-churn:{tool}",
                       detail=variants)
    if limits.generic_repeat and not known_poll:
        if recent >= limits.warning:
            return Verdict("generic_repeat", "warning", recent, tool,
                           f"generic:{tool}:{args_hash}")
    return None

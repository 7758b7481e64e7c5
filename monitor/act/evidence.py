"""Whose an exec shell is: the evidence that names a session as its owner, and the verdict.

An exec shell's environment names no session, so ownership is proven from what OpenClaw
recorded (all read-only), of four kinds:

1. the gateway's ``agent`` tool events (``partialResult.details.pid``), seen live; they
   count for a process started no later than the event (and at its ``startedAt``, if sent);
2. transcript tool results that name the pid (backgrounded execs: ``details.pid``,
   ``exec_calls``); they count only for a process started inside that call's window: after
   the call was made (less ``CLOCK_SLACK``) and before its result was written, so a process
   that had the pid earlier or later (a reused PID) is not named by it;
3. the command text: the shell runs exactly the ``exec`` call's ``command``, started within
   ``COMMAND_WINDOW`` of that call being recorded, and the call has no result yet that
   names no pid (that command ran to its end); when another session made the same call
   within that window too, it names both (however much closer one of them is);
4. the global DB's ``task_runs`` rows of running background execs (``background_execs``:
   ``requester_session_key``, ``task`` = the command, ``started_at``), the same way.

A shell is a session's only when every piece of evidence that names it names that session
(``judge``). When two sessions are named (by one kind or by two), the shell is ambiguous:
the reasons are reported and nothing is killed. (The one allowance: identical calls of two
sessions within the window name both as possible owners; a pid named by one of them
then settles it.) Malformed values (a pid that is not a plausible positive integer, a
timestamp that is not a number, a row whose columns hold values of the wrong type, which
tables that are not STRICT allow) are skipped, never trusted (``record_values``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from monitor.act.background_execs import BackgroundTask
from monitor.act.exec_calls import ExecCall, kept_text
from monitor.act.processes import ExecShell
from monitor.act.record_values import epoch_number, valid_pid
from monitor.act.runs import ExecPid
from monitor.redaction import bounded

COMMAND_WINDOW = (-30.0, 5.0)   # call time relative to the shell's start, seconds
CLOCK_SLACK = 5.0      # a call's row may be written after its shell started (as in
                       # COMMAND_WINDOW); a create time is boot time + ticks (±1 s)
RESULT_SLACK = 1.0     # the result of a call is written after its shell started
#: Characters of a record's id (a call id, a process session) a reason shows: the records
#: are any JSON, and a reason reaches ``stop --kill``'s line, the audit log and the dialog.
SHOWN_ID_CHARS = 100
#: Claims whose reasons a verdict gives (a state dir can name a shell by any number of
#: calls, each a claim); the others are counted.
SHOWN_REASONS = 8


@dataclass(frozen=True)
class Attribution:
    """The session proven to own a shell, with the evidence that names it."""

    session_key: str
    evidence: str


@dataclass(frozen=True)
class Claim:
    """One piece of evidence naming a session as the owner of a shell. ``tied``: a command
    match that another session's identical call matches about as well (it names each of
    them as a possible owner, none for certain)."""

    kind: str          # "gateway tool event" | "transcript pid" | "command text" | "task_runs"
    session_key: str
    reason: str
    tied: bool = False


@dataclass(frozen=True)
class Verdict:
    """What the evidence says about one shell (see ``judge``): ``owner`` when every claim
    names that session, ``ambiguous`` when claims name different sessions (``sessions``
    lists every session named, ``reasons`` every claim)."""

    claims: tuple[Claim, ...] = ()

    @property
    def sessions(self) -> tuple[str, ...]:
        return tuple(sorted({claim.session_key for claim in self.claims}))

    @property
    def owner(self) -> str | None:
        certain = {claim.session_key for claim in self.claims if not claim.tied}
        if len(certain) != 1:
            return None
        (owner,) = certain
        ties: dict[str, set[str]] = {}
        for claim in self.claims:
            if claim.tied:
                ties.setdefault(claim.kind, set()).add(claim.session_key)
        return owner if all(owner in named for named in ties.values()) else None

    @property
    def ambiguous(self) -> bool:
        return bool(self.claims) and self.owner is None

    @property
    def reasons(self) -> tuple[str, ...]:
        """What the first ``SHOWN_REASONS`` claims say (``more_reasons`` counts the rest)."""
        return tuple(f"{claim.kind} names {claim.session_key}"
                     + (" (tied with another session's identical call)" if claim.tied else "")
                     + f": {claim.reason}" for claim in self.claims[:SHOWN_REASONS])

    @property
    def more_reasons(self) -> int:
        return max(0, len(self.claims) - SHOWN_REASONS)

    def names(self, session_key: str) -> bool:
        return session_key in self.sessions

    def attribution(self) -> Attribution | None:
        owner = self.owner
        if owner is None:
            return None
        more = f"; and {self.more_reasons} more" if self.more_reasons else ""
        return Attribution(owner, "; ".join(claim.reason
                                            for claim in self.claims[:SHOWN_REASONS]) + more)


def attribute(shell: ExecShell, *, reported: Iterable[ExecPid] = (),
              calls: Iterable[ExecCall] = (), tasks: Iterable[BackgroundTask] = ()
              ) -> Attribution | None:
    """The session that owns ``shell``, with the evidence; None when it cannot be proven
    (no evidence, or evidence naming different sessions: see ``judge``)."""
    return judge(shell, reported=reported, calls=calls, tasks=tasks).attribution()


def judge(shell: ExecShell, *, reported: Iterable[ExecPid] = (),
          calls: Iterable[ExecCall] = (), tasks: Iterable[BackgroundTask] = ()) -> Verdict:
    """Every piece of evidence that names ``shell``, of every kind (see the module
    docstring); the shell is a session's only when all of them name that session."""
    if valid_pid(shell.pid) is None:
        return Verdict()
    start = shell.create_time
    claims: list[Claim] = []
    for entry in reported:
        if entry.pid != shell.pid:
            continue
        if entry.started_at is not None and abs(entry.started_at - start) >= 5:
            continue                       # the event was about an older process
        seen = epoch_number(entry.last_output_at)
        if seen is not None and start > seen + CLOCK_SLACK:
            continue                       # this process started after the event: reused
        claims.append(Claim("gateway tool event", entry.session_key,
                            f"gateway tool event: pid {shell.pid} runs tool call "
                            f"{entry.tool_call_id} of run {entry.run_id}"))
    calls = list(calls)
    for call in calls:
        if call.result_pid != shell.pid:
            continue
        made, answered = epoch_number(call.ts), epoch_number(call.result_ts)
        if made is None or answered is None or answered < made:
            continue
        if made - CLOCK_SLACK <= start <= answered + RESULT_SLACK:
            claims.append(Claim(
                "transcript pid", call.session_key,
                f"transcript: exec call {_shown(call.call_id)} reports pid {shell.pid}"
                + (f" (process session {_shown(call.process_session)})"
                   if call.process_session
                   else "")))
    low, high = COMMAND_WINDOW
    command = kept_text(shell.command)
    matches = sorted(((abs(call.ts - start), call) for call in calls
                      if call.command == command and not call.finished
                      and low <= call.ts - start <= high), key=lambda m: m[0])
    closest = _closest(matches)
    for gap, call in closest:
        claims.append(Claim("command text", call.session_key,
                            f"command text matches exec call {_shown(call.call_id)} made "
                            f"{gap:.1f} s from the shell's start", tied=len(closest) > 1))
    task_matches = sorted(((abs(task.started_at - start), task) for task in tasks
                           if task.command == shell.command and task.started_at is not None
                           and abs(task.started_at - start) < 5),
                          key=lambda m: m[0])
    closest = _closest(task_matches)
    for gap, task in closest:
        claims.append(Claim("task_runs", task.session_key,
                            f"task_runs: running background exec "
                            f"{_shown(task.process_session or '?')} with this command, started "
                            f"{gap:.1f} s from the shell", tied=len(closest) > 1))
    return Verdict(tuple(claims))


def _shown(ident: str) -> str:
    """A record's id as a reason shows it: redacted, and cut to ``SHOWN_ID_CHARS``."""
    return bounded(ident, SHOWN_ID_CHARS)


def _closest(matches: list[tuple[float, object]]) -> list[tuple[float, object]]:
    """The closest match of each session that has one (``matches`` sorted by gap): a match
    farther off does not rule its session out, since how long OpenClaw takes from recording
    a call to starting its shell varies, so two sessions' identical calls in the window name
    both."""
    named: set[str] = set()
    closest = []
    for gap, match in matches:
        if match.session_key not in named:
            named.add(match.session_key)
            closest.append((gap, match))
    return closest

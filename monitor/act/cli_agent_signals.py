"""Stopping and killing the Claude Code or Codex CLI process found by ``cli_agents.find_cli``.

Stop is SIGINT to the CLI process alone: what the user's Ctrl-C does. Verified with Claude
Code 2.1.332 (``claude -p``) and Codex 0.171.0 (``codex exec``): either ends its running tool
process, writes the interruption to the transcript and exits. (An interactive session
interrupts the turn instead; not exercised here.)

Kill is, for each of the CLI's tool process groups (its children that lead their own group:
each Bash/``exec_command`` call), SIGTERM to the group, SIGKILL to whatever outlives the grace
period, and a check that no member is left; then the CLI itself (SIGTERM, then SIGKILL) only
when asked, frozen with SIGSTOP meanwhile so it cannot start another tool. Killing the tools
alone does not end a loop (the CLI reports the failed call to the model and goes on), so a
controller stops the CLI as well.

Nothing is signalled without a check just before: ``(pid, create_time)`` is that exact
process (not a reuse of its PID), alive, this user's, not PID 1 or this monitor, and still
looks like the session's CLI running in the session's cwd; a tool group's leader is still a
child of that CLI and leads its own group (not the CLI's or this monitor's), and when its
environment names a session (``CLAUDE_CODE_SESSION_ID``, ``CODEX_SESSION_ID``), it names this
one.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from dataclasses import dataclass

import psutil

from monitor.act.cli_agents import CliSession, session_cwd
from monitor.act.cli_freeze import freeze, thaw
from monitor.act.cli_processes import (
    argv_of,
    looks_like_cli,
    marked_session,
    owned_by_me,
    runs_in,
    tool_children,
    tool_command,
)
from monitor.act.processes import (
    POLL_SECONDS,
    KillOutcome,
    KillRefused,
    ProcessGone,
    finish_off,
    group_snapshot,
    is_alive,
    kill_stragglers,
    same_start,
    still_running,
    terminate_group,
    wait_gone,
)
from monitor.redaction import bounded

#: Characters of a tool's command a group keeps for display, redacted before the cut.
COMMAND_CHARS = 200


@dataclass(frozen=True)
class ToolGroup:
    """One tool call's process group below the CLI: its leader and the members it had when
    listed. ``marked``: the leader's environment names this session."""

    pid: int
    create_time: float
    command: str
    member_pids: tuple[int, ...]
    marked: bool


def _protected() -> set[int]:
    return {0, 1, os.getpid(), os.getppid()}


def orphaned_tools(session: CliSession, target: tuple[int, float]) -> list[psutil.Process]:
    """This user's live processes whose environment names the session (``SESSION_ENV``, as
    every tool process of the CLI inherits it) outside the CLI's tree: a tool's background
    job that left its group and outlived its parent (``(setsid loop &)``), which ending the
    tool groups does not reach. This monitor and its ancestors (run from such a tool) are
    not among them."""
    try:
        cli = psutil.Process(target[0])
        tree = {cli.pid, *(child.pid for child in cli.children(recursive=True))} \
            if same_start(cli.create_time(), target[1]) else set()
    except psutil.Error:
        tree = set()
    spared = tree | _protected() | {proc.pid for proc in psutil.Process().parents()}
    found = []
    for proc in psutil.process_iter():
        if proc.pid in spared or marked_session(proc, session.source) != session.session_id:
            continue
        if owned_by_me(proc) and still_running(proc):
            found.append(proc)
    return found


def verify_cli(session: CliSession, target: tuple[int, float]) -> psutil.Process:
    """The CLI process ``target`` = ``(pid, create_time)``, checked to be still the
    session's CLI, or ``KillRefused`` saying why it may not be touched."""
    pid, created = target
    if pid in _protected():
        raise KillRefused(f"pid {pid} is protected (PID 1 or this monitor)")
    try:
        proc = psutil.Process(pid)
        started = proc.create_time()
    except psutil.NoSuchProcess:
        raise ProcessGone(f"pid {pid} is gone") from None
    except psutil.Error as exc:
        raise KillRefused(f"pid {pid}: {exc}") from None
    if not same_start(started, created):
        raise KillRefused(f"pid {pid} was reused (created {started:.2f}, expected {created:.2f})")
    if not is_alive(pid, created):
        raise ProcessGone(f"pid {pid} is gone")
    if not owned_by_me(proc):
        raise KillRefused(f"pid {pid} belongs to another user")
    if not looks_like_cli(proc, session.source):
        raise KillRefused(f"pid {pid} is not a {session.source} process")
    cwd = session_cwd(session)
    if cwd is None or not runs_in(proc, cwd, session.source):
        raise KillRefused(f"pid {pid} does not run in the session's cwd ({cwd})")
    return proc


def _group_of(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


def _describe(proc: psutil.Process, session: CliSession) -> ToolGroup | None:
    try:
        created = proc.create_time()
    except psutil.Error:
        return None
    members = group_snapshot(proc.pid)
    command = bounded(tool_command(argv_of(proc)), COMMAND_CHARS)
    return ToolGroup(proc.pid, created, command, tuple(sorted(m.pid for m in members)),
                     marked_session(proc, session.source) == session.session_id)


def tool_groups(session: CliSession, target: tuple[int, float]) -> list[ToolGroup]:
    """The CLI's tool process groups (leaders whose environment names another session are
    left out); empty when ``target`` is not the session's CLI any more."""
    try:
        cli = verify_cli(session, target)
    except KillRefused:
        return []
    groups = []
    for child in tool_children(cli):
        named = marked_session(child, session.source)
        if named is not None and named != session.session_id:
            continue
        group = _describe(child, session)
        if group is not None:
            groups.append(group)
    return sorted(groups, key=lambda group: group.create_time)


def stop_cli(session: CliSession, target: tuple[int, float]) -> KillOutcome:
    """SIGINT to the CLI process (after ``verify_cli``)."""
    pid = target[0]
    try:
        proc = verify_cli(session, target)
        proc.send_signal(signal.SIGINT)
    except KillRefused as exc:
        return KillOutcome(pid, False, f"refused: {exc}")
    except psutil.Error as exc:
        return KillOutcome(pid, False, f"refused: pid {pid}: {exc}")
    return KillOutcome(pid, True, f"sent SIGINT to the {session.source} CLI (pid {pid})", [pid])


def wait_exit(target: tuple[int, float], timeout: float,
              stopping: threading.Event | None = None) -> bool:
    """Whether that exact process has ended within ``timeout`` seconds (polled); the wait
    ends early when ``stopping`` is set."""
    deadline = time.monotonic() + timeout
    stopping = stopping or threading.Event()
    while is_alive(*target):
        if time.monotonic() >= deadline or stopping.is_set():
            return False
        stopping.wait(POLL_SECONDS)
    return True


def _check_group(cli: psutil.Process, group: ToolGroup, session: CliSession) -> None:
    """``KillRefused`` unless ``group``'s leader is still a tool group of ``cli``."""
    if group.pid in _protected() or group.pid == cli.pid:
        raise KillRefused(f"pid {group.pid} is protected (the CLI, PID 1 or this monitor)")
    if not is_alive(group.pid, group.create_time):
        raise KillRefused(f"pid {group.pid} is gone (or was reused)")
    try:
        leader = psutil.Process(group.pid)
        parent = leader.ppid()
    except psutil.NoSuchProcess:
        raise ProcessGone(f"pid {group.pid} is gone") from None
    except psutil.Error as exc:
        raise KillRefused(f"pid {group.pid}: {exc}") from None
    if parent != cli.pid:
        raise KillRefused(f"pid {group.pid} is no longer a child of the CLI (pid {cli.pid})")
    if not owned_by_me(leader):
        raise KillRefused(f"pid {group.pid} belongs to another user")
    pgid = _group_of(group.pid)
    if pgid != group.pid:
        raise KillRefused(f"pid {group.pid} does not lead its own process group")
    if pgid in (_group_of(cli.pid), os.getpgid(0)):
        raise KillRefused(f"pid {group.pid} shares a process group with the CLI or the monitor")
    named = marked_session(leader, session.source)
    if named is not None and named != session.session_id:
        raise KillRefused(f"pid {group.pid} belongs to session {named}")


def _ended_by_itself(group: ToolGroup) -> bool:
    """Whether nothing is left of the tool group listed earlier: its leader has exited (a
    zombie counts) and no live process is in its group. A PID reused since proves it too:
    Linux does not hand out a PID while a process group still carries it as its id."""
    if is_alive(group.pid, group.create_time):
        return False
    try:
        if not same_start(psutil.Process(group.pid).create_time(), group.create_time):
            return True
    except psutil.Error:
        pass
    return not any(still_running(proc) for proc in group_snapshot(group.pid))


def kill_group(cli: psutil.Process, group: ToolGroup, session: CliSession, *,
               grace: float = 3.0, stopping: threading.Event | None = None) -> KillOutcome:
    """SIGTERM the tool group, SIGKILL what outlives ``grace`` (at once when ``stopping`` is
    set), and verify none is left. A group that ended between being listed and now (a
    short tool call) is an ok outcome that signalled nothing."""
    if _ended_by_itself(group):
        return KillOutcome(group.pid, True, f"tool group {group.pid} had ended by itself "
                                            f"({group.command})")
    try:
        _check_group(cli, group, session)
    except KillRefused as exc:
        return KillOutcome(group.pid, False, f"refused: {exc}")
    members = group_snapshot(group.pid)
    signalled = sorted(proc.pid for proc in members)
    alive = terminate_group(group.pid, members, grace=grace, stopping=stopping)
    late = [proc for proc in group_snapshot(group.pid) if proc not in members]
    if late:                                          # forked before the group signal landed
        signalled = sorted({*signalled, *(proc.pid for proc in late)})
        alive = sorted({*alive, *kill_stragglers(late, grace=min(grace, 1.0),
                                                 stopping=stopping)})
    if alive:
        return KillOutcome(group.pid, False, f"still alive after SIGKILL: {alive}", signalled)
    return KillOutcome(group.pid, True, f"killed tool group {group.pid} "
                                        f"({len(signalled)} processes: {group.command})",
                       signalled)


def kill_tools(session: CliSession, target: tuple[int, float], *, grace: float = 3.0,
               include_cli: bool = False, stopping: threading.Event | None = None
               ) -> list[KillOutcome]:
    """Kill every tool group of the CLI ``target``; then the CLI itself if ``include_cli``.
    One outcome per group (and one for the CLI); a refused CLI gives one refused outcome.
    Once ``stopping`` is set no grace is waited for: what SIGTERM did not end gets SIGKILL.

    With ``include_cli`` the CLI is frozen (SIGSTOP, ``cli_freeze``) first, so it cannot
    start another tool between its groups being killed and its own end (that tool would
    outlive it)."""
    try:
        cli = verify_cli(session, target)
        if include_cli:
            freeze(cli)
    except KillRefused as exc:
        return [KillOutcome(target[0], False, f"refused: {exc}")]
    except psutil.Error as exc:
        return [KillOutcome(target[0], False, f"refused: pid {target[0]}: {exc}")]
    try:
        outcomes = [kill_group(cli, group, session, grace=grace, stopping=stopping)
                    for group in tool_groups(session, target)]
        if include_cli:
            outcomes.append(terminate_cli(session, target, grace=grace, stopping=stopping))
    finally:
        if include_cli:
            thaw(cli)
    return outcomes


def terminate_cli(session: CliSession, target: tuple[int, float], *,
                  grace: float = 3.0, stopping: threading.Event | None = None) -> KillOutcome:
    """SIGTERM the CLI process (after ``verify_cli``; SIGCONT too, so a stopped one can act
    on it), SIGKILL it after ``grace`` (at once when ``stopping`` is set). Run inside
    ``kill_tools``' freeze (its guard resumes the CLI should this process die)."""
    pid = target[0]
    try:
        proc = verify_cli(session, target)
        proc.send_signal(signal.SIGTERM)
    except KillRefused as exc:
        return KillOutcome(pid, False, f"refused: {exc}")
    except psutil.Error as exc:
        return KillOutcome(pid, False, f"refused: pid {pid}: {exc}")
    try:
        proc.send_signal(signal.SIGCONT)
    except psutil.Error:
        pass
    late: list[KillOutcome] = []
    if wait_gone([proc], grace, stopping):
        late = _end_tools_started_since(proc, session, target, grace, stopping)
    alive = finish_off([proc], grace=0, stopping=stopping)
    failed = [outcome.detail for outcome in late if not outcome.ok]
    signalled = sorted({pid, *(member for outcome in late for member in outcome.signalled)})
    if alive or failed:
        left = [f"the CLI (pid {pid}) is still alive after SIGKILL"] if alive else []
        return KillOutcome(pid, False, "; ".join(left + failed), signalled)
    started = f", and {len(late)} tool group(s) it started after SIGTERM" if late else ""
    return KillOutcome(pid, True, f"ended the {session.source} CLI (pid {pid}){started}",
                       signalled)


def _end_tools_started_since(proc: psutil.Process, session: CliSession,
                             target: tuple[int, float], grace: float,
                             stopping: threading.Event | None) -> list[KillOutcome]:
    """The CLI outlived its SIGTERM, running: stop it again and end the tool groups it has
    now, before its SIGKILL orphans them (they would be nobody's child, in no group listed).
    """
    try:
        proc.send_signal(signal.SIGSTOP)
    except psutil.Error:
        return []
    return [kill_group(proc, group, session, grace=min(grace, 1.0), stopping=stopping)
            for group in tool_groups(session, target)]

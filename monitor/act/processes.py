"""The gateway's exec processes in the process table, and killing them safely (psutil).

Layout (OpenClaw 2026.9.6, verified): the gateway (process title ``openclaw-gateway``)
→ the spawn broker → one ``bash -c …`` per exec call, a process-group leader whose
environment has ``OPENCLAW_SHELL=exec`` (inherited by the command's children, which share
its group). A kill is SIGTERM to that group, a grace period, SIGKILL, and a check that
every member is gone. Nothing is signalled unless it is proven to be an exec shell in
the gateway's tree, owned by this user, with the create time it was found with (so a
reused PID is never hit), and never the gateway, this monitor, or PID 1.
"""

from __future__ import annotations

import os
import shlex
import signal
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import urlparse

import psutil

GATEWAY_TITLES = ("openclaw-gateway",)
EXEC_MARK = ("OPENCLAW_SHELL", "exec")
#: Seconds two create times of a PID may differ and still name the same process.
CREATE_TIME_TOLERANCE = 0.05
POLL_SECONDS = 0.05
_PATH_PREFIX_START = 'export PATH="${OPENCLAW_PREPEND_PATH}'
_PATH_PREFIX_END = "unset OPENCLAW_PREPEND_PATH; "


class KillRefused(Exception):
    """The process is not provably an exec shell of this gateway; nothing was signalled."""


class ProcessGone(KillRefused):
    """The process had ended before it could be signalled: there is nothing to kill."""


@dataclass(frozen=True)
class ExecShell:
    """One exec call's shell (a process-group leader) and what runs in it."""

    pid: int
    create_time: float
    command: str
    member_io: tuple[tuple[int, int], ...] = ()   # (pid, bytes written so far) per member

    @property
    def member_pids(self) -> tuple[int, ...]:
        return tuple(pid for pid, _ in self.member_io)


@dataclass
class KillOutcome:
    pid: int
    ok: bool
    detail: str
    signalled: list[int] = field(default_factory=list)
    #: The process had ended before it was signalled (not ok, yet not a failure to kill).
    gone: bool = False


def _environ(proc: psutil.Process) -> dict[str, str]:
    try:
        return proc.environ()
    except (psutil.Error, OSError):
        return {}


def _is_marked(proc: psutil.Process) -> bool:
    return _environ(proc).get(EXEC_MARK[0]) == EXEC_MARK[1]


def same_start(started: float, create_time: float) -> bool:
    """Whether a process created at ``started`` is the one recorded as created at
    ``create_time``, not a reuse of its PID (psutil's create times of one process differ
    by rounding from read to read)."""
    return abs(started - create_time) <= CREATE_TIME_TOLERANCE


def is_alive(pid: int, create_time: float) -> bool:
    """Whether that exact process (not a reuse of its PID) runs and is not a zombie."""
    try:
        proc = psutil.Process(pid)
        return same_start(proc.create_time(), create_time) and still_running(proc)
    except psutil.Error:
        return False


def still_running(proc: psutil.Process) -> bool:
    """Whether the process psutil holds (PID and create time) runs and is not a zombie."""
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _same_user(proc: psutil.Process) -> bool:
    try:
        return proc.uids().real == os.getuid()
    except psutil.Error:
        return False


# ------------------------------------------------------------------- the gateway

def _title(proc: psutil.Process) -> str:
    try:
        argv = proc.cmdline()
    except psutil.Error:
        return ""
    return argv[0] if argv else ""


def _listens_on(proc: psutil.Process, port: int) -> bool:
    try:
        return any(conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port
                   for conn in proc.net_connections(kind="tcp"))
    except (psutil.Error, OSError):
        return False


def _below_any(proc: psutil.Process, others: list[psutil.Process]) -> bool:
    try:
        return any(parent in others for parent in proc.parents())
    except psutil.Error:
        return False


def find_gateway(*, pid: int | None = None, url: str | None = None,
                 state_dir: str | None = None) -> psutil.Process | None:
    """The gateway process: ``pid`` when given (and alive), else the ``openclaw-gateway``
    process of this user not below another (an agent's command can take the title and
    inherits the environment); with several, the one listening on ``url``'s port, else the
    one whose ``$OPENCLAW_STATE_DIR`` is ``state_dir``."""
    if pid:
        try:
            proc = psutil.Process(pid)
        except psutil.Error:
            return None
        return proc if still_running(proc) else None
    titled = [proc for proc in psutil.process_iter()
              if _title(proc) in GATEWAY_TITLES and _same_user(proc)]
    found = [proc for proc in titled if not _below_any(proc, titled)]
    if len(found) <= 1:
        return found[0] if found else None
    port = urlparse(url).port if url else None
    if port:
        by_port = [proc for proc in found if _listens_on(proc, port)]
        if len(by_port) == 1:
            return by_port[0]
    if state_dir:
        wanted = os.path.realpath(state_dir)
        by_dir = [proc for proc in found
                  if os.path.realpath(_environ(proc).get("OPENCLAW_STATE_DIR", "/-")) == wanted]
        if len(by_dir) == 1:
            return by_dir[0]
    return None


# ------------------------------------------------------------------- exec shells

def exec_command(argv: list[str]) -> str:
    """The exec tool's command from an exec shell's argv.

    With a shell snapshot the shell runs ``bash -c "<snapshot>; export PATH=…\\neval
    '<PATH fix>; unset OPENCLAW_PREPEND_PATH; <COMMAND>'"``; without one (its capture failed
    or is switched off) ``bash -c "<PATH fix>; unset OPENCLAW_PREPEND_PATH; <COMMAND>"``. The
    command is the text after the PATH fix-up. Anything else (a shell that exec'd into its
    command) is returned joined.

    The wrapper's ``eval`` (only with a snapshot) is the first line of the script that is
    ``eval`` of one quoted word starting with the PATH fix-up: the command itself may hold
    ``eval`` lines (``eval "$(ssh-agent -s)"``, or one written to pass for another session's
    command), and those come after it, inside its quotes.
    """
    if len(argv) < 3 or argv[-2] != "-c":
        return " ".join(argv)
    body = argv[-1]
    at = -1 if body.startswith(_PATH_PREFIX_START) else body.find("\neval ")
    while at >= 0:
        try:
            words = shlex.split(body[at + 1:])
        except ValueError:
            words = []
        if len(words) == 2 and words[0] == "eval" and words[1].startswith(_PATH_PREFIX_START):
            body = words[1]
            break
        at = body.find("\neval ", at + 1)
    if body.startswith(_PATH_PREFIX_START):
        cut = body.find(_PATH_PREFIX_END)
        if cut >= 0:
            return body[cut + len(_PATH_PREFIX_END):]
    return body


def _group_of(proc: psutil.Process) -> int | None:
    try:
        return os.getpgid(proc.pid)
    except OSError:
        return None


def _written(proc: psutil.Process) -> int:
    """Bytes the process has written (any fd: the pipe to the gateway included)."""
    try:
        counters = proc.io_counters()
    except (psutil.Error, OSError, AttributeError):
        return 0
    return int(getattr(counters, "write_chars", counters.write_bytes))


def exec_shells(gateway: psutil.Process) -> list[ExecShell]:
    """Every top-level exec shell below the gateway (group leaders with the exec mark whose
    parent has no mark), with the live members of each."""
    try:
        tree = gateway.children(recursive=True)
    except psutil.Error:
        return []
    marked = {proc.pid: proc for proc in tree if _is_marked(proc)}
    shells = []
    for proc in marked.values():
        try:
            parent = proc.ppid()
            if _group_of(proc) != proc.pid or parent in marked or not still_running(proc):
                continue
            members = [proc, *proc.children(recursive=True)]
            members += [other for other in tree if other not in members
                        and _group_of(other) == proc.pid]
            shells.append(ExecShell(proc.pid, proc.create_time(), exec_command(proc.cmdline()),
                                    tuple(sorted((m.pid, _written(m)) for m in members
                                                 if still_running(m)))))
        except psutil.Error:
            continue
    return sorted(shells, key=lambda shell: shell.create_time)


# ------------------------------------------------------------------------ killing

def _in_tree(proc: psutil.Process, gateway: psutil.Process) -> bool:
    try:
        return any(parent.pid == gateway.pid and parent.create_time() == gateway.create_time()
                   for parent in proc.parents())
    except psutil.Error:
        return False


def check_killable(pid: int, create_time: float, gateway: psutil.Process) -> psutil.Process:
    """The process to kill, or ``KillRefused`` saying why it may not be touched."""
    protected = {0, 1, os.getpid(), os.getppid(), gateway.pid}
    if pid in protected:
        raise KillRefused(f"pid {pid} is protected (PID 1, the gateway or this monitor)")
    try:
        proc = psutil.Process(pid)
        started = proc.create_time()
    except psutil.NoSuchProcess:
        raise ProcessGone(f"pid {pid} is gone") from None
    except psutil.Error as exc:
        raise KillRefused(f"pid {pid}: {exc}") from None
    if not still_running(proc):
        raise ProcessGone(f"pid {pid} is gone")
    if not same_start(started, create_time):
        raise KillRefused(f"pid {pid} was reused (created {started:.2f}, expected "
                          f"{create_time:.2f})")
    if not _same_user(proc):
        raise KillRefused(f"pid {pid} belongs to another user")
    if not gateway.is_running() or not _in_tree(proc, gateway):
        raise KillRefused(f"pid {pid} is not in the gateway's process tree")
    group = _group_of(proc)
    if group != pid:
        raise KillRefused(f"pid {pid} does not lead its own process group")
    if group in (_group_of(gateway), os.getpgid(0)):
        raise KillRefused(f"pid {pid} shares a process group with the gateway or the monitor")
    if not _is_marked(proc):
        raise KillRefused(f"pid {pid} is not an exec shell (no OPENCLAW_SHELL=exec)")
    return proc


def wait_gone(procs: list[psutil.Process], timeout: float,
              stopping: threading.Event | None = None) -> list[psutil.Process]:
    """Those of ``procs`` still running (``still_running``: a zombie has ended) after at
    most ``timeout`` seconds, polled; at once when ``stopping`` is set (clawwatch is
    stopping: a grace period ends there)."""
    deadline = time.monotonic() + timeout
    stopping = stopping or threading.Event()
    while True:
        alive = [proc for proc in procs if still_running(proc)]
        if not alive or time.monotonic() >= deadline or stopping.is_set():
            return alive
        stopping.wait(POLL_SECONDS)


def _group_members(pgid: int) -> list[psutil.Process]:
    members = []
    for proc in psutil.process_iter():
        try:
            if os.getpgid(proc.pid) == pgid and still_running(proc):
                members.append(proc)
        except (OSError, psutil.Error):
            continue
    return members


def kill_shell(pid: int, create_time: float, gateway: psutil.Process, *,
               grace: float = 3.0, stopping: threading.Event | None = None) -> KillOutcome:
    """SIGTERM the shell's group (and its descendants in other groups), SIGKILL what is left
    after ``grace`` seconds (at once when ``stopping`` is set), and verify that nothing of
    it is alive."""
    try:
        leader = check_killable(pid, create_time, gateway)
        members = [leader, *leader.children(recursive=True)]
    except ProcessGone as exc:
        return KillOutcome(pid, False, f"refused: {exc}", gone=True)
    except KillRefused as exc:
        return KillOutcome(pid, False, f"refused: {exc}")
    except psutil.NoSuchProcess:    # it ended between the check and now (the abort ends it)
        return KillOutcome(pid, False, f"refused: pid {pid} is gone", gone=True)
    except psutil.Error as exc:
        return KillOutcome(pid, False, f"refused: pid {pid}: {exc}")
    members += [proc for proc in _group_members(pid) if proc not in members]
    _signal_all(pid, members, signal.SIGTERM)
    alive = wait_gone(members, grace, stopping)
    # A member forked as the SIGTERM arrived (a shell loop's next command) was not signalled.
    # The leader may be gone by now, so its group id is only evidence together with the mark
    # the exec shell's children inherit; an unmarked one is reported alive, never signalled.
    late = [proc for proc in _group_members(pid) if proc not in members]
    started = [proc for proc in late if _is_marked(proc)]
    members += started
    signalled = sorted(proc.pid for proc in members)
    alive += started
    escalated = bool(alive)
    if escalated:
        _signal_all(pid, alive, signal.SIGKILL)
        late = [proc for proc in _group_members(pid) if proc not in alive]
    alive = wait_gone(alive + [proc for proc in late if proc not in alive],
                      2.0 if escalated else 0.0)
    if alive:
        last = "SIGKILL" if escalated else "SIGTERM"
        return KillOutcome(pid, False, f"still alive after {last}: "
                                       f"{sorted(proc.pid for proc in alive)}", signalled)
    how = "SIGTERM, then SIGKILL" if escalated else "SIGTERM"
    return KillOutcome(pid, True, f"killed group {pid} ({len(signalled)} processes, {how})",
                       signalled)


def signal_group(pgid: int, members: list[psutil.Process], signum: int) -> bool:
    """Signal the group, but only while one of ``members`` (proven to be in it) still is,
    so a group id that was freed and reused is never hit. Says whether it was signalled."""
    if any(still_running(proc) and _group_of(proc) == pgid for proc in members):
        try:
            os.killpg(pgid, signum)
            return True
        except (ProcessLookupError, PermissionError):
            pass
    return False


def _signal_all(pgid: int, procs: list[psutil.Process], signum: int) -> None:
    """``signal_group``, then each of ``procs`` outside the group by itself (a descendant
    that left it). A member is signalled once: a shell sent SIGTERM twice may run its TERM
    trap twice, forking its cleanup (or its loop's next command) twice."""
    grouped = signal_group(pgid, procs, signum)
    for proc in procs:
        if grouped and _group_of(proc) in (pgid, None):     # None: gone since
            continue
        try:
            proc.send_signal(signum)
        except psutil.Error:
            continue


def group_snapshot(pid: int) -> list[psutil.Process]:
    """The shell ``pid``'s descendants and every live process in its group, as psutil
    objects (they remember their create time, so signalling them later cannot hit a
    reused PID)."""
    try:
        leader = psutil.Process(pid)
        members = [leader, *leader.children(recursive=True)]
    except psutil.Error:
        members = []
    return members + [proc for proc in _group_members(pid) if proc not in members]


def kill_stragglers(procs: list[psutil.Process], *, grace: float = 3.0,
                    stopping: threading.Event | None = None) -> list[int]:
    """SIGTERM, then SIGKILL, processes already proven to belong to a killed exec group
    (``group_snapshot``); returns the pids still alive afterwards."""
    alive = _signallable(procs)
    for proc in alive:
        try:
            proc.send_signal(signal.SIGTERM)
        except psutil.Error:
            continue
    return finish_off(alive, grace=grace, stopping=stopping)


def terminate_group(pgid: int, procs: list[psutil.Process], *, grace: float = 3.0,
                    stopping: threading.Event | None = None) -> list[int]:
    """``kill_stragglers`` for a group's snapshot (``group_snapshot``) whose group is
    still whole: one SIGTERM to the group and each of ``procs`` outside it."""
    alive = _signallable(procs)
    _signal_all(pgid, alive, signal.SIGTERM)
    return finish_off(alive, grace=grace, stopping=stopping)


def _signallable(procs: list[psutil.Process]) -> list[psutil.Process]:
    return [proc for proc in procs if still_running(proc) and _same_user(proc)
            and proc.pid not in (0, 1, os.getpid())]


def finish_off(procs: list[psutil.Process], *, grace: float = 3.0,
               stopping: threading.Event | None = None) -> list[int]:
    """Wait up to ``grace`` (none once ``stopping`` is set) for processes already sent
    SIGTERM, SIGKILL the ones left; returns the pids still alive afterwards (each is
    signalled once per signal)."""
    alive = wait_gone(procs, grace, stopping)
    for proc in alive:
        try:
            proc.send_signal(signal.SIGKILL)
        except psutil.Error:
            continue
    if alive:
        alive = wait_gone(alive, 2.0)
    return sorted(proc.pid for proc in alive)

"""Freezing a Claude Code / Codex CLI (SIGSTOP) while its tools are killed, and never leaving
it frozen.

A kill freezes the CLI so it cannot start another tool while its tool groups are ended
(``cli_agent_signals.kill_tools``, ``cli_controller``). Every frozen CLI is in a process-wide
registry until it is resumed (SIGCONT): ``thaw_all`` resumes whatever is left in it and runs
when this process exits normally, by an exception, or by a stop signal it handles (``watch``
and the dashboard end through their handlers, ``clawwatch stop`` through its own, which
also calls ``thaw_all``).

SIGKILL cannot be caught: a CLI frozen when clawwatch is SIGKILLed stays stopped until it
gets SIGCONT (``kill -CONT PID``). The window is kept short: a stop signal ends a kill's
grace at once (SIGKILL follows), so clawwatch exits within its 2 s and a service manager
has no reason to SIGKILL it.
"""

from __future__ import annotations

import atexit
import signal
import threading

import psutil

_frozen: dict[int, psutil.Process] = {}
_lock = threading.Lock()


def freeze(proc: psutil.Process) -> None:
    """SIGSTOP ``proc`` and remember it until ``thaw``; psutil's errors are raised (nothing
    is remembered then)."""
    with _lock:
        _frozen[proc.pid] = proc
    try:
        proc.send_signal(signal.SIGSTOP)
    except psutil.Error:
        with _lock:
            _frozen.pop(proc.pid, None)
        raise


def thaw(proc: psutil.Process) -> None:
    """SIGCONT ``proc`` (psutil checks that its PID still names the same process) and forget
    it; a process that has ended is forgotten quietly."""
    try:
        proc.send_signal(signal.SIGCONT)
    except psutil.Error:
        pass
    with _lock:
        if _frozen.get(proc.pid) is proc:
            del _frozen[proc.pid]


def frozen_pids() -> list[int]:
    """The pids frozen now and not yet thawed."""
    with _lock:
        return sorted(_frozen)


def thaw_all() -> None:
    """Resume every CLI still frozen by this process."""
    with _lock:
        procs = list(_frozen.values())
    for proc in procs:
        thaw(proc)


atexit.register(thaw_all)

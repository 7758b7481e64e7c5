"""Freezing a Claude Code / Codex CLI (SIGSTOP) while its tools are killed, and never leaving
it frozen.

A kill freezes the CLI so it cannot start another tool while its tool groups are ended
(``cli_agent_signals.kill_tools``, ``cli_controller``). Every frozen CLI is in a
process-wide registry until it is resumed (SIGCONT), held once per kill freezing it (two may
overlap: the dashboard's and ``--act auto``'s) and resumed when the last of them thaws it:
``thaw_all`` resumes whatever is left in it and runs when this process exits normally, by an
exception, or by a stop signal it handles (``watch`` and the dashboard end through their
handlers, ``clawwatch stop`` through its own, which also calls ``thaw_all``).

SIGKILL cannot be caught, so each freeze also has a guard: a small ``sh`` child that ignores
the stop signals and waits on a pipe from this process. ``thaw`` tells it the CLI runs
again; if the pipe closes without that (this process died, SIGKILL included), the guard
sends the CLI SIGCONT itself. What remains: a SIGKILL that takes the guard too (a service
manager killing the whole cgroup, which clawwatch's 2 s exit gives it no reason to do)
leaves the CLI stopped until it gets SIGCONT (``kill -CONT PID``).
"""

from __future__ import annotations

import atexit
import signal
import subprocess
import threading
from dataclasses import dataclass

import psutil

#: The guard's script: ``$1`` is the frozen CLI's pid.
GUARD_SCRIPT = ('trap "" TERM INT HUP; IFS= read -r word; '
                '[ "$word" = thawed ] || kill -CONT "$1"')
GUARD_EXIT_SECONDS = 1.0


@dataclass
class _Frozen:
    proc: psutil.Process
    guard: subprocess.Popen | None
    holds: int = 1      # the freezes not yet thawed (two kills of one CLI may overlap)


_frozen: dict[int, _Frozen] = {}
_lock = threading.Lock()


def _start_guard(pid: int) -> subprocess.Popen | None:
    """The guard of ``pid`` (module docstring), or None when it cannot be started (the
    catchable ends of this process still resume the CLI)."""
    try:
        return subprocess.Popen(["/bin/sh", "-c", GUARD_SCRIPT, "clawwatch-thaw-guard",
                                 str(pid)], stdin=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError:
        return None


def _release(guard: subprocess.Popen | None) -> None:
    """Tell the guard the CLI runs again, and reap it."""
    if guard is None:
        return
    try:
        guard.stdin.write(b"thawed\n")
        guard.stdin.close()
    except OSError:
        pass
    try:
        guard.wait(GUARD_EXIT_SECONDS)
    except subprocess.TimeoutExpired:
        pass


def freeze(proc: psutil.Process) -> None:
    """SIGSTOP ``proc`` and remember it (with its guard) until ``thaw``; psutil's errors are
    raised (nothing is remembered then). A process frozen already (another kill of the same
    CLI under way) is held once more: it runs again only when both have thawed it."""
    with _lock:
        entry = _frozen.get(proc.pid)
        if entry is not None and entry.proc == proc:
            entry.holds += 1
            return
    entry = _Frozen(proc, _start_guard(proc.pid))
    with _lock:
        replaced = _frozen.get(proc.pid)
        _frozen[proc.pid] = entry
    if replaced is not None:            # a process that had that PID before
        _release(replaced.guard)
    try:
        proc.send_signal(signal.SIGSTOP)
    except psutil.Error:
        with _lock:
            _frozen.pop(proc.pid, None)
        _release(entry.guard)
        raise


def thaw(proc: psutil.Process, *, all_holds: bool = False) -> None:
    """Release one hold of ``freeze`` on ``proc`` (every hold with ``all_holds``); when none
    is left, SIGCONT it (psutil checks that its PID still names the same process) and forget
    it. A process not held (never frozen, or ended) is sent SIGCONT, quietly."""
    with _lock:
        entry = _frozen.get(proc.pid)
        if entry is not None and entry.proc == proc:
            entry.holds = 0 if all_holds else entry.holds - 1
            if entry.holds > 0:
                return
            del _frozen[proc.pid]
        else:
            entry = None
    try:
        proc.send_signal(signal.SIGCONT)
    except psutil.Error:
        pass
    if entry is not None:
        _release(entry.guard)


def frozen_pids() -> list[int]:
    """The pids frozen now and not yet thawed."""
    with _lock:
        return sorted(_frozen)


def thaw_all() -> None:
    """Resume every CLI still frozen by this process, however many holds it has."""
    with _lock:
        procs = [entry.proc for entry in _frozen.values()]
    for proc in procs:
        thaw(proc, all_holds=True)


atexit.register(thaw_all)

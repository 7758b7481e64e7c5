"""``hung_process``: an exec process alive past a threshold with no new output.

The seed case is one ``until curl -sf …; do echo "Waiting..."; sleep 1; done`` that never
returns: no tool call repeats, so no transcript detector fires, yet the run is stuck.
Every ``interval`` seconds the watcher lists the gateway's exec shells and asks when each
last produced *new* output:

* the gateway's tool-update events carry the output's tail while the call is in the
  foreground (``RunTracker``); a line not seen before (numbers masked) is new output;
  the same lines over and over are not;
* otherwise, the bytes the shell's processes have written (``/proc/<pid>/io`` ``wchar``,
  any fd, so the pipe to the gateway counts) growing is new output, unless the last
  content seen from it was repetitive (an auto-backgrounded ``Waiting...`` loop keeps
  writing, but nothing new).

A shell without new output for ``detection.hung_process.warning_seconds``
(``critical_seconds``) gives a warning (critical) finding through
``DetectionEngine.external_finding``, once per level per shell. A shell first seen with
output already written, and no events about it, counts as active from then on (its
history is unknown); one that never wrote anything counts from its start.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from monitor.act import evidence as ev
from monitor.act.background_execs import running_background_execs
from monitor.act.exec_calls import recent_exec_calls
from monitor.act.processes import ExecShell, exec_shells
from monitor.detect.findings import Finding
from monitor.redaction import clip_redacted


@dataclass
class _Seen:
    create_time: float
    written: dict[int, int]
    quiet_since: float


def agent_of(session_key: str) -> str:
    """``main`` from ``agent:main:…`` (empty when the key has no agent part)."""
    parts = session_key.split(":")
    return parts[1] if len(parts) >= 3 and parts[0] == "agent" else ""


class HungProcessWatcher:
    """Turns quiet exec shells into ``hung_process`` findings (see the module docstring)."""

    def __init__(self, controller, engine, config, *, interval: float = 5.0,
                 clock: Callable[[], float] = time.time,
                 session_id_of: Callable[[str], str | None] | None = None) -> None:
        self.controller = controller
        self.engine = engine
        self.config = config
        self.interval = interval
        self.clock = clock
        self.session_id_of = session_id_of or (lambda key: None)
        self._seen: dict[int, _Seen] = {}
        self._owners: dict[tuple[int, float], ev.Attribution | None] = {}
        self._next_scan = 0.0

    def due(self) -> bool:
        return time.monotonic() >= self._next_scan

    def scan(self) -> list[Finding]:
        """One pass (at most every ``interval`` seconds; otherwise returns [])."""
        if not self.due():
            return []
        self._next_scan = time.monotonic() + self.interval
        gateway = self.controller.gateway_process()
        if gateway is None:
            return []
        shells = exec_shells(gateway)
        now = self.clock()
        self._forget_gone({shell.pid for shell in shells})
        findings = []
        quiet = [(shell, *self._quiet_seconds(shell, now)) for shell in shells]
        lowest = min((self._thresholds("")[0], *(self._thresholds(agent)[0]
                                                  for agent in self.config.agents)), default=0)
        candidates = [(shell, idle, same) for shell, idle, same in quiet if idle >= lowest]
        if not candidates:
            return []
        owners = self._attribute([shell for shell, _, _ in candidates])
        for shell, idle, same in candidates:
            owner = owners.get(shell.pid)
            if owner is None:
                continue
            finding = self._finding(shell, owner, idle, same, now)
            if finding is not None:
                findings.append(finding)
        return findings

    def _quiet_seconds(self, shell: ExecShell, now: float) -> tuple[float, bool]:
        """(seconds without new output, whether it kept writing the same lines meanwhile)."""
        written = dict(shell.member_io)
        reported = self.controller.tracker.owner(shell.pid)
        if reported is not None and reported.started_at is not None \
                and abs(reported.started_at - shell.create_time) > 5:
            reported = None                      # an older process that had this pid
        repetitive = reported is not None and reported.repetitive
        seen = self._seen.get(shell.pid)
        if seen is None or seen.create_time != shell.create_time:
            if not any(written.values()):
                start = shell.create_time
            else:
                start = reported.last_novel_at if reported is not None else now
            seen = _Seen(shell.create_time, written, start)
            self._seen[shell.pid] = seen
        elif not repetitive and any(count > seen.written.get(pid, 0)
                                    for pid, count in written.items()):
            seen.quiet_since = now
        seen.written = written
        if reported is not None and reported.last_novel_at > seen.quiet_since:
            seen.quiet_since = reported.last_novel_at
        return max(0.0, now - seen.quiet_since), repetitive

    def _forget_gone(self, alive: set[int]) -> None:
        for pid in [pid for pid in self._seen if pid not in alive]:
            del self._seen[pid]
        for key in [key for key in self._owners if key[0] not in alive]:
            del self._owners[key]

    def _attribute(self, shells: list[ExecShell]) -> dict[int, ev.Attribution]:
        missing = [shell for shell in shells if (shell.pid, shell.create_time) not in self._owners]
        if missing:
            state_dir = self.controller.discovered.state_dir
            calls = recent_exec_calls(state_dir)
            tasks = running_background_execs(state_dir)
            reported = self.controller.tracker.exec_pids()
            for shell in missing:
                owner = ev.attribute(shell, reported=reported, calls=calls, tasks=tasks)
                if owner is not None:
                    self._owners[(shell.pid, shell.create_time)] = owner
        return {shell.pid: owner for shell in shells
                if (owner := self._owners.get((shell.pid, shell.create_time))) is not None}

    def _thresholds(self, agent_id: str) -> tuple[int, int]:
        hung = self.config.for_agent(agent_id).detection.hung_process
        return hung.warning_seconds, hung.critical_seconds

    def _finding(self, shell: ExecShell, owner: ev.Attribution, idle: float, same: bool,
                 now: float) -> Finding | None:
        warning, critical = self._thresholds(agent_of(owner.session_key))
        if idle < warning:
            return None
        level = "critical" if idle >= critical else "warning"
        age = now - shell.create_time
        what = "repeated the same output" if same else "written nothing"
        message = (f"exec process {shell.pid} ({clip_redacted(shell.command, 120)}) has run "
                   f"{age:.0f} s and {what} for {idle:.0f} s")
        session_id = self.session_id_of(owner.session_key) or owner.session_key
        return self.engine.external_finding(
            owner.session_key, session_id, "hung_process", level, int(idle), message,
            tool="exec", pattern=f"{shell.pid}:{shell.create_time:.2f}", ts=now)

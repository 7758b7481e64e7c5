"""The automatic policy: which finding leads to which action, when, and how often.

For each ``finding`` record: the agent's ``actions`` config (``agents.<id>.actions`` over
the global one) picks an action, the first that is set of: ``triggers["detector:level"]``,
``triggers["detector"]`` (critical findings only); for a critical finding of a loop
detector (``findings.LOOP_DETECTORS``) ``on_loop_critical``, of a budget detector
(``BUDGET_DETECTORS``) ``on_budget_critical``; ``triggers["*:level"]``, ``triggers["*"]``
(critical only); for a critical finding, ``on_critical`` (the shorthand for both families,
and what the other detectors' criticals use). ``alert`` only alerts (webhooks fire on
criticals anyway); ``stop`` stops the run with ``stop_method``; ``kill`` kills its
processes and aborts it.

Loops are what a run never recovers from; budgets (tokens, tool calls per run) are limits
the user sets, and a long productive run that crosses one may still be worth finishing,
so the two families can act differently.

Modes: ``off`` does nothing; ``dry-run`` writes what it would do (an ``action`` record
with ``dry_run: true``, ``ok: false``, and an audit entry); ``auto`` acts on a worker
thread, so the live loop never waits for the gateway. A session is acted on at most
once per ``cooldown_seconds``; at most ``max_actions_per_hour`` actions are taken in
any hour (across sessions). What is held back is written to the audit log only.

``close`` is how clawwatch stops acting (a stop signal, the end of ``watch``, the dashboard
quitting; at a ``watch`` end that no signal caused, ``ActionLoop.finish`` first lets the
actions already decided run to their end): queued actions are dropped (a ``dropped``
audit entry and a failed action record each), the one running is cancelled
(``controller.cancel``: its gateway call ends, a kill SIGKILLs at once what SIGTERM did not
end and resumes a CLI it froze), and it is waited for only ``CLOSE_WAIT_SECONDS``, so
clawwatch ends within 2 s of a stop signal.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from monitor.act.audit import AuditLog, now_iso
from monitor.act.cli_controller import split_key
from monitor.act.hung import agent_of
from monitor.detect.findings import BUDGET_DETECTORS, LOOP_DETECTORS
from monitor.records import ActionRecord, FindingRecord, Record

LEVELS = ("warning", "critical")
CLOSE_WAIT_SECONDS = 1.0
DROPPED = "dropped: clawwatch stopped before this action ran"


@dataclass(frozen=True)
class Decision:
    action: str          # alert | stop | kill
    method: str          # abort | stop-text | cli | kill (what the action record says)
    mode: str            # dry-run | auto




def family_action(actions, detector: str) -> str | None:
    """``on_loop_critical`` / ``on_budget_critical`` for ``detector``'s family, if set."""
    if detector in LOOP_DETECTORS:
        return getattr(actions, "on_loop_critical", None)
    if detector in BUDGET_DETECTORS:
        return getattr(actions, "on_budget_critical", None)
    return None


def choose_action(actions, detector: str, level: str) -> str | None:
    """``alert`` | ``stop`` | ``kill`` for a finding, or None (see the module docstring)."""
    triggers = actions.triggers or {}
    if level != "critical":
        return next((triggers[key] for key in (f"{detector}:{level}", f"*:{level}")
                     if key in triggers), None)
    for key in (f"{detector}:{level}", detector):
        if key in triggers:
            return triggers[key]
    family = family_action(actions, detector)
    if family is not None:
        return family
    for key in (f"*:{level}", "*"):
        if key in triggers:
            return triggers[key]
    return actions.on_critical


def _finding_summary(record: FindingRecord) -> dict:
    return {name: getattr(record, name) for name in ("detector", "level", "count", "tool",
                                                     "at_call", "message", "session_id")}


class ActionPolicy:
    """Applies ``config.actions`` to finding records through ``controller``."""

    def __init__(self, config, controller, *, audit: AuditLog | None = None, notifier=None,
                 mode: str | None = None, clock: Callable[[], float] = time.monotonic,
                 on_result: Callable[[ActionRecord], None] | None = None) -> None:
        self.config = config
        self.controller = controller
        self.audit = audit or AuditLog(config.actions.audit_log)
        self.notifier = notifier
        self.mode_override = mode
        self.clock = clock
        self.on_result = on_result
        self._last_action: dict[str, float] = {}
        self._hour: deque[float] = deque()
        self._done: list[ActionRecord] = []
        self._lock = threading.Lock()
        self._jobs: queue.Queue = queue.Queue()
        self._busy = 0
        self._idle = threading.Condition(self._lock)
        self._worker = threading.Thread(target=self._run, name="clawwatch-actions", daemon=True)
        self._worker.start()

    # ------------------------------------------------------------------ deciding

    def mode_for(self, agent_id: str) -> str:
        explicit = ((self.config.agents.get(agent_id) or {}).get("actions") or {}).get("mode")
        if explicit is not None:
            return "off" if explicit is False else str(explicit)
        return self.mode_override or self.config.actions.mode

    def decide(self, record: Record) -> Decision | None:
        if not isinstance(record, FindingRecord) or record.level not in LEVELS:
            return None
        agent_id = agent_of(record.key or "")
        mode = self.mode_for(agent_id)
        if mode not in ("dry-run", "auto"):
            return None
        actions = self.config.for_agent(agent_id).actions
        action = choose_action(actions, record.detector, record.level)
        if action in (None, "alert"):
            return None
        method = "kill" if action == "kill" else actions.stop_method
        return Decision(action, method, mode)

    def _admit(self, key: str, agent_id: str) -> str | None:
        """None when an action may run now (and count it), else why not."""
        actions = self.config.for_agent(agent_id).actions
        now = self.clock()
        with self._lock:
            while self._hour and now - self._hour[0] >= 3600:
                self._hour.popleft()
            last = self._last_action.get(key)
            if last is not None and now - last < actions.cooldown_seconds:
                return f"cooldown: acted on this session {now - last:.0f} s ago"
            if len(self._hour) >= actions.max_actions_per_hour:
                return f"hourly cap reached ({actions.max_actions_per_hour} actions)"
            self._last_action[key] = now
            self._hour.append(now)
        return None

    # ------------------------------------------------------------------ acting

    def handle(self, records: list[Record]) -> list[ActionRecord]:
        """Alert on and act on the findings among ``records``; returns new action records
        (dry-run ones at once, auto ones as their results come in)."""
        out: list[ActionRecord] = []
        for record in records:
            if not isinstance(record, FindingRecord):
                continue
            if self.notifier is not None:
                self.notifier.notify(record)
            decision = self.decide(record)
            if decision is None:
                continue
            key = record.key or record.session_id or ""
            trigger = _finding_summary(record)
            held = routes_elsewhere(key, record.session_id) or self._admit(key, agent_of(key))
            base = {"key": key, "action": decision.method, "mode": decision.mode,
                    "trigger": trigger}
            if held:
                self.audit.append({"event": "suppressed", **base, "ok": False, "detail": held})
                continue
            if decision.mode == "dry-run":
                detail = f"dry run: would {decision.action} ({decision.method})"
                self.audit.append({"event": "dry-run", **base, "ok": False, "detail": detail})
                out.append(self._record(key, decision.method, record, False, detail, (),
                                        dry_run=True))
                continue
            self.audit.append({"event": "attempt", **base})
            with self._lock:
                self._busy += 1
            self._jobs.put((decision, key, record))
        return out + self.drain()

    def _run(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            decision, key, record = job
            try:
                self._perform(decision, key, record)
            finally:
                with self._lock:
                    self._busy -= 1
                    self._idle.notify_all()

    def _perform(self, decision: Decision, key: str, record: FindingRecord) -> None:
        detector = record.detector
        started = time.monotonic()
        try:
            if decision.action == "kill":
                result = self.controller.kill(key, trigger=detector)
            else:
                result = self.controller.stop(key, method=decision.method, trigger=detector)
            ok, detail, pids, action = result.ok, result.detail, result.pids, result.action
        except Exception as exc:  # a controller bug must not end the worker
            ok, detail, pids, action = False, f"internal error: {exc!r}", (), decision.method
        self.audit.append({"event": "result", "key": key, "action": action,
                           "mode": decision.mode, "trigger": _finding_summary(record),
                           "ok": ok, "detail": detail, "pids": list(pids),
                           "elapsed_ms": round((time.monotonic() - started) * 1000),
                           "error": None if ok else detail})
        out = self._record(key, action, record, ok, detail, pids)
        with self._lock:
            self._done.append(out)
        if self.notifier is not None:
            self.notifier.notify(out)
        if self.on_result is not None:
            self.on_result(out)

    @staticmethod
    def _record(key: str, action: str, finding: FindingRecord, ok: bool, detail: str, pids,
                dry_run: bool = False) -> ActionRecord:
        return ActionRecord(ts=now_iso(), key=key, action=action, trigger=finding.detector,
                            ok=ok, detail=detail, pids=list(pids),
                            session_id=finding.session_id, level=finding.level,
                            dry_run=dry_run)

    def drain(self) -> list[ActionRecord]:
        """Action records finished since the last call."""
        with self._lock:
            done, self._done = self._done, []
        return done

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no action is queued or running; False on time-out."""
        with self._idle:
            return self._idle.wait_for(lambda: self._busy <= 0, timeout)

    def close(self, timeout: float = CLOSE_WAIT_SECONDS) -> None:
        """Drop the queued actions, cancel the running one and wait up to ``timeout`` for it,
        then stop the worker (see the module docstring)."""
        self._drop_queued()
        cancel = getattr(self.controller, "cancel", None)
        if cancel is not None:
            cancel()
        self.wait_idle(timeout)
        self._jobs.put(None)

    def _drop_queued(self) -> None:
        while True:
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                return
            if job is None:
                continue
            decision, key, record = job
            self.audit.append({"event": "dropped", "key": key, "action": decision.method,
                               "mode": decision.mode, "trigger": _finding_summary(record),
                               "ok": False, "detail": DROPPED})
            out = self._record(key, decision.method, record, False, DROPPED, ())
            with self._lock:
                self._done.append(out)
                self._busy -= 1
                self._idle.notify_all()


def routes_elsewhere(key: str, session_id: str | None) -> str | None:
    """Why an action on the session of ``key`` and ``session_id`` must not be taken by key:
    actions are routed by the key's prefix (``claude-code:<id>``, ``codex:<id>`` to those
    CLIs), and an OpenClaw session's key is data (its index), so one borrowing such a prefix
    would have another source's session stopped or killed for its findings. None when the
    key routes to its own session."""
    routed = split_key(key)
    if routed is None or routed[1] == session_id:
        return None
    return (f"not acted on: the key routes to the {routed[0]} session {routed[1]!r}, not to "
            "this session")

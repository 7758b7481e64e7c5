"""Actions in the live loop: one object the watch/demo/dashboard loops call each step.

    actions = build_action_loop(monitor, discovered, config, mode=args.act)
    run_live(monitor, actions.wrap_emit(emit), ...)
    actions.close()

``process(records)`` (what ``wrap_emit`` calls after emitting a step's records) runs the
``hung_process`` watcher when it is due, hands every finding to the policy (webhooks,
actions) and returns the extra records to emit: ``hung_process`` findings, action
records (dry-run ones at once, performed ones when the worker has finished them; they
come out with the next step, which follows within the poll interval), and ``error``
records for failed webhook deliveries. Nothing here waits for the network.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from monitor.act.audit import AuditedController, AuditLog, now_iso
from monitor.act.cli_controller import is_cli_key, routed
from monitor.act.controller import GatewayActionController
from monitor.act.hung import HungProcessWatcher
from monitor.act.policy import CLOSE_WAIT_SECONDS, ActionPolicy
from monitor.act.webhooks import WebhookNotifier
from monitor.records import ActionRecord, ErrorRecord, FindingRecord, Record

#: What queued webhooks get at exit when a running action took the whole close time.
WEBHOOK_CLOSE_FLOOR_SECONDS = 0.25
#: How long the end of a watch waits for the actions under way (a kill's grace included).
FINISH_LIMIT_SECONDS = 60.0
#: How often that wait looks for a stop signal.
STOP_CHECK_SECONDS = 0.1


class ActionLoop:
    def __init__(self, policy: ActionPolicy, *, watcher: HungProcessWatcher | None = None,
                 notifier: WebhookNotifier | None = None) -> None:
        self.policy = policy
        self.watcher = watcher
        self.notifier = notifier
        self._listen_error: str | None = None

    def process(self, records: list[Record]) -> list[Record]:
        extra: list[Record] = []
        if self.watcher is not None and self.watcher.due():
            try:
                findings = self.watcher.scan()
            except Exception as exc:  # the process table changes under us; never fatal
                findings = []
                extra.append(_error("processes", f"process scan failed: {exc}"))
            for finding in findings:
                extra.append(FindingRecord.of(finding, ts=now_iso(), key=finding.session_key,
                                              session_id=finding.session_id))
        acted = self.policy.handle(records + extra)
        extra += acted
        extra += [_error("processes" if is_cli_key(record.key) else "gateway",
                         f"{record.action} {record.key}: {record.detail}")
                  for record in acted if not record.ok and not record.dry_run]
        if self.notifier is not None:
            extra += [_error("webhook", message) for message in self.notifier.drain_errors()]
        listen_error = getattr(self.policy.controller, "listen_error", None)
        if listen_error and listen_error != self._listen_error:
            extra.append(_error("gateway", f"gateway events unavailable: {listen_error}"))
        self._listen_error = listen_error
        if self.policy.audit.last_error:
            extra.append(_error("audit", self.policy.audit.last_error))
            self.policy.audit.last_error = None
        return extra

    def wrap_emit(self, emit: Callable[[list[Record]], None]
                  ) -> Callable[[list[Record]], None]:
        """``emit`` that also emits what ``process`` adds to each batch."""
        def emit_with_actions(records: list[Record]) -> None:
            emit(records)
            extra = self.process(records)
            if extra:
                emit(extra)
        return emit_with_actions

    def finish(self, stop: threading.Event, limit: float = FINISH_LIMIT_SECONDS) -> None:
        """At the end of a watch that nothing stopped (``--seconds``, a stream's end): let
        the actions already decided run to their end, for up to ``limit`` seconds; a stop
        signal meanwhile ends the wait at once (``close`` then cancels as always)."""
        deadline = time.monotonic() + limit
        while not stop.is_set() and time.monotonic() < deadline:
            if self.policy.wait_idle(min(STOP_CHECK_SECONDS, deadline - time.monotonic())):
                return

    def close(self, timeout: float = CLOSE_WAIT_SECONDS) -> list[ActionRecord]:
        """Stop acting (``ActionPolicy.close``: queued actions dropped, the running one
        cancelled and waited for up to ``timeout``), deliver queued webhooks in what is left
        of ``timeout`` (``WEBHOOK_CLOSE_FLOOR_SECONDS`` at least); returns the last records."""
        started = time.monotonic()
        self.policy.close(timeout)
        last = self.policy.drain()
        if self.notifier is not None:
            self.notifier.close(max(WEBHOOK_CLOSE_FLOOR_SECONDS,
                                    timeout - (time.monotonic() - started)))
        self.policy.controller.close()
        return last


def _error(source: str, message: str) -> ErrorRecord:
    return ErrorRecord(ts=now_iso(), source=source, message=message)


def build_action_loop(monitor, discovered, config, *, mode: str | None = None,
                      gateway_url: str | None = None, controller=None,
                      hung_interval: float = 5.0, audit: AuditLog | None = None) -> ActionLoop:
    """The action loop for a live ``Monitor`` (``mode`` is ``--act``, overriding
    ``actions.mode``; ``gateway_url`` is ``--gateway``). The gateway connection is opened
    at once and kept open on a background thread (when a gateway is configured), so run
    ends and exec output are tracked as they happen and the first stop does not pay for
    the handshake. ``claude-code:``/``codex:`` keys go to the CLI process path
    (``monitor.act.cli_controller``), every other key to the gateway controller."""
    controller = routed(controller or GatewayActionController(discovered, config,
                                                              url=gateway_url),
                        config, discovered=discovered)
    audit = audit or AuditLog(config.actions.audit_log)
    notifier = WebhookNotifier(config.alerts.webhooks, audit=audit) \
        if config.alerts.webhooks else None
    policy = ActionPolicy(config, controller, audit=audit, notifier=notifier, mode=mode)
    watcher = None
    engine = getattr(monitor, "engine", None)
    if engine is not None and config.detection.detectors.hung_process \
            and hasattr(controller, "gateway_process"):
        watcher = HungProcessWatcher(
            controller, engine, config, interval=hung_interval,
            session_id_of=lambda key: getattr(monitor, "key_to_session", {}).get(key))
    loop = ActionLoop(policy, watcher=watcher, notifier=notifier)
    if hasattr(controller, "start_listening") and (watcher is not None or policy.mode_override
                                                   == "auto" or config.actions.mode == "auto"):
        controller.start_listening()
    return loop


def dashboard_action_hooks(gateway_controller, discovered, config, *, mode: str | None = None,
                           gateway_url: str | None = None) -> dict:
    """What the dashboard needs to act: ``controller`` (audited, for the s/K keys),
    ``after_step`` (the action loop, built at the first step, run after each) and
    ``on_close`` (closes the loop, or the controller when no step ran). Claude Code and
    Codex keys go to the CLI process path (``monitor.act.cli_controller.routed``). The keys
    and the loop share one audit log, so a failure to write it (a full disk) reaches the
    errors pane whichever of them wrote."""
    gateway_controller = routed(gateway_controller, config, discovered=discovered)
    audit = AuditLog(config.actions.audit_log)
    state: dict = {}

    def after_step(monitor, records: list[Record]) -> list[Record]:
        if "loop" not in state:
            state["loop"] = build_action_loop(monitor, discovered, config, mode=mode,
                                              gateway_url=gateway_url,
                                              controller=gateway_controller, audit=audit)
        return state["loop"].process(records)

    def close() -> None:
        if "loop" in state:
            state["loop"].close()
        else:
            gateway_controller.close()

    return {"controller": AuditedController(gateway_controller, audit),
            "after_step": after_step, "on_close": [close]}

"""The dashboard's alerting and action side: toasts and the bell, stop, kill, acknowledge.

A mixin of ``ClawwatchApp`` (kept apart to keep each module readable). The
controller is only ever called from short thread workers; results come back
as ``ActionFinished`` / ``KillCandidatesFound`` messages handled here.

Session keys, commands and messages are data: toasts go through the app's ``notify``
(plain text, printable), dialogs get them printable, and the desktop notification
carries only printable text (no BEL, ESC or ST can end or escape its OSC).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from monitor.act.api import ActionKind, ActionResult
from monitor.display import printable
from monitor.snapshot import Snapshot
from monitor.ui.messages import ActionFinished, KillCandidatesFound, Rang
from monitor.ui.screens.dialogs import ConfirmScreen

MAX_TOASTS = 3


class AlertsAndActions:
    """Needs ``controller``, ``config``, ``book``, ``ingest``, ``displayed``, ``latest``,
    ``view``, ``actions`` and ``refresh_panes`` from the app."""

    def _announce(self, fresh, snapshot: Snapshot) -> None:
        """One toast per batch of new criticals (naming up to three), and the bell."""
        criticals = [a for a in fresh if a.level == "critical"]
        if not criticals:
            return
        lines = [f"{a.session_key}: {a.detector} ×{a.count}" for a in criticals[:MAX_TOASTS]]
        if len(criticals) > MAX_TOASTS:
            lines.append(f"and {len(criticals) - MAX_TOASTS} more")
        if len(criticals) == 1:
            lines.append(criticals[0].message[:200])
        self.notify("\n".join(lines), title=f"{len(criticals)} critical finding"
                    + ("s" if len(criticals) > 1 else ""), severity="error", timeout=8)
        if self.book.should_ring(len(criticals), snapshot.alerts):
            first = criticals[0]
            self.ring(f"{first.session_key}: {first.detector} critical")

    def repeat_bell(self) -> None:
        """Ring again while a critical is unacknowledged (rate-limited by the AlertBook)."""
        if self.book.should_ring(0, self.latest.alerts):
            self.ring("unacknowledged critical")

    def ring(self, reason: str) -> None:
        """The bell, plus an OSC 9 / OSC 777 desktop notification when configured."""
        self.bell()
        if self.terminal_notifications and not self.is_headless and self._driver is not None:
            text = printable(reason)[:200]
            self._driver.write(f"\x1b]9;clawwatch: {text}\x07")
            self._driver.write(f"\x1b]777;notify;clawwatch;{text}\x07")
        self.post_message(Rang(reason))

    # ------------------------------------------------------------------ actions

    def _selected_key(self) -> str | None:
        row = self.displayed.row(self.view.selected)
        if row is None:
            self.notify("select a session first", severity="warning")
            return None
        return row.key

    def action_stop(self) -> None:
        key = self._selected_key()
        if key is None:
            return
        method = self.config.actions.stop_method
        body = (f"Abort the active run of\n\n  {printable(key)}\n\n"
                f"through the gateway (method: {printable(method)}).")

        def answered(yes: bool | None) -> None:
            if yes:
                self._call_controller(
                    key, "abort", partial(self.controller.stop, key, method=method))

        self.push_screen(ConfirmScreen(f"Stop {printable(key)}?", body, "Stop"), answered)

    def action_kill(self) -> None:
        key = self._selected_key()
        if key is None:
            return

        def find() -> None:
            try:
                found = self.controller.kill_candidates(key)
            except Exception as exc:
                self.post_message(ActionFinished(ActionResult(key, "kill", False,
                                                              f"cannot list processes: {exc}")))
                return
            self.post_message(KillCandidatesFound(key, list(found)))

        self.run_worker(find, thread=True, group="actions", exit_on_error=False)

    def on_kill_candidates_found(self, message: KillCandidatesFound) -> None:
        key = message.session_key
        killable = [p for p in message.candidates if not p.ambiguous]
        conflicting = [p for p in message.candidates if p.ambiguous]
        left_alone = [f"  PID {p.pid:>7}  {printable(p.command)[:90]}\n"
                      + "".join(f"           {printable(reason)[:120]}\n" for reason in p.reasons)
                      for p in conflicting]
        if not killable:
            text = f"no processes of {key} to kill"
            if conflicting:
                text += (f"; {len(conflicting)} left alone, the evidence conflicts:\n"
                         + "".join(left_alone))
            self.notify(text, severity="warning")
            return
        lines = [f"Kill these processes of {printable(key)} (SIGTERM, then SIGKILL)?", ""]
        lines += [f"  PID {p.pid:>7}  {printable(p.command)[:90]}" for p in killable]
        if conflicting:
            lines += ["", "Left alone, the evidence names another session too:",
                      *"".join(left_alone).rstrip("\n").split("\n")]

        def answered(yes: bool | None) -> None:
            if yes:
                self._call_controller(key, "kill", partial(self.controller.kill, key))

        self.push_screen(ConfirmScreen(f"Kill {len(killable)} process(es)?",
                                       "\n".join(lines), "Kill"), answered)

    def _call_controller(self, key: str, action: ActionKind,
                         call: Callable[[], ActionResult]) -> None:
        def job() -> None:
            try:
                result = call()
            except Exception as exc:
                result = ActionResult(key, action, False, f"{action} failed: {exc}")
            self.post_message(ActionFinished(result))

        self.run_worker(job, thread=True, group="actions", exit_on_error=False)

    def on_action_finished(self, message: ActionFinished) -> None:
        result = message.result
        self.actions.append(result)
        self.ingest.inject({**result.as_record(), "ts": None})
        self.notify(f"{result.action} {result.session_key}: {result.detail}",
                    severity="information" if result.ok else "warning")

    def action_ack(self) -> None:
        key = self._selected_key()
        if key is not None:
            count = self.book.acknowledge(self.latest.alerts, key)
            self.notify(f"acknowledged {count} alert(s) of {key}")
            self.refresh_panes()

    def action_ack_all(self) -> None:
        count = self.book.acknowledge(self.latest.alerts)
        self.notify(f"acknowledged {count} alert(s)")
        self.refresh_panes()

    def action_mute(self) -> None:
        self.book.muted = not self.book.muted
        self.notify("bell muted" if self.book.muted else "bell on")
        self.refresh_panes()

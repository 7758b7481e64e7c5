"""The dashboard's alerting and action side: toasts and the bell, stop, kill, acknowledge.

A mixin of ``ClawwatchApp`` (kept apart to keep each module readable). The
controller is only ever called from ``@work`` thread workers; results come back
as ``ActionFinished`` / ``KillCandidatesFound`` messages handled here (by handler
name: ``@on`` is only collected on Textual's own classes, and this is a mixin).

Session keys, commands and messages are data: toasts go through the app's ``notify``
(redacted plain text, printable), dialogs get them redacted and printable, and the desktop
notification carries only redacted, printable text (no secret leaves for the desktop, and
no BEL, ESC or ST can end or escape its OSC).
"""

from __future__ import annotations

from collections.abc import Callable

from textual import work
from textual.timer import Timer

from monitor.act.api import ActionKind, ActionResult
from monitor.act.cli_controller import split_key
from monitor.shown import shown_redacted
from monitor.snapshot import AlertEntry, BoardRow, Snapshot
from monitor.ui.alerting import burst_toast
from monitor.ui.messages import ActionFinished, KillCandidatesFound, Rang
from monitor.ui.screens.dialogs import ConfirmScreen

#: Characters of a session key a confirmation dialog shows (redacted, then printable).
DIALOG_KEY_CHARS = 200
#: Characters of a session key a toast shows, after the outcome it reports: a long key
#: cannot push the outcome out of the toast (which keeps its first TOAST_CHARS).
TOAST_KEY_CHARS = 120
#: Characters of a session id and of an agent name a confirmation dialog shows.
IDENTITY_CHARS = 80


def session_identity(row: BoardRow) -> str:
    """The session's id and agent, shown beside its key in a confirmation dialog: two keys
    that read alike (a Cyrillic ``а`` for a Latin ``a``) still name different sessions."""
    return (f"session {shown_redacted(row.session_id, IDENTITY_CHARS)}"
            f" · agent {shown_redacted(row.agent, IDENTITY_CHARS)}")


def routed_source(row: BoardRow) -> str:
    """The source whose sessions an action on ``row`` reaches: actions are routed by the
    key's prefix (``claude-code:<id>``, ``codex:<id>`` to those CLIs' processes, every
    other key to the OpenClaw gateway). An OpenClaw key is data (sessions.json), so it can
    borrow another source's prefix and name a session other than the row's."""
    routed = split_key(row.key)
    return routed[0] if routed is not None else "openclaw"


class AlertsAndActions:
    """Needs ``controller``, ``config``, ``book``, ``burst``, ``ingest``, ``displayed``,
    ``latest``, ``view``, ``actions`` and ``alerts_pane`` from the app. Acknowledging and
    muting change the book, whose marks the alerts pane follows: nothing to re-render here."""

    _burst_timer: Timer | None = None

    def _announce(self, fresh, snapshot: Snapshot) -> None:
        """The bell at once; one toast per burst of new criticals, unless the alerts pane
        is in view, following, and lists them (it shows them at its top)."""
        criticals = [a for a in fresh if a.level == "critical"]
        if not criticals:
            return
        if self.book.should_ring(len(criticals), snapshot.alerts):
            first = criticals[0]
            self.ring(f"{first.session_key}: {first.detector} critical")
        if self._alerts_in_view(criticals):
            return
        wait = self.burst.add(criticals)
        if self._burst_timer is not None:
            self._burst_timer.stop()
        self._burst_timer = self.set_timer(wait, self._toast_burst, name="critical burst")

    def _toast_burst(self) -> None:
        self._burst_timer = None
        criticals = self.burst.take()
        if criticals and not self._alerts_in_view(criticals):
            title, text = burst_toast(criticals)
            self.notify(text, title=title, severity="error", timeout=8)

    def _alerts_in_view(self, alerts: list[AlertEntry]) -> bool:
        """The alerts pane is on the screen in front, following, and its filters let every
        one of ``alerts`` through: a critical of a session the source filter hides is not
        in the pane, so only a toast shows it."""
        pane = self.alerts_pane
        view = self.view
        if not (pane.following and not view.paused and pane.screen is self.screen
                and pane.is_on_screen):
            return False
        sources = view.alert_sources(self.latest.rows)
        return all(view.alert_visible(alert, sources) for alert in alerts)

    def repeat_bell(self) -> None:
        """Ring again while a critical is unacknowledged (rate-limited by the AlertBook)."""
        if self.book.should_ring(0, self.latest.alerts):
            self.ring("unacknowledged critical")

    def ring(self, reason: str) -> None:
        """The bell, plus an OSC 9 / OSC 777 desktop notification when configured."""
        self.bell()
        if self.terminal_notifications and not self.is_headless and self._driver is not None:
            text = shown_redacted(reason, 200)
            self._driver.write(f"\x1b]9;clawwatch: {text}\x07")
            self._driver.write(f"\x1b]777;notify;clawwatch;{text}\x07")
        self.post_message(Rang(reason))

    # ------------------------------------------------------------------ actions

    def _selected_row(self) -> BoardRow | None:
        row = self.displayed.row(self.view.selected)
        if row is None:
            self.notify("select a session first", severity="warning")
        return row

    def _row_to_act_on(self) -> BoardRow | None:
        """The selected row, unless its key would route a stop or kill to another source's
        session than the row's (then a warning, and no action)."""
        row = self._selected_row()
        if row is not None and routed_source(row) != row.source:
            self.notify(f"not acted on: the {row.source} session's key names a session of "
                        f"another source ({routed_source(row)})\n"
                        f"session {shown_redacted(row.key, TOAST_KEY_CHARS)}",
                        severity="warning")
            return None
        return row

    def _selected_key(self) -> str | None:
        row = self._selected_row()
        return None if row is None else row.key

    def action_stop(self) -> None:
        row = self._row_to_act_on()
        if row is None:
            return
        key = row.key
        method = self.config.actions.stop_method
        shown_key = shown_redacted(key, DIALOG_KEY_CHARS)
        body = (f"Abort the active run of\n\n  {shown_key}\n  {session_identity(row)}\n\n"
                f"through the gateway (method: {shown_redacted(method, DIALOG_KEY_CHARS)}).")

        def answered(yes: bool | None) -> None:
            if yes:
                self._stop_session(key, method)

        self.push_screen(ConfirmScreen(f"Stop {shown_key}?", body, "Stop"), answered)

    def action_kill(self) -> None:
        row = self._row_to_act_on()
        if row is not None:
            self._find_kill_candidates(row.key, session_identity(row))

    @work(thread=True, group="actions", exit_on_error=False,
          description="list the processes a kill would end")
    def _find_kill_candidates(self, key: str, identity: str) -> None:
        try:
            found = self.controller.kill_candidates(key)
        except Exception as exc:
            self.post_message(ActionFinished(ActionResult(key, "kill", False,
                                                          f"cannot list processes: {exc}")))
            return
        self.post_message(KillCandidatesFound(key, list(found), identity))

    def on_kill_candidates_found(self, message: KillCandidatesFound) -> None:
        key = message.session_key
        killable = [p for p in message.candidates if not p.ambiguous]
        conflicting = [p for p in message.candidates if p.ambiguous]
        left_alone = [f"  PID {p.pid:>7}  {shown_redacted(p.command, 90)}\n"
                      + "".join(f"           {shown_redacted(reason, 120)}\n"
                              for reason in p.listed_reasons)
                      for p in conflicting]
        if not killable:
            text = "no processes to kill"
            if conflicting:
                text += f"; {len(conflicting)} left alone, the evidence conflicts"
            text += f"\nsession {shown_redacted(key, TOAST_KEY_CHARS)}"
            if conflicting:
                text += "\n" + "".join(left_alone)
            self.notify(text, severity="warning")
            return
        lines = [f"Kill these processes of {shown_redacted(key, DIALOG_KEY_CHARS)}"
                 " (SIGTERM, then SIGKILL)?", message.identity, ""]
        lines += [f"  PID {p.pid:>7}  {shown_redacted(p.command, 90)}"
                  for p in killable]
        if conflicting:
            lines += ["", "Left alone, the evidence names another session too:",
                      *"".join(left_alone).rstrip("\n").split("\n")]

        def answered(yes: bool | None) -> None:
            if yes:
                self._kill_session(key)

        self.push_screen(ConfirmScreen(f"Kill {len(killable)} process(es)?",
                                       "\n".join(lines), "Kill"), answered)

    @work(thread=True, group="actions", exit_on_error=False,
          description="stop a session through the gateway")
    def _stop_session(self, key: str, method: str) -> None:
        self._controller_call(key, "abort", lambda: self.controller.stop(key, method=method))

    @work(thread=True, group="actions", exit_on_error=False,
          description="kill a session's processes")
    def _kill_session(self, key: str) -> None:
        self._controller_call(key, "kill", lambda: self.controller.kill(key))

    def _controller_call(self, key: str, action: ActionKind,
                         call: Callable[[], ActionResult]) -> None:
        """Run ``call`` (in a worker thread) and post its result, a failure included."""
        try:
            result = call()
        except Exception as exc:
            result = ActionResult(key, action, False, f"{action} failed: {exc}")
        self.post_message(ActionFinished(result))

    def on_action_finished(self, message: ActionFinished) -> None:
        result = message.result
        self.actions.append(result)
        self.ingest.inject(result.to_record(None))
        self.notify(f"{result.action}: {result.detail}\n"
                    f"session {shown_redacted(result.session_key, TOAST_KEY_CHARS)}",
                    severity="information" if result.ok else "warning")

    def action_ack(self) -> None:
        key = self._selected_key()
        if key is not None:
            count = self.book.acknowledge(self.latest.alerts, key)
            self.notify(f"acknowledged {count} alert(s) of {key}")

    def action_ack_all(self) -> None:
        count = self.book.acknowledge(self.latest.alerts)
        self.notify(f"acknowledged {count} alert(s)")

    def action_mute(self) -> None:
        self.book.muted = not self.book.muted
        self.notify("bell muted" if self.book.muted else "bell on")

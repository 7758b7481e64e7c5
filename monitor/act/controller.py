"""``GatewayActionController``: stop a session's run through the gateway, kill its processes.

* ``stop(key, method=…)``: ``abort`` (``chat.abort``, then ``sessions.abort`` with
  ``clearQueued`` when the session still has an active run), ``stop-text`` (``chat.send
  "/stop"``) or ``cli`` (``openclaw gateway call chat.abort``). When the RPC cannot
  authenticate (token rejected, ``DEVICE_IDENTITY_REQUIRED``) the CLI is used instead.
  Succeeds when the run was aborted or the session was already idle.
* ``kill(key)``: killing a child alone only makes the model call again, so: note the
  session's exec groups, abort the run (which stops new calls and ends the call in
  flight), then kill every group of the session still alive (backgrounded execs outlive
  an abort) and verify that none of their processes is left.
* ``kill_candidates(key)``: the session's exec shells, each with the evidence that it is
  the session's (see ``monitor.act.evidence``), then those whose evidence names this
  session and another (``ambiguous``, with the reasons): ``kill`` never touches those, and
  says so in its result (``ActionResult.ambiguous``, the detail text).
* ``cancel()`` (clawwatch is stopping; any thread): the gateway call in flight ends, no
  wait goes on (for evidence, a run's end, a grace period), and a kill under way SIGKILLs
  at once what SIGTERM did not end.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping

import psutil

from monitor.act import evidence as ev
from monitor.act import processes as pt
from monitor.act.api import ActionKind, ActionResult, ProcessInfo
from monitor.act.background_execs import running_background_execs
from monitor.act.cli_call import cli_call, find_openclaw_bin
from monitor.act.exec_calls import recent_exec_calls
from monitor.act.gateway_client import GatewayClient
from monitor.act.gateway_errors import (
    GatewayAuthError,
    GatewayError,
    GatewayRpcError,
    GatewaySetupError,
    redact,
)
from monitor.act.left_alone import conflicts_text, left_alone
from monitor.act.runs import RunTracker, ident
from monitor.redaction import register_known_secret, register_url_secrets

CONFIRM_SECONDS = 2.0
ATTRIBUTION_WAIT_SECONDS = 3.0   # a transcript row can land after its exec shell started
ATTRIBUTION_RETRY_SECONDS = 0.25
CLI_TIMEOUT = 30.0
MAX_SUBSCRIPTIONS = 1000
LISTENER_CLOSE_SECONDS = 0.5    # its call was cancelled: it ends at once


class GatewayActionController:
    """Performs stop and kill against one gateway (see the module docstring)."""

    def __init__(self, discovered, config=None, *, gateway_pid: int | None = None,
                 openclaw_bin: str | None = None, client: GatewayClient | None = None,
                 tracker: RunTracker | None = None, kill_grace: float | None = None,
                 confirm_seconds: float = CONFIRM_SECONDS, rpc_timeout: float | None = None,
                 url: str | None = None, env: Mapping[str, str] | None = None) -> None:
        """``url`` (``--gateway``) beats ``gateway.url`` in the config, which beats the
        discovered URL; the token is ``$<gateway.token_env>``, else the discovered one."""
        env = os.environ if env is None else env
        self.env = env
        self.discovered = discovered
        self.config = config
        self.tracker = tracker or RunTracker()
        token_env = config.gateway.token_env if config is not None else ""
        token = (env.get(token_env) if token_env else None) or discovered.gateway_token
        url = url or (config.gateway.url if config is not None else None) \
            or discovered.gateway_url
        self.url, self._token = url, token
        register_url_secrets(url)
        register_known_secret(token)
        timeouts = {"connect_timeout": rpc_timeout, "call_timeout": rpc_timeout} \
            if rpc_timeout else {}
        self.client = client or GatewayClient(url, token, on_event=self.tracker.feed, **timeouts)
        pid_text = env.get("OPENCLAW_GATEWAY_PID", "")
        self.gateway_pid = gateway_pid or (int(pid_text) if pid_text.isdigit() else None)
        self.openclaw_bin = openclaw_bin or find_openclaw_bin(env)
        if kill_grace is None:
            kill_grace = config.actions.kill_grace_seconds if config is not None else 3.0
        self.kill_grace = kill_grace
        self.confirm_seconds = confirm_seconds
        self.listen_error: str | None = None
        self.stopping = threading.Event()
        self._stop_listening = threading.Event()
        self._listener: threading.Thread | None = None

    # ------------------------------------------------------------------ stop

    def start_listening(self) -> None:
        """Keep a connection open on a daemon thread (reconnecting with backoff, 1–30 s) so
        ``tracker`` learns run ends and exec output as they happen; stops on an auth failure
        or a bad URL (``listen_error`` says why) or ``close()``.

        Lifecycle events reach every operator connection, but tool events (exec pids and
        output tails) only the run's owner and the subscribers of its session: so every
        session with an active run, and each one whose run starts later, is subscribed to
        (``sessions.subscribe`` once, then ``sessions.messages.subscribe`` per session; both
        are needed for ``session.tool`` events)."""
        if self._listener is not None or not self.url:
            return
        self._stop_listening.clear()
        self._listener = threading.Thread(target=self._listen, name="clawwatch-gateway-events",
                                          daemon=True)
        self._listener.start()

    def _listen(self) -> None:
        delay = 1.0
        while not self._stop_listening.is_set():
            try:
                conn = self.client.connection()
                self.listen_error, delay = None, 1.0
                self.tracker.take_new_keys()
                subscribed: set[str] = set()
                try:
                    self.client.call("sessions.subscribe", {}, attempts=1)
                    active = [row["key"] for row in self.client.sessions_list()
                              if row.get("hasActiveRun") and row.get("key")]
                except GatewayRpcError:      # an older gateway: lifecycle events only
                    active = []
                self._subscribe(active, subscribed)
                while not conn.closed and not self._stop_listening.wait(0.2):
                    self._subscribe(self.tracker.take_new_keys(), subscribed)
            except (GatewayAuthError, GatewaySetupError) as exc:   # retrying cannot help
                self.listen_error = redact(str(exc), self._token)
                return
            except GatewayError as exc:
                self.listen_error = redact(str(exc), self._token)
            if self._stop_listening.wait(delay):
                return
            delay = min(delay * 2, 30.0)

    def _subscribe(self, keys: list[str], subscribed: set[str]) -> None:
        for key in keys:
            if key in subscribed or len(subscribed) >= MAX_SUBSCRIPTIONS:
                continue
            try:
                self.client.call("sessions.messages.subscribe", {"key": key}, attempts=1)
            except GatewayRpcError:
                continue
            subscribed.add(key)

    def stop(self, session_key: str, *, method: ActionKind = "abort",
             trigger: str | None = None) -> ActionResult:
        started = time.monotonic()
        note = ""
        try:
            payload, via = self._abort(session_key, method)
        except GatewayAuthError as exc:
            if method == "cli" or not self.openclaw_bin:
                return self._failed(session_key, method, trigger, exc)
            note = f"RPC refused ({redact(str(exc), self._token)[:200]}); via the CLI: "
            try:
                payload, via = self._cli_abort(session_key), "openclaw gateway call chat.abort"
            except GatewayError as cli_exc:
                return self._failed(session_key, method, trigger, cli_exc, note)
        except GatewayError as exc:
            return self._failed(session_key, method, trigger, exc)
        run_ids = _run_ids(payload)
        elapsed = (time.monotonic() - started) * 1000
        if not run_ids and payload.get("aborted") is not True:
            return ActionResult(session_key, method, True,
                                f"{note}no active run (session idle); {via}, {elapsed:.0f} ms",
                                trigger)
        confirmed = ""
        if method != "cli":
            ends = self.tracker.wait_run_ends(run_ids, self.confirm_seconds)
            if len(ends) < len(run_ids) and self._still_active(session_key):
                return ActionResult(
                    session_key, method, False,
                    f"{note}could not stop: the gateway answered that {via} aborted run "
                    f"{_listed(run_ids)}, but no end event came within "
                    f"{self.confirm_seconds:g} s and the session still lists an active run",
                    trigger)
            confirmed = "; " + _listed([
                f"run {run} ended ({_end_text(ends[run])})" if run in ends
                else f"run {run}: no end event within {self.confirm_seconds:g} s"
                for run in run_ids])
        return ActionResult(session_key, method, True,
                            f"{note}aborted run {_listed(run_ids) or '?'} via {via} in "
                            f"{elapsed:.0f} ms{confirmed}", trigger)

    def _still_active(self, session_key: str) -> bool:
        """Whether the gateway still lists an active run for the session: asked when an
        abort's runs sent no end event, since an ``ok`` answer alone proves no stop (False
        when the list cannot be had: the answer is then all there is)."""
        try:
            row = self.client.session_row(session_key)
        except GatewayError:
            return False
        return bool(row) and row.get("hasActiveRun") is True

    def _abort(self, session_key: str, method: str) -> tuple[dict, str]:
        if method == "cli":
            return self._cli_abort(session_key), "openclaw gateway call chat.abort"
        if method == "stop-text":
            return self.client.send_stop(session_key), 'chat.send "/stop"'
        if method not in ("abort", "kill"):
            raise GatewayError(f"unknown stop method {method!r} (abort, stop-text, cli)")
        payload = self.client.chat_abort(session_key)
        if payload.get("aborted") is True:
            return payload, "chat.abort"
        row = self.client.session_row(session_key)
        if row and row.get("hasActiveRun") is True:
            payload = self.client.sessions_abort(session_key, clear_queued=True)
            status = payload.get("status")
            if status == "aborted" or _run_ids(payload):
                return payload, "sessions.abort"
            if status != "no-active-run":       # the run ended meanwhile: idle, as asked
                raise GatewayError(
                    "the gateway lists an active run for the session, and neither chat.abort "
                    f"nor sessions.abort aborted it (sessions.abort status "
                    f"{ident(status) if isinstance(status, str) else type(status).__name__})")
        return payload, "chat.abort"

    def _cli_abort(self, session_key: str) -> dict:
        payload = cli_call("chat.abort", {"sessionKey": session_key},
                           openclaw_bin=self.openclaw_bin, url=self.url, token=self._token,
                           config_path=self.discovered.openclaw_config_path,
                           state_dir=self.discovered.state_dir, timeout=CLI_TIMEOUT,
                           env=self.env)
        return payload if isinstance(payload, dict) else {}

    def _failed(self, key: str, method: str, trigger: str | None, exc: Exception,
                note: str = "") -> ActionResult:
        return ActionResult(key, method, False,
                            f"{note}could not stop: {redact(str(exc), self._token)}", trigger)

    # ------------------------------------------------------------------ processes

    def gateway_process(self) -> psutil.Process | None:
        return pt.find_gateway(pid=self.gateway_pid, url=self.url,
                               state_dir=self.discovered.state_dir)

    def attributed_shells(self, gateway: psutil.Process | None = None
                          ) -> list[tuple[pt.ExecShell, ev.Verdict]]:
        """Every exec shell of the gateway with what the evidence says about its owner
        (shells holding this monitor or its parent are left out)."""
        gateway = gateway or self.gateway_process()
        if gateway is None:
            return []
        mine = {os.getpid(), os.getppid()}
        shells = [shell for shell in pt.exec_shells(gateway)
                  if shell.pid not in (0, 1, gateway.pid) and not mine & set(shell.member_pids)]
        if not shells:
            return []
        state_dir = self.discovered.state_dir
        calls = recent_exec_calls(state_dir)
        tasks = running_background_execs(state_dir)
        reported = self.tracker.exec_pids()
        return [(shell, ev.judge(shell, reported=reported, calls=calls, tasks=tasks))
                for shell in shells]

    def kill_candidates(self, session_key: str) -> list[ProcessInfo]:
        """The session's shells (``kill`` ends them), then the shells whose evidence names
        this session and another (``ambiguous=True``: ``kill`` leaves them alone)."""
        owned, ambiguous = [], []
        for shell, verdict in self.attributed_shells():
            if verdict.owner == session_key:
                owned.append(ProcessInfo(shell.pid, shell.create_time, shell.command,
                                         session_key, verdict.attribution().evidence,
                                         reasons=verdict.reasons,
                                         more_reasons=verdict.more_reasons))
            elif verdict.ambiguous and verdict.names(session_key):
                ambiguous.append(left_alone(shell, verdict))
        return owned + ambiguous

    def kill(self, session_key: str, *, trigger: str | None = None,
             method: ActionKind = "abort") -> ActionResult:
        gateway = self.gateway_process()
        before, unproven, ambiguous = self._owned_waiting(session_key, gateway)
        snapshots = {shell.pid: pt.group_snapshot(shell.pid) for shell in before}
        stopped = self.stop(session_key, method=method, trigger=trigger)
        if gateway is None:
            return ActionResult(session_key, "kill", False,
                                f"{stopped.detail}; gateway process not found "
                                "(set $OPENCLAW_GATEWAY_PID), no process killed", trigger)
        shells = {shell.pid: shell for shell in before}
        attributed = self.attributed_shells(gateway)
        unproven = min(unproven, sum(1 for _, verdict in attributed if not verdict.claims))
        for shell, verdict in attributed:
            known = shells.get(shell.pid)
            same = known is not None and known.create_time == shell.create_time
            if verdict.owner == session_key:
                if known is None and (shell.pid, shell.create_time) not in ambiguous:
                    shells[shell.pid] = shell
                    snapshots.setdefault(shell.pid, pt.group_snapshot(shell.pid))
            elif same and verdict.claims:
                # the evidence read after the abort names another session: hands off
                del shells[shell.pid]
                snapshots.pop(shell.pid, None)
                ambiguous[(shell.pid, shell.create_time)] = left_alone(
                    shell, verdict, f"before the abort the evidence named only {session_key}")
            elif verdict.ambiguous and verdict.names(session_key):
                ambiguous.setdefault((shell.pid, shell.create_time), left_alone(shell, verdict))
        outcomes = []
        for shell in shells.values():
            if not pt.is_alive(shell.pid, shell.create_time):
                continue
            outcomes.append(pt.kill_shell(shell.pid, shell.create_time, gateway,
                                          grace=self.kill_grace, stopping=self.stopping))
        leftovers = pt.kill_stragglers([proc for procs in snapshots.values() for proc in procs],
                                       grace=self.kill_grace, stopping=self.stopping)
        failed = [o for o in outcomes if not o.ok and not o.gone]
        pids = sorted({pid for procs in snapshots.values() for pid in (p.pid for p in procs)}
                      | {pid for o in outcomes for pid in o.signalled})
        killed = sum(1 for o in outcomes if o.ok)
        gone = sum(1 for o in outcomes if o.gone)
        parts = [stopped.detail, f"{len(shells)} exec group(s) of the session: "
                                 f"{len(shells) - len(outcomes) + gone} ended with the run, "
                                 f"{killed} killed by clawwatch"]
        if ambiguous:
            parts.append(f"{len(ambiguous)} exec shell(s) left alone, the evidence conflicts: "
                         + conflicts_text(list(ambiguous.values())))
        if not shells and unproven:
            parts.append(f"{unproven} exec shell(s) of gateway pid {gateway.pid} not proven to "
                         "be this session's, left alone")
        parts += [o.detail for o in failed]
        if leftovers:
            parts.append(f"still alive: {leftovers}")
        ok = stopped.ok and not failed and not leftovers
        return ActionResult(session_key, "kill", ok, "; ".join(parts), trigger, tuple(pids),
                            tuple(ambiguous.values()))

    def _owned_and_unproven(self, session_key: str, gateway: psutil.Process | None
                            ) -> tuple[list[pt.ExecShell], int,
                                       dict[tuple[int, float], ProcessInfo]]:
        """The session's exec shells, how many shells no evidence names, and the shells
        whose evidence names this session and another (by pid and create time)."""
        if gateway is None:
            return [], 0, {}
        attributed = self.attributed_shells(gateway)
        owned = [shell for shell, verdict in attributed if verdict.owner == session_key]
        ambiguous = {(shell.pid, shell.create_time): left_alone(shell, verdict)
                     for shell, verdict in attributed
                     if verdict.ambiguous and verdict.names(session_key)}
        return owned, sum(1 for _, verdict in attributed if not verdict.claims), ambiguous

    def _owned_waiting(self, session_key: str, gateway: psutil.Process | None
                       ) -> tuple[list[pt.ExecShell], int,
                                  dict[tuple[int, float], ProcessInfo]]:
        """Like ``_owned_and_unproven``, but while none is the session's and some shell is
        unproven, read the evidence again for a few seconds: the transcript row of an exec
        call can be written after its shell started."""
        deadline = time.monotonic() + ATTRIBUTION_WAIT_SECONDS
        while True:
            owned, unproven, ambiguous = self._owned_and_unproven(session_key, gateway)
            if owned or not unproven or time.monotonic() >= deadline \
                    or self.stopping.wait(ATTRIBUTION_RETRY_SECONDS):
                return owned, unproven, ambiguous

    def cancel(self) -> None:
        """clawwatch is stopping: an action under way finishes without waiting (see the
        module docstring)."""
        self._end_waits()
        self.client.cancel()

    def close(self) -> None:
        self._end_waits()
        self.client.close()
        if self._listener is not None:
            self._listener.join(timeout=LISTENER_CLOSE_SECONDS)
            self._listener = None

    def _end_waits(self) -> None:
        self.stopping.set()
        self._stop_listening.set()
        self.tracker.end_waits()


def _run_ids(payload: dict) -> list[str]:
    """The runs an abort's answer names (``runIds``, ``abortedRunId``) as text, cut as the
    tracker cuts the ids of its events; a ``runIds`` that is no array names none."""
    listed = payload.get("runIds")
    runs = [run for run in listed if isinstance(run, str) and run] \
        if isinstance(listed, list) else []
    if isinstance(payload.get("abortedRunId"), str) and payload["abortedRunId"]:
        runs.append(payload["abortedRunId"])
    return [ident(run) for run in runs]


SHOWN_RUNS = 5


def _listed(texts: list[str]) -> str:
    """The first ``SHOWN_RUNS`` texts joined, and how many more there are: an answer may
    name any number of runs, and the detail is one line."""
    shown = ", ".join(texts[:SHOWN_RUNS])
    return f"{shown} and {len(texts) - SHOWN_RUNS} more" if len(texts) > SHOWN_RUNS else shown


def _end_text(data: dict) -> str:
    bits = [str(data.get("phase"))]
    for name in ("status", "stopReason"):
        if data.get(name):
            bits.append(f"{name}={data[name]}")
    if data.get("aborted"):
        bits.append("aborted")
    return " ".join(bits)

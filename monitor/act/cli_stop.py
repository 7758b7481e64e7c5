"""``clawwatch stop SESSION_KEY [--kill] [--method abort|stop-text|cli]``.

Exit codes (shared/CONTRACT.md): 0 when the run was aborted or the session was already
idle (with ``--kill``: and none of its exec processes is left), 1 when that could not be
done, 2 on bad setup (no gateway URL or a bad one, unreadable config, no ``openclaw`` CLI
for ``--method cli``). Prints one line: human text, or with ``--json`` the ``action`` record.
The attempt and its result go to the audit log. Exec shells whose evidence names this
session and another are never killed: the detail says so, and the ``action`` record and
the audit entry list them under ``ambiguous`` (pid, create_time, command, reasons).

Claude Code and Codex keys (``claude-code:<id>``, ``codex:<id>``) need no gateway: the
session's CLI process is found and signalled (``monitor.act.cli_controller``): stop is
SIGINT, ``--kill`` ends its tool process groups, then SIGINT. The transcript is looked for
under ``--claude-dir`` / ``--codex-dir`` when given, else the default dirs. When the
evidence does not name one process, nothing is signalled and the exit code is 1.

SIGTERM, SIGINT or SIGHUP while the action runs cancel it rather than abandon it half-way
(``_act_until_stopped``): a gateway call ends, a kill's grace is over (what SIGTERM did not
end gets SIGKILL at once), a frozen CLI is resumed, and the command ends within 2 s with
the outcome so far.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable

from monitor.act.api import ActionResult
from monitor.act.audit import AuditLog, now_iso
from monitor.act.cli_controller import CliAgentController, split_key
from monitor.act.cli_freeze import thaw_all
from monitor.act.controller import GatewayActionController
from monitor.act.gateway_url import gateway_url_problem
from monitor.config import ConfigError, load_config
from monitor.discovery import discover
from monitor.display import json_dumps, printable
from monitor.redaction import redact_record, redact_text

METHODS = ("abort", "stop-text", "cli")
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
#: How long a cancelled action may take to finish before the command ends without it.
CANCEL_WAIT_SECONDS = 1.5


def stop_main(args, *, out=None, err=None, env=None) -> int:
    """Run the command for an argparse namespace with ``session_key``, ``kill``, ``method``
    and the discovery flags (``state_dir``, ``profile``, ``log``, ``gateway``, ``config``);
    optional: ``json`` (print JSON lines), ``timeout`` (seconds per RPC attempt; 3
    attempts)."""
    out = out or sys.stdout
    err = err or sys.stderr
    as_json = bool(getattr(args, "json", False))
    key = (getattr(args, "session_key", "") or "").strip()
    if not key:
        print("clawwatch stop: a SESSION_KEY is required (e.g. agent:main:main)", file=err)
        return 2
    try:
        config = load_config(getattr(args, "config", None), **({"env": env} if env else {}))
    except ConfigError as exc:
        print(printable("\n".join(exc.errors), keep_newlines=True), file=err)
        return 2
    for warning in config.warnings:
        print(printable(f"clawwatch stop: warning: {warning}"), file=err)
    method = getattr(args, "method", None) or config.actions.stop_method
    if method not in METHODS:
        print(printable(f"clawwatch stop: unknown --method {method!r} ({', '.join(METHODS)})"),
              file=err)
        return 2
    cli_key = split_key(key)
    if cli_key is not None:
        controller = CliAgentController(claude_dirs=getattr(args, "claude_dir", None),
                                        codex_dirs=getattr(args, "codex_dir", None),
                                        config=config, env=env)
    else:
        found = discover(state_dir=getattr(args, "state_dir", None),
                         profile=getattr(args, "profile", None), log=getattr(args, "log", None),
                         gateway=getattr(args, "gateway", None), env=env)
        timeout = getattr(args, "timeout", None)
        controller = GatewayActionController(found, config, env=env, rpc_timeout=timeout,
                                             url=getattr(args, "gateway", None))
        problem = _setup_problem(controller, method, found)
        if problem:
            print(printable(redact_text(f"clawwatch stop: {problem}")), file=err)
            return 2
    audit = AuditLog(config.actions.audit_log, env=env)
    action = "kill" if getattr(args, "kill", False) else method
    base = {"key": key, "action": action, "mode": "manual", "trigger": None}
    audit.append({"event": "attempt", **base, "method": method})
    perform = controller.kill if action == "kill" else controller.stop
    try:
        result = _act_until_stopped(controller, lambda: perform(key, method=method))
    finally:
        controller.close()
        thaw_all()
    if result is None:
        result = ActionResult(key, action, False, "clawwatch was stopped before the action "
                              f"ended (it was cancelled, then given {CANCEL_WAIT_SECONDS:g} s)")
    audit.append({"event": "result", **base, "method": method, "ok": result.ok,
                  "detail": result.detail, "pids": list(result.pids),
                  "ambiguous": [info.as_record() for info in result.ambiguous],
                  "error": None if result.ok else result.detail})
    record = redact_record({**result.as_record(), "ts": now_iso()})
    if as_json:
        out.write(json_dumps(record) + "\n")   # DEL, C1, bidi escaped (display.py)
        if not result.ok:
            out.write(json_dumps({"type": "error", "ts": record["ts"],
                                  "source": "processes" if cli_key else "gateway",
                                  "message": redact_text(f"stop {key}: {result.detail}")})
                      + "\n")
    else:
        verdict = "done" if result.ok else "FAILED"
        print(printable(redact_text(f"clawwatch stop {key}: {verdict}: {result.detail}")),
              file=out if result.ok else err)
    if audit.last_error:
        print(printable(f"clawwatch stop: warning: {audit.last_error}"), file=err)
    return 0 if result.ok else 1


class _StopSignal(Exception):
    """A stop signal arrived while the action ran."""


def _act_until_stopped(controller, act: Callable[[], ActionResult]) -> ActionResult | None:
    """``act()`` on a worker thread; a stop signal (in the main thread) cancels it
    (``controller.cancel``) and waits ``CANCEL_WAIT_SECONDS`` more for it. Its result, or
    None when it did not end by then; what it raised is raised here."""
    outcome: list[ActionResult | Exception] = []
    ended = threading.Event()

    def run() -> None:
        try:
            outcome.append(act())
        except Exception as exc:
            outcome.append(exc)
        finally:
            ended.set()

    def on_signal(signum, frame) -> None:
        raise _StopSignal(signum)

    worker = threading.Thread(target=run, name="clawwatch-stop", daemon=True)
    previous = {}
    try:
        if threading.current_thread() is threading.main_thread():
            for signum in STOP_SIGNALS:
                previous[signum] = signal.signal(signum, on_signal)
        worker.start()
        ended.wait()
    except _StopSignal:
        for signum in STOP_SIGNALS:
            signal.signal(signum, signal.SIG_IGN)
        controller.cancel()
        ended.wait(CANCEL_WAIT_SECONDS if worker.is_alive() else 0)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if outcome and isinstance(outcome[0], Exception):
        raise outcome[0]
    return outcome[0] if outcome else None


def _setup_problem(controller: GatewayActionController, method: str, found) -> str | None:
    if method == "cli":
        if not controller.openclaw_bin:
            return "--method cli needs the openclaw CLI (set $OPENCLAW_BIN or put it on PATH)"
        return None
    if not controller.url:
        tried = "; ".join(found.tried) or "nothing"
        return ("no gateway URL: pass --gateway ws://HOST:PORT, set $OPENCLAW_GATEWAY_URL, or "
                f"point --state-dir at an OpenClaw with gateway.port set (looked at: {tried})")
    return gateway_url_problem(controller.url)

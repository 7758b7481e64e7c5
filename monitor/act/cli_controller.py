"""Stop and kill for Claude Code and Codex sessions (keys ``claude-code:<id>``, ``codex:<id>``).

Neither CLI has a gateway: ``CliAgentController`` finds the session's transcript under the
source dirs (``locate_transcript``), the CLI process that writes it (``cli_agents.find_cli``,
evidence that agrees) and signals it (``cli_agent_signals``), behind the same interface as
``GatewayActionController`` (``monitor.act.api.ActionController``):

* ``stop(key)``: SIGINT to the CLI (the user's Ctrl-C: a ``-p``/``exec`` run exits, an
  interactive one interrupts its turn); ``method`` is kept for the record (every method
  means SIGINT here). Waits up to ``confirm_seconds`` to say whether the CLI exited.
* ``kill(key)``: the CLI is frozen (SIGSTOP) so it cannot start another tool, each of its
  tool process groups is ended (SIGTERM, SIGKILL after the grace, verified), then the CLI
  gets SIGINT (the run ends, like the gateway's abort) and is resumed; with
  ``include_cli`` (or ``kill_cli=True``) the CLI itself is ended instead (SIGTERM, SIGKILL).
  Then a tool's background job that left its group and was orphaned, out of the CLI's tree
  with its environment still naming the session, is ended too
  (``cli_agent_signals.orphaned_tools``).
* ``kill_candidates(key)``: the CLI's tool groups and orphaned tool processes (what
  ``kill`` ends); when the evidence does not name one CLI process, the candidates, marked
  ambiguous (left alone).
* ``cancel()`` (clawwatch is stopping; any thread): a kill under way waits for no grace
  any more (what SIGTERM did not end gets SIGKILL at once) and resumes its CLI; no wait
  for a CLI to exit goes on.

When the evidence is ambiguous (several CLIs tied to the session, several untied in its cwd,
a transcript found twice, …) nothing is signalled: the result is not ok, its detail says
why, and the candidates are listed in ``ActionResult.ambiguous``. Details are redacted.

``RoutingController`` sends those keys here and every other key to the gateway controller;
other attributes (``gateway_process``, ``start_listening``, ``listen_error``, …) are the
gateway controller's.
"""

from __future__ import annotations

import fnmatch
import glob
import os
import re
import signal
import threading
from collections.abc import Iterable, Mapping

import psutil

from monitor.act import cli_agent_signals as sig
from monitor.act.api import ActionKind, ActionResult, ProcessInfo
from monitor.act.cli_agents import SOURCES, CliSession, Lookup, find_cli
from monitor.act.cli_freeze import freeze, thaw
from monitor.act.processes import KillOutcome, KillRefused, group_snapshot, kill_stragglers
from monitor.discovery import claude_dir_candidates
from monitor.redaction import clip_redacted, redact_text

CONFIRM_SECONDS = 2.0
MAX_MATCHES = 8
#: Directories below a Codex dir looked in: ``<home>/sessions/YYYY/MM/DD``.
CODEX_DEPTH = 4
_SAFE_SESSION_ID = re.compile(r"[A-Za-z0-9._-]{1,128}\Z", re.ASCII)


def split_key(session_key: str) -> tuple[str, str] | None:
    """``(source, session_id)`` for a ``claude-code:<id>`` / ``codex:<id>`` key, else None."""
    source, sep, session_id = session_key.partition(":")
    if sep and source in SOURCES and session_id:
        return source, session_id
    return None


def is_cli_key(session_key: str) -> bool:
    return split_key(session_key) is not None


def _dirs(value: str | Iterable[str] | None) -> list[str]:
    if value is None:
        return []
    items = [value] if isinstance(value, str) else list(value)
    return [os.path.expanduser(item) for item in items if item]


def default_claude_dirs(env: Mapping[str, str] | None = None) -> list[str]:
    """The dirs ``watch`` and ``replay`` read Claude Code transcripts from when no
    ``--claude-dir`` is given (``discovery.claude_dir_candidates``), whether they exist yet
    or not: a session they show is one ``stop`` finds."""
    return claude_dir_candidates(os.environ if env is None else env)


def default_codex_dirs(env: Mapping[str, str] | None = None) -> list[str]:
    """``$CODEX_HOME/sessions`` (default ``~/.codex/sessions``)."""
    env = os.environ if env is None else env
    home = env.get("CODEX_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"),
                                                 ".codex")
    return [os.path.join(os.path.expanduser(home), "sessions")]


def _matches(source: str, session_id: str, folder: str) -> list[str]:
    sid = glob.escape(session_id)
    if source == "claude-code":     # <projects>/<encoded-cwd>/<id>.jsonl (or a config dir)
        patterns = [os.path.join(glob.escape(folder), "*", f"{sid}.jsonl"),
                    os.path.join(glob.escape(folder), "projects", "*", f"{sid}.jsonl")]
        found = [path for pattern in patterns for path in glob.glob(pattern)]
    else:                           # <sessions>/YYYY/MM/DD/rollout-*-<id>.jsonl
        found = _files_below(folder, f"rollout-*-{sid}.jsonl", CODEX_DEPTH)
    return [path for path in found if os.path.isfile(path)]


def _files_below(folder: str, pattern: str, depth: int) -> list[str]:
    """The entries named like ``pattern`` in ``folder`` and the directories at most
    ``depth`` levels below it, symlinked directories not entered (as the sources walk):
    two symlinks to ``.`` made a recursive glob list 2**40 paths, and a deep tree exhausted
    its recursion."""
    found = []
    pending = [(folder, 0)]
    while pending:
        directory, level = pending.pop()
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    if fnmatch.fnmatchcase(entry.name, pattern):
                        found.append(entry.path)
                    elif level < depth and entry.is_dir(follow_symlinks=False):
                        pending.append((entry.path, level + 1))
        except OSError:
            continue
    return sorted(found)


def locate_transcript(source: str, session_id: str, dirs: Iterable[str]
                      ) -> tuple[str | None, str]:
    """The one transcript of the session under ``dirs``, or None and why not (not found,
    or found more than once: then which one is meant is not known)."""
    if source not in SOURCES:
        return None, f"unknown source {source!r}"
    if not _SAFE_SESSION_ID.match(session_id) or session_id in (".", ".."):
        return None, f"not a {source} session id: {session_id!r}"
    folders = [folder for folder in dict.fromkeys(_dirs(dirs)) if os.path.isdir(folder)]
    found: list[str] = []
    for folder in folders:
        for path in _matches(source, session_id, folder):
            real = os.path.realpath(path)
            if real not in found:
                found.append(real)
    looked = ", ".join(_dirs(dirs)) or "no dir"
    if not found:
        return None, f"no transcript of {source} session {session_id} under {looked}"
    if len(found) > 1:
        shown = ", ".join(found[:MAX_MATCHES])
        return None, (f"ambiguous: {len(found)} transcripts of {source} session {session_id} "
                      f"({shown})")
    return found[0], found[0]


def _ambiguous_candidates(lookup: Lookup) -> tuple[ProcessInfo, ...]:
    infos = []
    for proc in lookup.candidates:
        reasons = proc.ties or ("a candidate not tied to the session",)
        command = clip_redacted(" ".join(proc.argv), 200)
        infos.append(ProcessInfo(proc.pid, proc.create_time, command, None,
                                 "ambiguous: " + "; ".join(reasons), ambiguous=True,
                                 reasons=tuple(reasons)))
    return tuple(infos)


def _described(procs: list[psutil.Process]) -> list[tuple[psutil.Process, float, str]]:
    """Each process with its create time and its command (redacted, cut), while it runs."""
    described = []
    for proc in procs:
        try:
            described.append((proc, proc.create_time(),
                              clip_redacted(" ".join(proc.cmdline()), 200)))
        except psutil.Error:
            continue
    return described


class CliAgentController:
    """Performs stop and kill on Claude Code / Codex CLI processes (module docstring)."""

    def __init__(self, *, claude_dirs: str | Iterable[str] | None = None,
                 codex_dirs: str | Iterable[str] | None = None, config=None,
                 env: Mapping[str, str] | None = None, kill_grace: float | None = None,
                 confirm_seconds: float = CONFIRM_SECONDS, kill_cli: bool = False) -> None:
        """``claude_dirs``: Claude Code projects dirs (``--claude-dir``), ``codex_dirs``:
        Codex sessions dirs (``--codex-dir``); None means the defaults (``$CLAUDE_CONFIG_DIR``
        / ``$CODEX_HOME``, then the home dirs)."""
        self.claude_dirs = _dirs(claude_dirs) if claude_dirs is not None \
            else default_claude_dirs(env)
        self.codex_dirs = _dirs(codex_dirs) if codex_dirs is not None \
            else default_codex_dirs(env)
        if kill_grace is None:
            kill_grace = config.actions.kill_grace_seconds if config is not None else 3.0
        self.kill_grace = kill_grace
        self.confirm_seconds = confirm_seconds
        self.kill_cli = kill_cli
        self.stopping = threading.Event()

    # ------------------------------------------------------------------ finding

    def session(self, session_key: str) -> tuple[CliSession | None, str]:
        """The key's session (with its transcript), or None and why not."""
        parts = split_key(session_key)
        if parts is None:
            return None, f"not a Claude Code or Codex session key: {session_key!r}"
        source, session_id = parts
        dirs = self.claude_dirs if source == "claude-code" else self.codex_dirs
        path, why = locate_transcript(source, session_id, dirs)
        if path is None:
            return None, why
        return CliSession(source, session_id, path), path

    def lookup(self, session_key: str) -> tuple[CliSession | None, Lookup]:
        session, why = self.session(session_key)
        if session is None:
            return None, Lookup(None, why)
        return session, find_cli(session)

    def _refused(self, key: str, action: ActionKind, trigger: str | None, lookup: Lookup
                 ) -> ActionResult:
        return ActionResult(key, action, False, redact_text(f"refused: {lookup.reason}; "
                                                            "nothing was signalled"),
                            trigger, (), _ambiguous_candidates(lookup))

    # ------------------------------------------------------------------ stop

    def stop(self, session_key: str, *, method: ActionKind = "abort",
             trigger: str | None = None) -> ActionResult:
        session, lookup = self.lookup(session_key)
        if session is None or lookup.process is None:
            return self._refused(session_key, method, trigger, lookup)
        target = lookup.process.target
        outcome = sig.stop_cli(session, target)
        if not outcome.ok:
            return ActionResult(session_key, method, False, redact_text(outcome.detail),
                                trigger)
        after = self._exit_note(sig.wait_exit(target, self.confirm_seconds, self.stopping))
        return ActionResult(session_key, method, True,
                            redact_text(f"{outcome.detail}; {after}; found by {lookup.reason}"),
                            trigger, tuple(outcome.signalled))

    # ------------------------------------------------------------------ kill

    def kill_candidates(self, session_key: str) -> list[ProcessInfo]:
        session, lookup = self.lookup(session_key)
        if session is None:
            return []
        if lookup.process is None:
            return list(_ambiguous_candidates(lookup)) if lookup.ambiguous else []
        evidence = f"tool group of {session.source} pid {lookup.process.pid} ({lookup.reason})"
        groups = [ProcessInfo(group.pid, group.create_time, group.command, session_key,
                              evidence, reasons=(evidence,))
                  for group in sig.tool_groups(session, lookup.process.target)]
        orphaned = "orphaned tool process: its environment names the session"
        return groups + [ProcessInfo(proc.pid, created, command, session_key, orphaned,
                                     reasons=(orphaned,))
                         for proc, created, command in _described(
                             sig.orphaned_tools(session, lookup.process.target))]

    def kill(self, session_key: str, *, trigger: str | None = None,
             method: ActionKind = "abort", include_cli: bool | None = None) -> ActionResult:
        """End the CLI's tool groups, then SIGINT the CLI (or, with ``include_cli``, end
        it). ``method`` is accepted for the gateway controller's signature."""
        include_cli = self.kill_cli if include_cli is None else include_cli
        session, lookup = self.lookup(session_key)
        if session is None or lookup.process is None:
            return self._refused(session_key, "kill", trigger, lookup)
        target = lookup.process.target
        groups = sig.tool_groups(session, target)
        snapshots = [proc for group in groups for proc in group_snapshot(group.pid)]
        if include_cli:
            outcomes = sig.kill_tools(session, target, grace=self.kill_grace,
                                      include_cli=True, stopping=self.stopping)
            ended = None
        else:
            outcomes, ended = self._kill_tools_then_interrupt(session, target)
        orphans = [proc for proc in sig.orphaned_tools(session, target)
                   if proc not in snapshots]
        leftovers = kill_stragglers(snapshots + orphans, grace=self.kill_grace,
                                    stopping=self.stopping)
        failed = [o for o in outcomes if not o.ok]
        pids = sorted({proc.pid for proc in snapshots + orphans}
                      | {pid for o in outcomes for pid in o.signalled})
        tools = [o for o in outcomes if o.ok and o.pid != target[0]]
        killed = sum(1 for o in tools if o.signalled)
        parts = [f"{session.source} pid {target[0]} ({lookup.reason})",
                 f"{killed} tool group(s) killed, {len(tools) - killed} ended by themselves"]
        parts += [o.detail for o in outcomes if o.ok and o.pid == target[0]]
        if orphans:
            parts.append(f"{len(orphans)} orphaned tool process(es) ended (their environment "
                         f"names the session): {sorted(proc.pid for proc in orphans)}")
        if ended is not None:
            parts.append("sent SIGINT to the CLI; " + self._exit_note(ended))
        parts += [o.detail for o in failed]
        if leftovers:
            parts.append(f"still alive: {leftovers}")
        ok = not failed and not leftovers
        return ActionResult(session_key, "kill", ok, redact_text("; ".join(parts)), trigger,
                            tuple(pids))

    def _exit_note(self, ended: bool) -> str:
        """What became of the CLI after its SIGINT."""
        if ended:
            return "it exited"
        if self.stopping.is_set():
            return "its exit was not waited for (clawwatch is stopping)"
        return (f"still running after {self.confirm_seconds:g} s (an interactive session "
                "interrupts its turn)")

    def _kill_tools_then_interrupt(self, session: CliSession, target: tuple[int, float]
                                   ) -> tuple[list[KillOutcome], bool | None]:
        """Freeze the CLI, kill its tool groups, queue SIGINT, resume it: it cannot start
        another tool in between, and handles the interrupt as soon as it runs again."""
        try:
            cli = sig.verify_cli(session, target)
            freeze(cli)
        except KillRefused as exc:
            return [KillOutcome(target[0], False, f"refused: {exc}")], None
        except psutil.Error as exc:
            return [KillOutcome(target[0], False, f"refused: pid {target[0]}: {exc}")], None
        interrupted = False
        try:
            outcomes = [sig.kill_group(cli, group, session, grace=self.kill_grace,
                                       stopping=self.stopping)
                        for group in sig.tool_groups(session, target)]
            try:
                sig.verify_cli(session, target)
                cli.send_signal(signal.SIGINT)
                interrupted = True
            except (KillRefused, psutil.Error) as exc:
                outcomes.append(KillOutcome(target[0], False, f"no SIGINT to the CLI: {exc}"))
        finally:
            thaw(cli)
        if not interrupted:
            return outcomes, None
        return outcomes, sig.wait_exit(target, self.confirm_seconds, self.stopping)

    def cancel(self) -> None:
        """clawwatch is stopping: an action under way finishes without waiting (see the
        module docstring)."""
        self.stopping.set()

    def close(self) -> None:
        self.cancel()


class RoutingController:
    """``claude-code:``/``codex:`` keys to ``cli``, every other key to ``gateway``."""

    def __init__(self, gateway, cli: CliAgentController) -> None:
        self.gateway = gateway
        self.cli = cli

    def __getattr__(self, name: str):
        if name in ("gateway", "cli"):       # not set yet (copying): no recursion
            raise AttributeError(name)
        return getattr(self.gateway, name)

    def for_key(self, session_key: str):
        return self.cli if is_cli_key(session_key) else self.gateway

    def stop(self, session_key: str, *, method: ActionKind = "abort",
             trigger: str | None = None) -> ActionResult:
        return self.for_key(session_key).stop(session_key, method=method, trigger=trigger)

    def kill_candidates(self, session_key: str) -> list[ProcessInfo]:
        return self.for_key(session_key).kill_candidates(session_key)

    def kill(self, session_key: str, *, trigger: str | None = None, **options) -> ActionResult:
        return self.for_key(session_key).kill(session_key, trigger=trigger, **options)

    def cancel(self) -> None:
        """Both controllers' ``cancel`` (the gateway's when it has one)."""
        self.cli.cancel()
        cancel_gateway = getattr(self.gateway, "cancel", None)
        if cancel_gateway is not None:
            cancel_gateway()

    def close(self) -> None:
        try:
            self.cli.close()
        finally:
            self.gateway.close()


def routed(gateway, config=None, *, discovered=None, claude_dirs=None, codex_dirs=None,
           env: Mapping[str, str] | None = None):
    """``gateway`` behind a ``RoutingController`` (unchanged when it already is one). The
    dirs default to ``discovered.claude_dirs`` / ``discovered.codex_dirs`` when it has
    them, else to ``CliAgentController``'s defaults."""
    if isinstance(gateway, RoutingController):
        return gateway
    if claude_dirs is None:
        claude_dirs = getattr(discovered, "claude_dirs", None)
    if codex_dirs is None:
        codex_dirs = getattr(discovered, "codex_dirs", None)
    return RoutingController(gateway, CliAgentController(
        claude_dirs=claude_dirs, codex_dirs=codex_dirs, config=config, env=env))

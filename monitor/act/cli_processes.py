"""What a Claude Code or Codex CLI process looks like in the process table (psutil, read-only).

Layouts (verified with Claude Code 2.1.332 and Codex 0.171.0, see tests/e2e/):

- Claude Code is a native binary (``…/@anthropic-ai/claude-code/bin/claude.exe``, started as
  ``claude``: process name ``claude``); older or ``--ignore-scripts`` installs run
  ``node …/@anthropic-ai/claude-code/cli.js`` or ``cli-wrapper.cjs``. It holds
  ``/tmp/claude-<uid>/<encoded-cwd>/<sessionId>/tasks`` open, not the transcript. Each Bash
  call is ``/bin/bash -c 'source <snapshot> … eval <command>'``, a child that leads its own
  session and process group, with ``CLAUDE_CODE_SESSION_ID=<sessionId>`` in its environment.
- Codex's ``bin/codex.js`` (node) execs the native binary (``…/vendor/<triple>/bin/codex``,
  process name ``codex``) when node has ``process.execve`` (node >= 23), else spawns it as a
  child with the same arguments and forwards signals. The native process holds its
  ``rollout-*.jsonl`` open. Each ``exec_command`` runs ``bash -lc <command>`` (often exec'd
  into the command itself) as a child leading its own session and group, with
  ``CODEX_SESSION_ID``/``CODEX_THREAD_ID=<sessionId>`` in its environment.

Everything here only reads: ``monitor.act.cli_agents`` decides which process writes a
session, ``monitor.act.cli_agent_signals`` signals it.
"""

from __future__ import annotations

import os
import re
import shlex

import psutil

CLI_NAMES = {"claude-code": ("claude", "claude.exe"), "codex": ("codex",)}
PACKAGE_DIRS = {"claude-code": "@anthropic-ai/claude-code/", "codex": "@openai/codex"}
PACKAGE_SCRIPTS = {"claude-code": ("cli.js", "cli.mjs", "cli-wrapper.cjs"), "codex": ("codex.js",)}
SESSION_ENV = {"claude-code": ("CLAUDE_CODE_SESSION_ID",),
               "codex": ("CODEX_SESSION_ID", "CODEX_THREAD_ID")}
_CLAUDE_EVAL_RE = re.compile(r"&& eval ('(?:[^']|'\\'')*')")  # eval '<command>' (quoted)
EVAL_FLAGS = ("-c", "-lc", "-ic", "-e", "--eval", "-p", "--print")  # the next arg is code
#: What runs the CLI's npm launcher when it is started by its own name (``#!/usr/bin/env node``)
_JS_RUNTIME_RE = re.compile(r"(node|nodejs|bun|deno)[0-9.]*(\.exe)?\Z")


def argv_of(proc: psutil.Process) -> list[str]:
    try:
        return proc.cmdline()
    except (psutil.Error, OSError):
        return []


def environ_of(proc: psutil.Process) -> dict[str, str]:
    try:
        return proc.environ()
    except (psutil.Error, OSError):
        return {}


def live_with_env(name: str, value: str) -> list[psutil.Process]:
    """Every live (not zombie) process whose environment has ``name=value``: a CLI and the
    tool processes it started inherit what it was started with."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get(name) == value and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (psutil.Error, OSError):
            continue
    return found


def cwd_of(proc: psutil.Process) -> str | None:
    try:
        return os.path.realpath(proc.cwd())
    except (psutil.Error, OSError):
        return None


def working_dirs(proc: psutil.Process, argv: list[str], source: str) -> set[str]:
    """Where the CLI works: its cwd and, for Codex, the ``-C``/``--cd`` dir it was given
    (``-C DIR``, ``-CDIR``, ``-C=DIR``, ``--cd DIR``, ``--cd=DIR``: Codex 0.171.0 records
    that dir as the session's cwd without changing its own)."""
    cwd = cwd_of(proc)
    if cwd is None:
        return set()
    found = {cwd}
    if source == "codex":
        for index, arg in enumerate(argv[1:], start=1):
            if arg in ("-C", "--cd"):
                if index + 1 >= len(argv):
                    continue
                value = argv[index + 1]
            elif arg.startswith("--cd="):
                value = arg.removeprefix("--cd=")
            elif arg.startswith("-C"):
                value = arg[2:].removeprefix("=")
            else:
                continue
            if value:
                found.add(os.path.realpath(os.path.join(cwd, value)))
    return found


def runs_in(proc: psutil.Process, cwd: str, source: str) -> bool:
    return cwd in working_dirs(proc, argv_of(proc), source)


def owned_by_me(proc: psutil.Process) -> bool:
    try:
        return proc.uids().real == os.getuid()
    except psutil.Error:
        return False


def open_paths(proc: psutil.Process) -> list[str]:
    """Every path the process holds open, directories included (psutil's ``open_files``
    lists regular files only, and Claude Code holds its session directory)."""
    fd_dir = f"/proc/{proc.pid}/fd"
    try:
        names = os.listdir(fd_dir)
    except OSError:
        try:
            return [item.path for item in proc.open_files()]
        except (psutil.Error, OSError):
            return []
    paths = []
    for name in names:
        try:
            target = os.readlink(os.path.join(fd_dir, name))
        except OSError:
            continue
        if target.startswith("/"):
            paths.append(target.removesuffix(" (deleted)"))
    return paths


def cli_entry(argv: list[str], name: str, source: str) -> int | None:
    """Where ``source``'s CLI is in argv (its arguments follow), or None when the process is
    not that CLI: a native binary (``argv[0]``, or the process name of a binary or script
    started by its own name) or an interpreter running the CLI's launcher (a file named like
    the CLI, run by node, bun or deno or by its shebang, which names the process after it;
    or a known script of its npm package). A shell whose ``-c`` command merely mentions the
    package is not the CLI, nor another program given a file or name like the CLI's
    (``man claude``, ``ssh codex``)."""
    if not argv:
        return None
    names = CLI_NAMES[source]
    if os.path.basename(argv[0]) in names:
        return 0
    at = next((i for i, arg in enumerate(argv[1:], start=1) if not arg.startswith("-")), None)
    script = argv[at] if at is not None and argv[at - 1] not in EVAL_FLAGS else ""
    base = os.path.basename(script)
    runs_launcher = name in names or _JS_RUNTIME_RE.match(os.path.basename(argv[0]))
    if (base in names and runs_launcher) \
            or (base in PACKAGE_SCRIPTS[source] and PACKAGE_DIRS[source] in script):
        return at
    return 0 if name in names else None


def cli_arguments(argv: list[str], name: str, source: str) -> list[str] | None:
    """The arguments given to the CLI (what follows its entry in argv), or None."""
    at = cli_entry(argv, name, source)
    return None if at is None else argv[at + 1:]


def process_name(proc: psutil.Process) -> str:
    try:
        return proc.name()
    except (psutil.Error, OSError):
        return ""


def looks_like_cli(proc: psutil.Process, source: str) -> bool:
    return cli_entry(argv_of(proc), process_name(proc), source) is not None


def tool_children(proc: psutil.Process) -> list[psutil.Process]:
    """The CLI's direct children that lead their own process group (its tool calls)."""
    try:
        children = proc.children()
        own_group = os.getpgid(proc.pid)
    except (psutil.Error, OSError):
        return []
    leaders = []
    for child in children:
        try:
            group = os.getpgid(child.pid)
        except OSError:
            continue
        if group == child.pid and group != own_group:
            leaders.append(child)
    return leaders


def marked_session(proc: psutil.Process, source: str) -> str | None:
    """The session id a tool process's environment names (``CLAUDE_CODE_SESSION_ID``,
    ``CODEX_SESSION_ID``/``CODEX_THREAD_ID``), if any."""
    env = environ_of(proc)
    return next((env[key] for key in SESSION_ENV[source] if env.get(key)), None)


def tool_command(argv: list[str]) -> str:
    """The command a tool process runs: the quoted ``eval`` of Claude Code's ``bash -c``
    wrapper (after its shell-snapshot preamble), the ``-lc`` body of Codex's ``bash -lc``,
    else the argv joined."""
    if len(argv) >= 3 and argv[-2] in ("-c", "-lc"):
        found = _CLAUDE_EVAL_RE.search(argv[-1])
        if found:
            try:
                return shlex.split(found.group(1))[0]
            except (ValueError, IndexError):
                pass
        if argv[-2] == "-lc":
            return argv[-1]
    return " ".join(argv)

"""The demo's Claude Code session: a real child process that looks like ``claude -p`` and loops.

``DemoClaude`` installs a small stdlib-only Python script as an executable named ``claude``
(``<root>/claude-code/bin/claude``) and runs it as

    claude -p "Keep checking the project directory until it changes." \\
        --session-id <uuid> --allowedTools Bash

in its own session, with its cwd the project dir (``<root>/loop-project``) and
``CLAUDE_CONFIG_DIR=<root>/claude``, so that to ``monitor.act.cli_agents.find_cli`` it is the
Claude Code CLI of its session: process name and argv entry ``claude``, this user's, in the
session's cwd, its config dir holding the transcript, argv naming the session id, holding
``$CLAUDE_CODE_TMPDIR/claude-<uid>/<encoded-cwd>/<sessionId>/tasks`` open (not the
transcript, which it appends to line by line) as the real one does, and each ``Bash`` call
a child ``/bin/sh -c "true && eval '<command>' < /dev/null"`` that leads its own session and
process group with ``CLAUDE_CODE_SESSION_ID=<sessionId>`` in its environment.

It writes ``<root>/claude/projects/<encoded-cwd>/<sessionId>.jsonl`` in the line shapes the
real client (2.1.332) writes (see tests/fixtures/claude_code/captured/): the prompt's
``queue-operation`` and ``user`` lines, then per turn an ``assistant`` reply written as two
lines (a text block, then the ``Bash`` ``tool_use`` block, same ``message.id``/``requestId``/
``usage``) and the ``user`` ``tool_result`` line; the same command with the same output every
turn. On SIGINT (Ctrl-C, clawwatch's stop) it ends the running tool's group, writes the
rejected ``tool_result`` and ``[Request interrupted by user for tool use]`` (or
``[Request interrupted by user]`` between tools) and exits, like the real one.

It never outlives the demo: ``close()`` ends it (SIGTERM, then SIGKILL, its tool groups
too); it exits by itself when its stdin (a pipe whose other end only the demo holds) reaches
end of file, which is when the demo's process ends however it ends; and on Linux it also
asks for SIGTERM when its parent dies (``PR_SET_PDEATHSIG``, checked against a parent that
is already gone; asked for only when the demo's main thread starts it, as the signal
follows the thread that forked). Every process it starts carries ``MARK_ENV=<root>`` in
its environment.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from contextlib import suppress
from pathlib import Path

import psutil

from monitor.act.cli_processes import live_with_env

MARK_ENV = "CLAUDE_DEMO_MARK"       # = the demo root, on the fake CLI and its tool calls
PACE_ENV = "CLAUDE_DEMO_PACE"       # seconds each Bash call takes
PARENT_ENV = "CLAUDE_DEMO_PARENT"   # the demo's pid: the fake asks for PR_SET_PDEATHSIG
PROMPT = "Keep checking the project directory until it changes."
PROJECT = "loop-project"
VERSION = "2.1.332"
STOP_TIMEOUT = 3.0

FAKE_CLAUDE = r'''
"""A stand-in for the Claude Code CLI (``claude -p``) in clawwatch's demo: see
monitor/demo/claude_cli.py. Standard library only."""
import ctypes, json, os, re, shlex, signal, subprocess, sys, threading, time, uuid
from datetime import datetime, timezone


def pdeathsig():
    """SIGTERM when the thread that started this process ends (Linux; only asked for when
    the demo started it from its main thread, which lives as long as the demo)."""
    if os.environ.get("CLAUDE_DEMO_PARENT") is None:
        return
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)   # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def arg(flag):
    argv = sys.argv[1:]
    return argv[argv.index(flag) + 1] if flag in argv[:-1] else None


pdeathsig()
state = {"signal": None, "tool": None}


def on_signal(signum, frame):
    if state["signal"] is None:
        state["signal"] = signum
    tool = state["tool"]
    if tool is not None:
        try:
            os.killpg(tool.pid, signal.SIGTERM)
        except OSError:
            pass


signal.signal(signal.SIGINT, on_signal)
signal.signal(signal.SIGTERM, on_signal)
signal.signal(signal.SIGHUP, on_signal)


def watch_parent():     # stdin is a pipe only the demo holds: EOF = the demo is gone
    try:
        while os.read(0, 4096):
            pass
    except OSError:
        pass
    os.kill(os.getpid(), signal.SIGTERM)


if os.environ.get("CLAUDE_DEMO_PARENT") not in (None, str(os.getppid())):
    sys.exit(143)       # the demo was gone before PR_SET_PDEATHSIG was in place
threading.Thread(target=watch_parent, daemon=True).start()

session = arg("--session-id") or str(uuid.uuid4())
prompt = arg("-p") or arg("--print") or ""
cwd = os.path.realpath(os.getcwd())
encoded = re.sub(r"[^A-Za-z0-9]", "-", cwd)
config_dir = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.expanduser("~/.claude")
pace = float(os.environ.get("CLAUDE_DEMO_PACE") or "0.25")
tasks = os.path.join(os.environ.get("CLAUDE_CODE_TMPDIR") or "/tmp", f"claude-{os.getuid()}",
                     encoded, session, "tasks")
os.makedirs(tasks, exist_ok=True)
tasks_fd = os.open(tasks, os.O_RDONLY | os.O_DIRECTORY)      # held open, as the real one does
path = os.path.join(config_dir, "projects", encoded, session + ".jsonl")
os.makedirs(os.path.dirname(path), exist_ok=True)
common = {"userType": "external", "entrypoint": "sdk-cli", "cwd": cwd, "sessionId": session,
          "version": "VERSION", "gitBranch": "HEAD"}
last = {"uuid": None}


def now():
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def write(entry):      # appended per line, the file not held open (as the real one does)
    out = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(out, (json.dumps(entry, separators=(",", ":")) + "\n").encode())
    finally:
        os.close(out)


def line(entry, chained=True):
    entry = {"parentUuid": last["uuid"], "isSidechain": False, **entry,
             "uuid": str(uuid.uuid4()), "timestamp": now(), **common}
    write(entry)
    if chained:
        last["uuid"] = entry["uuid"]
    return entry


def hexid(prefix):
    return prefix + uuid.uuid4().hex[:24]


def finish(tool_id):
    if state["signal"] != signal.SIGINT:
        sys.exit(128 + (state["signal"] or signal.SIGTERM))
    if tool_id is not None:
        line({"promptId": prompt_id, "type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "content": "The user doesn't want to proceed with this "
             "tool use. The tool use was rejected (eg. if it was a file edit, the new_string "
             "was NOT written to the file). STOP what you are doing and wait for the user to "
             "tell you how to proceed.", "is_error": True, "tool_use_id": tool_id}]},
             "toolUseResult": "User rejected tool use", "toolDenialKind": "user-rejected",
             "sourceToolAssistantUUID": last["uuid"]})
    text = "[Request interrupted by user for tool use]" if tool_id else \
        "[Request interrupted by user]"
    line({"promptId": prompt_id, "type": "user",
          "message": {"role": "user", "content": [{"type": "text", "text": text}]},
          "rowSource": "harness"})
    sys.exit(130)


prompt_id = str(uuid.uuid4())
write({"type": "queue-operation", "operation": "enqueue", "timestamp": now(),
       "sessionId": session, "content": prompt})
write({"type": "queue-operation", "operation": "dequeue", "timestamp": now(),
       "sessionId": session})
line({"promptId": prompt_id, "type": "user", "message": {"role": "user", "content": prompt},
      "permissionMode": "default", "promptSource": "sdk"})
command = f"sleep {pace:g} && ls {shlex.quote(cwd)}"
env = {key: value for key, value in os.environ.items()
       if key not in ("CLAUDE_DEMO_PACE", "CLAUDE_DEMO_PARENT")}
env["CLAUDE_CODE_SESSION_ID"] = session
turn = 0
while True:
    if state["signal"] is not None:
        finish(None)
    turn += 1
    message_id, request_id = hexid("msg_"), hexid("req_")
    usage = {"input_tokens": 6, "cache_creation_input_tokens": 40,
             "cache_read_input_tokens": 1200 + 100 * turn, "output_tokens": 23,
             "service_tier": "standard"}
    tool_id = hexid("toolu_")
    for index, block in enumerate(({"type": "text", "text": "Let me look again."},
                                   {"type": "tool_use", "id": tool_id, "name": "Bash",
                                    "input": {"command": command,
                                              "description": "List the directory again"}})):
        line({"message": {"id": message_id, "type": "message", "role": "assistant",
                          "model": "claude-sonnet-4-5", "content": [block],
                          "stop_reason": "tool_use", "stop_sequence": None, "usage": usage},
              "apiBlockIndex": index, "requestId": request_id, "type": "assistant"})
    if state["signal"] is not None:
        finish(tool_id)
    tool = subprocess.Popen(["/bin/sh", "-c", f"true && eval {shlex.quote(command)} "
                             "< /dev/null"], cwd=cwd, env=env, start_new_session=True,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, close_fds=True)
    state["tool"] = tool
    if state["signal"] is not None:
        on_signal(state["signal"], None)
    stdout, stderr = tool.communicate()
    state["tool"] = None
    if state["signal"] is not None:
        finish(tool_id)
    output = stdout.decode(errors="replace").rstrip("\n")
    line({"promptId": prompt_id, "type": "user", "message": {"role": "user", "content": [
          {"tool_use_id": tool_id, "type": "tool_result", "content": output,
           "is_error": tool.returncode != 0}]},
          "toolUseResult": {"stdout": output, "stderr": stderr.decode(errors="replace"),
                            "interrupted": False, "isImage": False,
                            "noOutputExpected": False},
          "sourceToolAssistantUUID": last["uuid"]})
'''.replace('"VERSION"', repr(VERSION))


def encode_cwd(cwd: str) -> str:
    """Claude Code's project folder name for a cwd (``/tmp/w`` -> ``-tmp-w``)."""
    return re.sub(r"[^A-Za-z0-9]", "-", cwd)


class DemoClaude:
    """The fake ``claude -p`` of the demo under ``root`` (module docstring)."""

    def __init__(self, root: Path, *, pace: float = 0.25) -> None:
        self.root = Path(root)
        self.pace = pace
        self.config_dir = self.root / "claude"
        self.projects_dir = self.config_dir / "projects"
        self.project = Path(os.path.realpath(self.root / PROJECT))
        self.session_id = str(uuid.uuid4())
        self.key = f"claude-code:{self.session_id}"
        self.transcript = self.projects_dir / encode_cwd(str(self.project)) / \
            f"{self.session_id}.jsonl"
        self.executable = self.root / "claude-code" / "bin" / "claude"
        self.popen: subprocess.Popen | None = None
        self._pipe: int | None = None
        self.projects_dir.mkdir(parents=True, exist_ok=True)
        (self.project / "notes.txt").parent.mkdir(parents=True, exist_ok=True)
        (self.project / "notes.txt").write_text("nothing changes here\n")

    @property
    def argv(self) -> list[str]:
        return [str(self.executable), "-p", PROMPT, "--session-id", self.session_id,
                "--allowedTools", "Bash"]

    @property
    def pid(self) -> int | None:
        return self.popen.pid if self.popen is not None else None

    def start(self) -> DemoClaude:
        self.executable.parent.mkdir(parents=True, exist_ok=True)
        self.executable.write_text(f"#!{sys.executable} -I\n{FAKE_CLAUDE}")
        self.executable.chmod(0o755)
        env = {key: value for key, value in os.environ.items()
               if not key.startswith(("CLAUDE_", "ANTHROPIC_", "OPENCLAW_"))}
        env.update({"CLAUDE_CONFIG_DIR": str(self.config_dir),
                    "CLAUDE_CODE_TMPDIR": str(self.root / "claude-tmp"),
                    PACE_ENV: f"{self.pace:g}", MARK_ENV: str(self.root)})
        if sys.platform.startswith("linux") \
                and threading.current_thread() is threading.main_thread():
            env[PARENT_ENV] = str(os.getpid())
        read_end, self._pipe = os.pipe()
        try:
            self.popen = subprocess.Popen(
                self.argv, cwd=str(self.project), env=env, stdin=read_end,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True,
                start_new_session=True)
        finally:
            os.close(read_end)
        return self

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def processes(self) -> list[psutil.Process]:
        """Every live process that carries this demo's mark (the CLI and its tool calls)."""
        return live_with_env(MARK_ENV, str(self.root))

    def close(self) -> None:
        """End the CLI and its tool calls (SIGTERM, then SIGKILL); idempotent."""
        if self._pipe is not None:
            with suppress(OSError):
                os.close(self._pipe)
            self._pipe = None
        popen, self.popen = self.popen, None
        if popen is None:
            return
        if popen.poll() is None:
            with suppress(OSError):
                popen.send_signal(signal.SIGTERM)
            try:
                popen.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                with suppress(OSError):
                    popen.kill()
                with suppress(subprocess.TimeoutExpired):
                    popen.wait(timeout=STOP_TIMEOUT)
        deadline = time.monotonic() + STOP_TIMEOUT
        for sig in (signal.SIGTERM, signal.SIGKILL):      # any tool group it left behind
            left = self.processes()
            for proc in left:
                with suppress(psutil.Error, OSError):
                    proc.send_signal(sig)
            if left:
                psutil.wait_procs(left, timeout=max(0.1, deadline - time.monotonic()))

"""The demo gateway's exec children: harmless shells that play OpenClaw's exec calls.

Each is a process-group leader spawned by the demo process (which plays the gateway) with
``OPENCLAW_SHELL=exec`` in its environment, as OpenClaw's exec shells are. A background
exec also gets the ``task_runs`` row OpenClaw keeps for it in
``<state>/state/openclaw.sqlite``: ``running`` while it runs, then how it ended.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import sqlite3
import subprocess
import threading
import time
import uuid
from contextlib import closing, suppress
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from monitor.demo.sim.transcript import to_ms

TASK_RUNS_SQL = """
CREATE TABLE IF NOT EXISTS task_runs (
  task_id TEXT PRIMARY KEY, runtime TEXT, task_kind TEXT, requester_session_key TEXT,
  run_id TEXT, execution_owner_pid INTEGER, label TEXT, task TEXT, status TEXT, error TEXT,
  terminal_outcome TEXT, detail_json TEXT, created_at INTEGER, started_at INTEGER,
  ended_at INTEGER)
"""
END_GRACE_SECONDS = 3.0


@dataclass
class ExecChild:
    """One exec call's shell: a real process-group leader marked ``OPENCLAW_SHELL=exec``."""

    session_key: str
    run_id: str
    tool_call_id: str
    process_session: str
    command: str
    background: bool
    popen: subprocess.Popen = field(repr=False)
    create_time: float = 0.0
    ended: bool = False

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return not self.ended and self.popen.poll() is None

    def signal_group(self, signum: int) -> None:
        """Signal the child's process group while the child (its leader) is not yet
        reaped, so the group id cannot have been reused."""
        if self.popen.returncode is not None:
            return
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signum)


class ExecShells:
    """The exec children of one demo gateway (used from its thread and the demo's)."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self.children: list[ExecChild] = []
        self._lock = threading.Lock()

    def spawn(self, session_key: str, run_id: str, command: str, *,
              background: bool) -> ExecChild:
        """Start ``command`` as an exec shell of ``session_key``'s run ``run_id``."""
        env = {**os.environ, "OPENCLAW_SHELL": "exec"}
        popen = subprocess.Popen(["/bin/sh", "-c", command], env=env, start_new_session=True,
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, close_fds=True,
                                 cwd=str(self.state_dir))
        try:
            created = psutil.Process(popen.pid).create_time()
        except psutil.Error:
            created = time.time()
        child = ExecChild(session_key, run_id, f"call_{uuid.uuid4().hex[:16]}",
                          f"demo-{secrets.token_hex(3)}", command, background, popen, created)
        with self._lock:
            self.children.append(child)
        if background:
            self._record_task(child, "running")
        return child

    def live(self, session_key: str | None = None) -> list[ExecChild]:
        with self._lock:
            return [child for child in self.children if child.alive()
                    and (session_key is None or child.session_key == session_key)]

    def reap(self) -> list[ExecChild]:
        """Children that exited since the last call (their zombies are collected)."""
        gone = []
        with self._lock:
            for child in self.children:
                if not child.ended and child.popen.poll() is not None:
                    child.ended = True
                    gone.append(child)
        for child in gone:
            if child.background:
                code = child.popen.returncode
                signal_name = signal.Signals(-code).name if code < 0 else None
                self._record_task(child, "failed" if signal_name else "succeeded",
                                  {"exitCode": None if signal_name else code,
                                   "exitSignal": signal_name})
        return gone

    def end_all(self) -> None:
        """End every child: SIGTERM, then SIGKILL what is left after the grace."""
        with self._lock:
            children = list(self.children)
        for child in children:
            child.signal_group(signal.SIGTERM)
        deadline = time.monotonic() + END_GRACE_SECONDS
        for child in children:
            try:
                child.popen.wait(timeout=max(0.05, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.signal_group(signal.SIGKILL)
                with suppress(subprocess.TimeoutExpired):
                    child.popen.wait(timeout=2)
            child.ended = True

    def _task_db(self) -> Path:
        path = self.state_dir / "state" / "openclaw.sqlite"
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def _record_task(self, child: ExecChild, status: str, detail: dict | None = None) -> None:
        """The ``task_runs`` row OpenClaw keeps for a background exec."""
        try:
            with closing(sqlite3.connect(self._task_db(), timeout=2.0)) as conn, conn:
                conn.execute(TASK_RUNS_SQL)
                conn.execute(
                    "INSERT INTO task_runs (task_id, runtime, task_kind, requester_session_key,"
                    " run_id, execution_owner_pid, label, task, status, detail_json, created_at,"
                    " started_at, ended_at) VALUES (?, 'exec', 'exec', ?, ?, ?, ?, ?, ?, ?, ?,"
                    " ?, ?) ON CONFLICT(task_id) DO UPDATE SET status = excluded.status,"
                    " detail_json = excluded.detail_json, ended_at = excluded.ended_at",
                    (child.tool_call_id, child.session_key, f"exec:{child.process_session}",
                     os.getpid(), child.process_session, child.command, status,
                     json.dumps(detail or {}), to_ms(child.create_time), to_ms(child.create_time),
                     None if status == "running" else to_ms(time.time())))
        except sqlite3.Error:
            pass

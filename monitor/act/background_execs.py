"""The background execs OpenClaw's global DB (``state/openclaw.sqlite``) still lists as
running: its ``task_runs`` rows name the session that started each (``requester_session_key``),
the command (``task``), the process session (``run_id`` ``exec:<id>``) and the start time.

The table is not STRICT: a row whose session key is not a string is ignored, and a column
holding a value of the wrong type counts as absent.
"""

from __future__ import annotations

import os
import sqlite3
from contextlib import closing
from dataclasses import dataclass

from monitor.act.openclaw_db import connect_read_only
from monitor.act.record_values import epoch_number


@dataclass(frozen=True)
class BackgroundTask:
    """A ``task_runs`` row of a background exec that is still ``running``."""

    session_key: str
    process_session: str | None
    command: str
    started_at: float | None


def running_background_execs(state_dir: str | None) -> list[BackgroundTask]:
    """Background execs the global DB still lists as ``running``."""
    if not state_dir:
        return []
    path = os.path.join(state_dir, "state", "openclaw.sqlite")
    if not os.path.exists(path):
        return []
    try:
        with closing(connect_read_only(path)) as conn:
            rows = conn.execute(
                "SELECT requester_session_key, run_id, task, started_at, created_at "
                "FROM task_runs WHERE task_kind = 'exec' AND status = 'running'").fetchall()
    except sqlite3.Error:
        return []
    tasks = []
    for key, run_id, task, started_at, created_at in rows:
        if not key or not isinstance(key, str):
            continue        # a malformed row (the table is not STRICT): ignored
        process_session = run_id[5:] if isinstance(run_id, str) and run_id.startswith(
            "exec:") else None
        started = epoch_number(started_at) or epoch_number(created_at)
        tasks.append(BackgroundTask(key, process_session, task if isinstance(task, str) else "",
                                    started / 1000.0 if started else None))
    return tasks

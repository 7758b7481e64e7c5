"""Opening OpenClaw's SQLite databases to read the evidence of whose an exec shell is.

Agent DBs (``agents/<id>/agent/openclaw-agent.sqlite``) and the global DB
(``state/openclaw.sqlite``) are opened with ``mode=ro`` (``immutable=1`` when a WAL
database has no ``-wal``: nothing is created beside it), ``query_only``, with values capped
at ``MAX_ROW_BYTES`` and a table read that is not an ordinary table refused (``sqlite_guard``:
a view named ``task_runs`` that never ends held every kill): whoever can write under the
state dir can write these files.
"""

from __future__ import annotations

import sqlite3

from monitor.sources.regular import check_sqlite_files
from monitor.sources.sqlite_guard import guard, refuse_other_schema
from monitor.sources.sqlite_open import MAX_ROW_BYTES
from monitor.sources.sqlite_ro import read_only_uri

#: The tables the evidence readers query, in either database: each must be an ordinary table.
READ_TABLES = ("session_nodes", "transcript_events", "task_runs")


def connect_read_only(path: str) -> sqlite3.Connection:
    """A guarded, read-only connection to the database at ``path``. Every failure is a
    ``sqlite3.Error``: a database or side file that is not a regular file included."""
    try:
        check_sqlite_files(path)     # a FIFO or a device would block or never end
    except OSError as exc:
        raise sqlite3.OperationalError(f"unable to open database file: {exc}") from None
    try:
        uri, _ = read_only_uri(path)  # never creates a -wal/-shm beside it (see sqlite_ro)
    except OSError as exc:
        raise sqlite3.OperationalError(f"unable to open database file: {exc}") from None
    conn = guard(sqlite3.connect(uri, uri=True, timeout=2.0), MAX_ROW_BYTES)
    try:
        conn.execute("PRAGMA query_only=1")
        refuse_other_schema(conn, READ_TABLES)
    except sqlite3.Error:
        conn.close()
        raise
    return conn

"""Reading a database someone else wrote without letting it hold the reader.

An agent database is data like any transcript: whoever can write under the state dir can
write it. Four things keep a crafted one from stopping clawwatch:

* The tables read must be tables (``refuse_other_schema``). A view of the same name runs its
  own query on every read, an endless recursive one included, and a virtual table runs a
  module's code; either is refused with the database, as a schema OpenClaw never writes.
* No value longer than the cap a connection is given is ever materialised (SQLite's
  ``SQLITE_LIMIT_LENGTH``): a 900 MB ``event_json`` is a ``sqlite3.DataError`` for its row
  (``is_too_big``), not gigabytes of memory.
* A statement still running a moment after the process is told to stop ends there
  (``stop_queries``, from the signal handlers): SQLite calls the progress handler between
  its steps, so SIGTERM is never held by a query, and the reads a stop makes first finish.
* A text value that is not UTF-8 comes back as its bytes (``NotUtf8Text``), a value of the
  wrong type for its row alone; Python's default would fail the whole query on it, and with
  it every row after it.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager

#: SQLite virtual-machine steps between two looks at the stop flag (a few microseconds).
PROGRESS_STEPS = 10_000
#: How long after a stop signal statements still run: a stopping monitor reads what is
#: already there before it saves its checkpoint (``live.FINAL_READ_SECONDS``), and ends
#: within 2 s of the signal.
STOP_GRACE_SECONDS = 1.0

_stop_requested_at: list[float] = []
_VIRTUAL = re.compile(r"\s*CREATE\s+VIRTUAL\b", re.IGNORECASE)


def stop_queries() -> None:
    """The process is stopping: ``STOP_GRACE_SECONDS`` from now, every guarded statement
    still running or started later fails (``sqlite3.OperationalError: interrupted``)."""
    if not _stop_requested_at:
        _stop_requested_at.append(time.monotonic())


def stopping() -> bool:
    """``stop_queries`` was called: an interrupted statement is the stop, not a fault."""
    return bool(_stop_requested_at)


def _past_grace() -> bool:
    return bool(_stop_requested_at) and \
        time.monotonic() - _stop_requested_at[0] > STOP_GRACE_SECONDS


class NotUtf8Text(bytes):
    """The bytes of a text value that is not UTF-8 (``text_or_bytes``)."""


def text_or_bytes(value: bytes) -> str | NotUtf8Text:
    """A text value read: a ``str`` when it is UTF-8, else its bytes as ``NotUtf8Text``."""
    try:
        return value.decode()
    except UnicodeDecodeError:
        return NotUtf8Text(value)


def guard(conn: sqlite3.Connection, max_value_bytes: int) -> sqlite3.Connection:
    """``conn``, made to fail a statement that reads a value past ``max_value_bytes``, to
    end any statement once the grace after ``stop_queries`` is over, and to read a text
    that is not UTF-8 as ``NotUtf8Text``."""
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, max_value_bytes)
    conn.text_factory = text_or_bytes
    conn.set_progress_handler(_past_grace, PROGRESS_STEPS)
    return conn


@contextmanager
def values_up_to(conn: sqlite3.Connection, max_value_bytes: int) -> Iterator[None]:
    """Within the block, values up to ``max_value_bytes`` are read (a cold archive's blob,
    which has a larger cap of its own than a row)."""
    previous = conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, max_value_bytes)
    try:
        yield
    finally:
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, previous)


def is_too_big(exc: sqlite3.Error) -> bool:
    """``exc`` is SQLite refusing a value past the connection's length limit."""
    return isinstance(exc, sqlite3.DataError) and "too big" in str(exc)


def not_plain_tables(conn: sqlite3.Connection, names: tuple[str, ...]) -> dict[str, str]:
    """Those of ``names`` that the schema defines as something other than an ordinary
    table (SQLite matches names without regard to case), each with what it is."""
    wanted = {name.lower(): name for name in names}
    found: dict[str, str] = {}
    for name, kind, sql in conn.execute(
            "SELECT name, type, substr(sql, 1, 64) FROM sqlite_master"):
        if not isinstance(name, str) or name.lower() not in wanted:
            continue
        if kind != "table":
            found[wanted[name.lower()]] = str(kind)
        elif isinstance(sql, str) and _VIRTUAL.match(sql):
            found[wanted[name.lower()]] = "virtual table"
    return found


def refuse_other_schema(conn: sqlite3.Connection, names: tuple[str, ...]) -> None:
    """Raise ``sqlite3.DatabaseError`` naming each of ``names`` that is not an ordinary
    table (``not_plain_tables``): such a database is not read."""
    refused = not_plain_tables(conn, names)
    if refused:
        raise sqlite3.DatabaseError("not OpenClaw's schema: " + ", ".join(
            f"{name} is a {kind}" for name, kind in sorted(refused.items())))

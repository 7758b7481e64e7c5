"""Opening an agent database read-only, and noticing when it must be opened again.

The database is opened with a ``mode=ro`` URI (``query_only`` too) and nothing is created
beside it: a WAL database without its ``-wal``/``-shm`` is opened ``immutable=1`` and opened
again, quietly, once they appear or the file changes (``sqlite_ro``). A FIFO or device in
place of the database or its side files is refused before SQLite could block on it. The
schema is read once per open (columns, NOT NULL columns, whether the tables read have a
rowid); a newer schema is a notice, a database without transcript tables (schema v1 held
auth profiles only) is one too. A database removed or replaced underneath is closed and
opened again, its whole session index read anew; one that fails to open is tried again only
once its files change.

``DatabaseConnection`` is a mixin of ``SqliteAgentSource``, sharing its state.
"""

from __future__ import annotations

import os
import sqlite3

from monitor.events import SourceNotice
from monitor.sources.regular import NotRegularFile, check_sqlite_files
from monitor.sources.sqlite_cold import COLD_TABLE
from monitor.sources.sqlite_guard import guard, refuse_other_schema
from monitor.sources.sqlite_ro import read_only_uri, side_file_versions
from monitor.sources.tail import DEFAULT_MAX_LINE_BYTES

KNOWN_SCHEMA_VERSION = 24
READ_TABLES = ("session_nodes", "session_windows", "transcript_events", COLD_TABLE)
#: The longest value read from a row: a transcript line's cap (``tail``), in both eras.
MAX_ROW_BYTES = DEFAULT_MAX_LINE_BYTES


def has_rowid(conn: sqlite3.Connection, table: str) -> bool:
    """``table`` has a rowid (it is not ``WITHOUT ROWID``), to name a bad row by."""
    try:
        conn.execute(f"SELECT rowid FROM {table} LIMIT 0")
    except sqlite3.OperationalError:
        return False
    return True


def is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text



class DatabaseConnection:
    """The source's connection: opened, checked, and closed when it no longer fits."""

    def _open(self, out: list) -> bool:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return False
        try:
            check_sqlite_files(self.path)   # never a FIFO or a device: SQLite would block
        except OSError as exc:
            self._refuse_files(out, exc)
            return False
        versions = self._file_versions()
        conn = None
        try:
            uri, immutable = read_only_uri(self.path)
            conn = guard(sqlite3.connect(uri, uri=True, timeout=0.25, isolation_level=None,
                                         check_same_thread=False), MAX_ROW_BYTES)
            conn.execute("PRAGMA query_only = 1")
            refuse_other_schema(conn, READ_TABLES)
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            text_is_utf8 = conn.execute("PRAGMA encoding").fetchone()[0] == "UTF-8"
            info = {
                table: conn.execute(f"PRAGMA table_info({table})").fetchall()
                for table in READ_TABLES
            }
            columns = {table: {row[1] for row in rows} for table, rows in info.items()}
            not_null = {table: {row[1] for row in rows if row[3]} for table, rows in info.items()}
            self._rowid = {table: "rowid" if columns[table] and has_rowid(conn, table)
                           else "NULL" for table in ("session_nodes", "session_windows",
                                                     "transcript_events", COLD_TABLE)}
        except (sqlite3.DatabaseError, NotRegularFile) as exc:
            if conn is not None:
                conn.close()
            if isinstance(exc, sqlite3.OperationalError) and is_busy(exc):
                self.busy_retries += 1
                return False
            out.append(self.error("open", f"cannot open the database read-only: {exc}",
                                  shared=True))
            self._failed_on = self._file_versions()
            return False
        identity = (st.st_dev, st.st_ino)
        if self._identity is not None and identity != self._identity:
            self._forget_index_times()
        self._conn, self._identity, self._columns = conn, identity, columns
        self._not_null, self._text_is_utf8 = not_null, text_is_utf8
        self._immutable, self._opened_versions = immutable, versions
        quiet, self._quiet_reopen = self._quiet_reopen, False
        if not quiet:
            out.append(SourceNotice(self.kind, self.path,
                                    f"opened read-only (schema v{version})"))
        if immutable and not quiet and os.path.exists(self.path + "-wal"):
            out.append(SourceNotice(
                self.kind, self.path, "a -wal without its -shm: reading the database file "
                "alone (reading the WAL would create the -shm beside it)"))
        if version > KNOWN_SCHEMA_VERSION:
            out.append(SourceNotice(
                self.kind, self.path,
                f"schema v{version} is newer than clawwatch knows (v{KNOWN_SCHEMA_VERSION}); "
                "reading the columns it knows",
            ))
        if not columns["transcript_events"] and not self._reported_missing:
            self._reported_missing = True       # e.g. schema v1: auth profiles only
            out.append(SourceNotice(self.kind, self.path,
                                    f"no transcripts in this database, schema v{version}"))
        missing = {"session_id", "seq", "event_json"} - columns["transcript_events"]
        if missing and columns["transcript_events"] and not self._reported_missing:
            self._reported_missing = True
            out.append(self.error(
                "transcript_events",
                "cannot read transcripts: table transcript_events lacks "
                + ", ".join(sorted(missing)) + " (session index is still read)", shared=True,
            ))
        return True

    def _files_still_regular(self, out: list) -> bool:
        """Whether the open database's files are still regular files. SQLite opens a
        ``-journal`` at every read to see whether it is hot: a FIFO put there after the open
        held that read, and the process past any stop signal, until something wrote to it.
        When one is not, the connection is closed and the fault reported as at an open."""
        try:
            check_sqlite_files(self.path)
        except FileNotFoundError:
            return True                     # the database itself: ``_reopen_if_replaced``
        except OSError as exc:
            self._close()
            self._refuse_files(out, exc)
            return False
        return True

    def _refuse_files(self, out: list, exc: OSError) -> None:
        """Report a database, or a side file of it, that SQLite must not be given (a FIFO, a
        device), once: it is tried again only once its files change."""
        message = exc.strerror if isinstance(exc, NotRegularFile) else str(exc)
        where = getattr(exc, "path", None) or self.path
        out.append(self.error("open", f"cannot open the database: {where}: {message}",
                              shared=True))
        self._failed_on = self._file_versions()

    def _forget_index_times(self) -> None:
        """Another database now has the path (replaced, or removed and created again): its
        index rows are dated by its own history, maybe before the last one's watermarks, so
        all of them are read again (a row the last one gave as it is gives nothing)."""
        self.nodes_watermark = self.windows_watermark = -1

    def _reopen_if_replaced(self, out: list) -> None:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            if self._conn is not None:
                out.append(SourceNotice(self.kind, self.path, "database file removed; waiting"))
                self._close()
            return
        if self._conn is not None and (st.st_dev, st.st_ino) != self._identity:
            out.append(SourceNotice(self.kind, self.path, "database file replaced; reopening"))
            self._close()
        elif self._conn is not None and self._immutable \
                and self._file_versions() != self._opened_versions:
            self._close()       # written (or a -wal appeared): immutable no more; reopen
            self._quiet_reopen = True

    def _close(self) -> None:
        """Close the connection; whatever is opened next is swept afresh, since the pending
        set and rowids may not describe it."""
        if self._conn is not None:
            self._conn.close()
        self._conn = None
        self._immutable = False
        self._pending.clear()
        self._last_sweep = float("-inf")

    def _file_versions(self) -> tuple:
        """Identity, size and mtime of the database and its WAL: a database that failed is
        tried again only once one of them changes, so a lasting fault is reported once."""
        return side_file_versions(self.path)

"""Open an SQLite database read-only without creating or changing anything beside it.

``mode=ro`` is not enough: opening a WAL-mode database whose ``-wal`` and ``-shm`` are
absent (the gateway is not running, or a backup) creates both next to it, and they stay
after the close; run as root that leaves root-owned files the gateway's user may not open.
So when the database file's header says WAL mode and either side file is missing, it is
opened ``immutable=1``: SQLite then opens no side file and takes no lock. That is only right
while nobody writes it, so the caller re-opens (``read_only_uri`` again, which then gives a
plain ``mode=ro``) as soon as the files' versions (``side_file_versions``) change: a gateway
that opens the database creates its ``-wal`` first. A ``-wal`` without a ``-shm`` (a copy of
a live database) cannot be read without creating the ``-shm``: the main file is read alone.
A rollback-journal database needs no side file to be read, so ``mode=ro`` never creates one.
"""

from __future__ import annotations

import functools
import os
from urllib.parse import quote

from monitor.sources.regular import SQLITE_SIDE_FILES, read_regular
from monitor.sources.sqlite_guard import NotUtf8Text

SQLITE_MAGIC = b"SQLite format 3\x00"


def is_wal_database(path: str) -> bool:
    """The file header's read and write versions are 2 (WAL) (a regular file only)."""
    try:
        header = read_regular(path, limit=100)
    except OSError:
        return False
    return len(header) >= 20 and header.startswith(SQLITE_MAGIC) and \
        (header[18] == 2 or header[19] == 2)


def read_only_uri(path: str) -> tuple[str, bool]:
    """``(uri, immutable)``: the URI to open ``path`` read-only with, never creating a side
    file; ``immutable`` when it is opened without its WAL (see the module docstring). The
    path's own bytes are quoted: a name that is not UTF-8 is one too."""
    uri = f"file:{quote(os.fsencode(os.path.abspath(path)))}?mode=ro"
    if is_wal_database(path) and not (os.path.exists(path + "-wal")
                                      and os.path.exists(path + "-shm")):
        return uri + "&immutable=1", True
    return uri, False


def side_file_versions(path: str) -> tuple:
    """Identity, size and mtime of the database and its side files (None when absent)."""
    versions = []
    for name in (path, *(path + suffix for suffix in SQLITE_SIDE_FILES)):
        try:
            st = os.stat(name)
        except OSError:
            versions.append(None)
            continue
        versions.append((st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_mode))
    return tuple(versions)


# ------------------------------------------------------------------ row checking
#
# A table that is not STRICT stores whatever it is given, whatever its declared type: an
# ``updated_at`` may come back as text, a ``seq`` as a blob, a ``session_id`` as an integer.
# Every value read from OpenClaw's databases is checked for its type (and an integer for its
# range) before it is used, so a crafted row is reported and skipped, never a TypeError.

#: The largest integer a JavaScript number holds exactly: OpenClaw (TypeScript) writes no
#: larger seq or time, and a larger one must not become a cursor or a watermark.
MAX_SAFE_INT = 2**53 - 1

#: Column kinds for ``check_row``: ``int``/``text`` required, ``int?``/``text?`` may be NULL,
#: ``any`` is not checked (the caller checks it), ``opt-text`` is text or else None.
_KINDS = ("int", "int?", "text", "text?", "opt-text", "any")


class BadRow(ValueError):
    """A row whose values are not of the types its columns declare."""


def type_name(value) -> str:
    """SQLite's name for the storage class of ``value``."""
    if value is None:
        return "null"
    if isinstance(value, NotUtf8Text):
        return "text that is not UTF-8"
    if isinstance(value, bool) or not isinstance(value, (int, float, str, bytes)):
        return type(value).__name__
    return {int: "integer", float: "real", str: "text", bytes: "blob"}[type(value)]


def sql_int(value, *, low: int = 0, high: int = MAX_SAFE_INT) -> int | None:
    """``value`` when it is an integer (not a bool) within ``[low, high]``, else None."""
    if isinstance(value, int) and not isinstance(value, bool) and low <= value <= high:
        return value
    return None


def sql_text(value) -> str | None:
    """``value`` when it is text, else None."""
    return value if isinstance(value, str) else None


#: The types of the values each kind passes unchanged (``any``: every type, no fast check).
_PLAIN_TYPES = {"int": frozenset((int,)), "int?": frozenset((int, type(None))),
                "text": frozenset((str,)), "text?": frozenset((str, type(None))),
                "opt-text": frozenset((str, type(None)))}


@functools.cache
def _fast_plan(spec: tuple[tuple[str, str], ...]) -> tuple[tuple, tuple[int, ...]] | None:
    """For ``check_row``'s fast path: each column's plain types, and where the integers
    are (their range is still checked); None for a spec with an ``any`` column."""
    if any(kind not in _PLAIN_TYPES for _, kind in spec):
        return None
    return (tuple(_PLAIN_TYPES[kind] for _, kind in spec),
            tuple(at for at, (_, kind) in enumerate(spec) if kind.startswith("int")))


def check_row(row, spec: tuple[tuple[str, str], ...]) -> tuple:
    """``row`` with each value checked against ``spec`` (``(column, kind)`` pairs, in order):
    raises ``BadRow`` naming the first column that does not hold its kind; ``opt-text``
    values that are not text come back as None.

    A row of plain values (each of a type its kind passes unchanged, its integers in range:
    what OpenClaw writes) is checked in one pass of C calls, and comes back as it is."""
    plan = _fast_plan(spec)
    if plan is not None and len(row) == len(spec) \
            and all(map(frozenset.__contains__, plan[0], map(type, row))):
        for at in plan[1]:
            value = row[at]
            if value is not None and not 0 <= value <= MAX_SAFE_INT:
                break
        else:
            return tuple(row)
    return check_each(row, spec)


def check_each(row, spec: tuple[tuple[str, str], ...]) -> tuple:
    """``check_row`` value by value, every kind of value taken (its slow path)."""
    if len(row) != len(spec):
        raise BadRow(f"{len(row)} columns, expected {len(spec)}")
    checked = []
    for value, (column, kind) in zip(row, spec, strict=True):
        assert kind in _KINDS, kind
        if kind == "any" or (value is None and kind.endswith("?")):
            checked.append(value)
        elif kind == "opt-text":
            checked.append(sql_text(value))
        elif kind.startswith("text"):
            if not isinstance(value, str):
                raise BadRow(f"{column} is {type_name(value)}, not text")
            checked.append(value)
        elif sql_int(value) is None:
            if isinstance(value, int) and not isinstance(value, bool):
                raise BadRow(f"{column} is out of range ({value})")
            raise BadRow(f"{column} is {type_name(value)}, not an integer")
        else:
            checked.append(value)
    return tuple(checked)

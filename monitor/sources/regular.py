"""Open only regular files: a FIFO, a device, a socket or a directory is refused, never read.

A FIFO where a transcript should be blocks ``open()`` until a writer appears (for ever);
``/dev/zero`` reads without end; a tty may become the controlling terminal. So every file
clawwatch reads is opened with ``O_NONBLOCK | O_NOCTTY | O_CLOEXEC`` (an open that cannot
block) and ``fstat``-ed: anything but ``S_ISREG`` is closed at once and ``NotRegularFile``
raised, naming the path and what it is. ``O_NONBLOCK`` changes nothing for a regular file.

A regular file whose size says 0 while it holds data (``/proc`` and ``/sys`` files, some FUSE
files) is refused too (``SizeMismatch``, a ``NotRegularFile``): a reader that follows a file
by its size would see it truncated on every poll and read the same lines again for ever.

``prefetch`` asks the kernel to read a file ahead into the page cache (a hint: nothing is
read here, and what is not a regular file is left alone).

Paths that can only be handed to a library (SQLite) are checked with ``check_regular``
first (a ``stat``, which never blocks); the small race with a swap after the check is the
library's to survive.
"""

from __future__ import annotations

import os
import stat

OPEN_FLAGS = os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)


class NotRegularFile(OSError):
    """``path`` is not a regular file; ``what`` says what it is ("a FIFO", ...)."""

    def __init__(self, path: str, what: str) -> None:
        super().__init__(f"{path}: not a regular file ({what}); not read")
        self.path = path
        self.what = what
        self.strerror = f"not a regular file ({what}); not read"


class SizeMismatch(NotRegularFile):
    """``path`` is a regular file whose size (0 bytes) does not match what it holds."""

    def __init__(self, path: str) -> None:
        why = ("its size (0 bytes) does not match what it holds (a /proc or /sys file?); "
               "not read")
        OSError.__init__(self, f"{path}: {why}")
        self.path = path
        self.what = "a file whose size does not match what it holds"
        self.strerror = why


def size_lies(fd: int, size: int) -> bool:
    """Whether the regular file open on ``fd``, which ``fstat`` said is ``size`` bytes
    long, holds data its size does not count: it says 0 bytes, yet a byte reads at offset
    0 and a second ``fstat`` still says 0. A real empty file reads nothing; one appended to
    since the first ``fstat`` shows its new size on the second, and is not refused."""
    if size != 0:
        return False
    try:
        first = os.pread(fd, 1, 0)
    except OSError:
        return False        # not readable here (opened for writing): nothing follows it
    return bool(first) and os.fstat(fd).st_size == 0


def file_kind(mode: int) -> str:
    """What a ``st_mode`` names, for a message: "a FIFO", "a character device", ..."""
    if stat.S_ISREG(mode):
        return "a regular file"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "not a regular file"


def refusal(path: str, mode: int) -> str:
    """The one message for a path that is not a regular file."""
    return f"not a regular file ({file_kind(mode)}); not read"


def open_regular(path: str, flags: int = os.O_RDONLY, create_mode: int = 0o600) -> int:
    """A descriptor on ``path`` if it is a regular file (symlinks followed) whose size
    matches what it holds; raises ``NotRegularFile`` (``SizeMismatch`` for a ``/proc``
    file) otherwise, or the ``OSError`` of the open. ``create_mode`` is the mode of a file
    ``O_CREAT`` in ``flags`` creates; for writing, ``O_NONBLOCK`` makes a FIFO without a
    reader fail to open instead of blocking."""
    fd = os.open(path, flags | OPEN_FLAGS, create_mode)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(path, file_kind(st.st_mode))
        if size_lies(fd, st.st_size):
            raise SizeMismatch(path)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_regular_file(path: str, mode: str = "rb", *, encoding: str | None = None,
                      errors: str | None = None):
    """``open(path, mode)`` for reading, refusing what is not a regular file."""
    if any(c in mode for c in "wax+"):
        raise ValueError("open_regular_file is for reading")
    fd = open_regular(path)
    try:
        return os.fdopen(fd, mode, encoding=encoding, errors=errors)
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str, *, limit: int | None = None) -> bytes:
    """The bytes of a regular file (at most ``limit``)."""
    with open_regular_file(path) as handle:
        return handle.read() if limit is None else handle.read(limit)


class TooLarge(OSError):
    """``path`` holds more than its reader takes (``max_bytes``); ``strerror`` says so."""

    def __init__(self, path: str, size: int | None, max_bytes: int) -> None:
        how_large = f"{size} bytes" if size is not None else f"over {max_bytes} bytes"
        why = f"too large ({how_large}; at most {max_bytes} are read)"
        OSError.__init__(self, f"{path}: {why}")
        self.path = path
        self.strerror = why


def read_bounded(path: str, max_bytes: int) -> bytes:
    """The bytes of the regular file ``path``, refused whole (``TooLarge``) when its size
    says more than ``max_bytes`` or it grows past them as it is read: a file read whole is
    never held in memory past its bound, sparse or growing. ``NotRegularFile`` and the
    ``OSError`` of the open pass through, and ``ValueError`` for a name no file can have."""
    fd = open_regular(path)
    try:
        size = os.fstat(fd).st_size
        if size > max_bytes:
            raise TooLarge(path, size, max_bytes)
        chunks, read = [], 0
        while True:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - read))
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            read += len(chunk)
            if read > max_bytes:
                raise TooLarge(path, None, max_bytes)
    finally:
        os.close(fd)


def read_regular_text(path: str, encoding: str = "utf-8") -> str:
    """``Path.read_text`` that refuses what is not a regular file."""
    with open_regular_file(path, "r", encoding=encoding) as handle:
        return handle.read()


def check_regular(path: str) -> os.stat_result:
    """``os.stat(path)`` if it is a regular file; raises ``NotRegularFile`` otherwise (or
    the ``OSError`` of the stat, e.g. ``FileNotFoundError``). For paths a library opens."""
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise NotRegularFile(path, file_kind(st.st_mode))
    return st


SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")


def check_sqlite_files(path: str) -> os.stat_result:
    """``check_regular`` of a database and of the side files SQLite opens beside it (each
    only if it exists): SQLite would block for ever opening a FIFO and read a device
    without end, so only regular files are handed to it."""
    st = check_regular(path)
    for suffix in SQLITE_SIDE_FILES:
        try:
            check_regular(path + suffix)
        except FileNotFoundError:
            pass
    return st


def prefetch(path: str, offset: int, length: int) -> None:
    """Start the kernel reading ``length`` bytes of ``path`` from ``offset`` into the page
    cache, so a read that comes soon finds them there: on a cold disk the next file's
    reads overlap the parsing of this one. A hint: any failure is ignored."""
    advise = getattr(os, "posix_fadvise", None)
    if advise is None:
        return
    try:
        fd = open_regular(path)
    except OSError:
        return
    try:
        advise(fd, offset, length, os.POSIX_FADV_WILLNEED)
    except OSError:
        pass
    finally:
        os.close(fd)

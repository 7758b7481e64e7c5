"""The replay cache's files: each written whole, and sealed with a digest of its payload.

A file is written to a temporary file in the same dir and renamed into place, so a reader
(another replay) never sees half of one and the last writer wins. Its first line is a header,
``{"format": N, "blake2b": HEX}``, and the rest is the payload that digest is of: a file
damaged anywhere (a flipped digit, a cut, a disk's garbage) no longer matches and is read as
no file at all, a miss. Against someone who can write the user's cache dir a digest stored
beside the payload proves nothing (they can write both), and nothing local would: the payload
is checked for its shape too, so such a file gives a wrong document at worst, never a crash.
A temporary file that a replay killed while writing left behind is removed by a later write.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
import time
from pathlib import Path

from monitor.sources.regular import open_regular_file

#: The longest header line read: a file with no newline before it is not sealed (an older
#: format's file is one JSON line, and is read no further).
MAX_HEADER_BYTES = 256
#: A temporary file not written to for this long was left by a replay that was killed while
#: it wrote (SIGTERM, SIGKILL, a power cut): a file being written changes every moment.
STALE_TEMPORARY_SECONDS = 3600.0


def write_whole(path: Path, pieces: list[bytes], prefix: str = ".replay-") -> bool:
    """``pieces`` written to a temporary file (mode 0600, named ``prefix``…) renamed over
    ``path``, the dir made (0700) when missing; False when that failed: the cache only saves
    time, so its callers go on without it."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        remove_stale_temporaries(path.parent, prefix)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=prefix, suffix=".tmp")
        try:
            with os.fdopen(handle, "wb") as out:
                out.writelines(pieces)
            os.replace(temporary, path)
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError:
        return False
    return True


def remove_stale_temporaries(directory: Path, prefix: str) -> None:
    """Remove the temporary files (``prefix``…``.tmp``) in ``directory`` that replays killed
    while writing left behind, each as large as the file it was to become: nothing else
    removes them. One written to within ``STALE_TEMPORARY_SECONDS`` is another replay's, at
    work."""
    stale_before = time.time() - STALE_TEMPORARY_SECONDS
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return
    for entry in entries:
        if not (entry.name.startswith(prefix) and entry.name.endswith(".tmp")):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISREG(st.st_mode) and st.st_mtime < stale_before:
                os.unlink(entry.path)
        except OSError:
            continue


def write_sealed(path: Path, file_format: int, pieces: list[bytes]) -> None:
    """``pieces``, the payload, written whole to ``path`` after a header naming
    ``file_format`` and the payload's digest."""
    digest = hashlib.blake2b()
    for piece in pieces:
        digest.update(piece)
    header = json.dumps({"format": file_format, "blake2b": digest.hexdigest()},
                        separators=(",", ":")).encode()
    write_whole(path, [header, b"\n", *pieces])


def read_sealed(path: Path, file_format: int, limit: int) -> bytes | None:
    """The payload of the file ``write_sealed`` left at ``path``; None when there is none,
    it is not a regular file (a FIFO would block the open for ever), it is larger than
    ``limit`` bytes, its header is not of ``file_format``, or its payload is not the one its
    digest is of."""
    try:
        with open_regular_file(str(path)) as handle:
            if os.fstat(handle.fileno()).st_size > limit:
                return None
            line = handle.readline(MAX_HEADER_BYTES)
            header = json_object(line) if line.endswith(b"\n") else None
            if header is None or header.get("format") != file_format:
                return None
            payload = handle.read()
    except OSError:
        return None
    if hashlib.blake2b(payload).hexdigest() != header.get("blake2b"):
        return None
    return payload


def json_object(data: bytes) -> dict | None:
    """``data`` parsed, when it is a JSON object; else None (not JSON, nested too deep to
    parse, or JSON of another kind)."""
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None

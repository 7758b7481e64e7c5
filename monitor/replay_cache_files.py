"""The replay cache's files, each written whole: to a temporary file in the same dir, renamed
into place, so a reader (another replay) never sees half of one and the last writer wins."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_whole(path: Path, pieces: list[bytes], prefix: str = ".replay-") -> bool:
    """``pieces`` written to a temporary file (mode 0600, named ``prefix``…) renamed over
    ``path``, the dir made (0700) when missing; False when that failed: the cache only saves
    time, so its callers go on without it."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
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

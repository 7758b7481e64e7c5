"""The names of the gateway's dated log files, as OpenClaw 2026.9.6 gives them
(``src/logging/log-file-path.ts``).

A gateway with no ``logging.file`` writes ``<family>-YYYY-MM-DD.log`` (local date) in its
temp dir and moves to the next day's file at midnight. The family is ``openclaw``, or for a
profile other than ``default`` ``openclaw-<profile, encoded>``: gateways of two profiles share
the dir, so each profile's log is told by its family, never by being the newest. A
``logging.file`` whose name has the default family's dated shape (``openclaw-2026-01-01.log``,
or literally ``openclaw-YYYY-MM-DD.log``) rolls the same way in its own dir.
"""

from __future__ import annotations

import hashlib
import os
import re
import time

#: ``<family>-YYYY-MM-DD.log``: the family, and the date.
ROLLING_LOG_NAME = re.compile(r"(openclaw(?:-[a-z0-9-]+)?)-(\d{4}-\d{2}-\d{2})\.log\Z")
DEFAULT_FAMILY = "openclaw"
#: A configured name OpenClaw reads as "today's date here".
DATE_PLACEHOLDER_NAME = "openclaw-YYYY-MM-DD.log"
#: Longest encoded profile OpenClaw puts in a name; a longer one is its sha256.
MAX_PROFILE_SEGMENT = 220


def log_family(profile: str | None) -> str:
    """The family of the dated logs a gateway of ``profile`` writes
    (``encodeLogProfileSegment``: ``[a-z0-9]`` kept, ``-`` → ``--``, ``_`` → ``-0``, a capital
    → ``-1`` and its lowercase, anything else → ``-2<hex code point>-``)."""
    profile = (profile or "").strip()
    if not profile or profile.lower() == "default":
        return DEFAULT_FAMILY
    encoded = []
    for char in profile:
        if char.isascii() and (char.islower() or char.isdigit()):
            encoded.append(char)
        elif char == "-":
            encoded.append("--")
        elif char == "_":
            encoded.append("-0")
        elif char.isascii() and char.isupper():
            encoded.append(f"-1{char.lower()}")
        else:
            encoded.append(f"-2{ord(char):x}-")
    segment = "".join(encoded)
    if len(segment) > MAX_PROFILE_SEGMENT:
        segment = "-3" + hashlib.sha256(profile.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{DEFAULT_FAMILY}-{segment}"


def family_of(path: str | None) -> str | None:
    """The family of a dated log file's name, None for any other name."""
    match = ROLLING_LOG_NAME.match(os.path.basename(path or ""))
    return match.group(1) if match else None


def rolls(configured: str) -> bool:
    """Whether a ``logging.file`` rolls to each day's file (``isLegacyRollingLogFilePath``):
    its name is the default family's dated shape."""
    name = os.path.basename(configured)
    return name == DATE_PLACEHOLDER_NAME or family_of(name) == DEFAULT_FAMILY


def todays_log(directory: str, family: str = DEFAULT_FAMILY) -> str:
    """``<directory>/<family>-<today, local>.log``: where such a gateway writes today."""
    return os.path.join(directory, f"{family}-{time.strftime('%Y-%m-%d')}.log")


def newest_log_in(dirs: list[str], family: str = DEFAULT_FAMILY) -> str | None:
    """The newest-mtime dated log of ``family`` in ``dirs`` (not a numbered rotation, nor
    another profile's): the gateway keeps writing to the file named for its start date, so
    today's name can be stale."""
    best: tuple[float, str] | None = None
    for directory in dirs:
        try:
            names = os.listdir(directory)
        except (OSError, ValueError):
            continue
        for name in names:
            if family_of(name) != family:
                continue
            path = os.path.join(directory, name)
            try:
                mtime = os.stat(path).st_mtime
            except (OSError, ValueError):
                continue
            if best is None or (mtime, path) > best:
                best = (mtime, path)
    return best[1] if best else None

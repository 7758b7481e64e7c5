"""The names of the gateway's dated log files, as OpenClaw 2026.9.6 gives them
(``src/logging/log-file-path.ts``).

A gateway with no ``logging.file`` writes ``<family>-YYYY-MM-DD.log`` (local date) in its
temp dir and moves to the next day's file at midnight. The family is ``openclaw``, or for a
profile other than ``default`` ``openclaw-<profile, encoded>``: gateways of two profiles share
the dir, so each profile's log is told by its family, never by being the newest. A
``logging.file`` whose name has the default family's dated shape (``openclaw-2026-01-01.log``,
or literally ``openclaw-YYYY-MM-DD.log``) rolls the same way in its own dir.

A gateway names its file for the day it is in (``FUTURE_DAYS`` of time zones apart), so a
file dated later is no gateway's, and a gateway's next file is named for a day from
yesterday on (``logs_in`` with ``since``): whoever can write the dir could otherwise add one
log to follow, and one descriptor held, every rescan, or keep a file of its own the newest
so that the gateway's next one was never followed.
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


def every_days_log(dirs: list[str], family: str = DEFAULT_FAMILY) -> str:
    """What names every day's file of a dated log in ``dirs`` at once: each dir's
    ``<family>-YYYY-MM-DD.log``, joined by ``os.pathsep``. A checkpoint named after it is still
    found after the gateway moved to the next day's file."""
    return os.pathsep.join(os.path.join(d, f"{family}-YYYY-MM-DD.log") for d in dirs)


def todays_log(directory: str, family: str = DEFAULT_FAMILY) -> str:
    """``<directory>/<family>-<today, local>.log``: where such a gateway writes today."""
    return os.path.join(directory, f"{family}-{time.strftime('%Y-%m-%d')}.log")


#: Days past today (local) a gateway's log may be named for: its time zone may be ahead.
FUTURE_DAYS = 2


def log_date(path: str | None) -> str | None:
    """The ``YYYY-MM-DD`` a dated log file's name holds, None for any other name."""
    match = ROLLING_LOG_NAME.match(os.path.basename(path or ""))
    return match.group(2) if match else None


def local_date(days_from_now: float = 0) -> str:
    """``YYYY-MM-DD`` of the local day ``days_from_now`` days from now."""
    return time.strftime("%Y-%m-%d", time.localtime(time.time() + days_from_now * 86400))


def newest_log_in(dirs: list[str], family: str = DEFAULT_FAMILY) -> str | None:
    """The newest-mtime dated log of ``family`` in ``dirs`` (not a numbered rotation, nor
    another profile's, nor one dated more than ``FUTURE_DAYS`` ahead): the gateway keeps
    writing to the file named for its start date, so today's name can be stale."""
    found = logs_in(dirs, family)
    return found[-1] if found else None


def logs_in(dirs: list[str], family: str = DEFAULT_FAMILY, *,
            since: str | None = None) -> list[str]:
    """The dated logs of ``family`` in ``dirs`` named for a day up to ``FUTURE_DAYS`` ahead
    and, with ``since``, not before that ``YYYY-MM-DD``, oldest mtime first."""
    latest = local_date(FUTURE_DAYS)
    found: list[tuple[float, str]] = []
    for directory in dirs:
        try:
            names = os.listdir(directory)
        except (OSError, ValueError):
            continue
        for name in names:
            if family_of(name) != family:
                continue
            date = log_date(name) or ""
            if date > latest or (since is not None and date < since):
                continue
            path = os.path.join(directory, name)
            try:
                mtime = os.stat(path).st_mtime
            except (OSError, ValueError):
                continue
            found.append((mtime, path))
    return [path for _, path in sorted(found)]

"""What ``replay`` was told to read by name, checked before reading: a path the user named
(``PATH``, ``--log``, ``--claude-dir``, ``--codex-dir``) that cannot be read is bad setup
(exit 2), not a document of 0 events. Places found by default that are absent stay silent:
they are just not there to read. ``$CLAUDE_CONFIG_DIR`` and ``$CODEX_HOME`` are read as
ccusage reads them, a dir there that is absent passed over (``monitor.discovery``); when
nothing at all is left to read, replay says so and exits 2.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator

from monitor.sources.regular import file_kind, open_regular


def _file_problem(path: str) -> str | None:
    """Why the regular file ``path`` cannot be read (a FIFO or a device is refused without
    blocking), or None."""
    try:
        os.close(open_regular(path))
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def _path_problem(path: str) -> str | None:
    """Why ``path`` (a file or a dir) cannot be read, or None."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        return exc.strerror or str(exc)
    if stat.S_ISDIR(mode):
        return _dir_problem(path)
    if not stat.S_ISREG(mode):
        return f"not a regular file or directory ({file_kind(mode)}); not read"
    return _file_problem(path)


def _dir_problem(path: str) -> str | None:
    """Why ``path`` (``~`` expanded, as discovery does) is not a directory that can be
    listed, or None."""
    path = os.path.expanduser(path)
    if not os.path.isdir(path):
        return "no such directory" if not os.path.exists(path) else "not a directory"
    if not os.access(path, os.R_OK | os.X_OK):
        return "permission denied"
    return None


def _named(args, sources: frozenset[str]) -> Iterator[tuple[str, str | None]]:
    """``(how it was named, why it cannot be read)`` for each named input."""
    for path in args.paths:
        yield path, _path_problem(path)
    if "openclaw" in sources and args.log and args.log != "-":
        yield f"--log {args.log}", _file_problem(os.path.expanduser(args.log))
    if "claude-code" in sources:
        yield from ((f"--claude-dir {d}", _dir_problem(d)) for d in args.claude_dir or ())
    if "codex" in sources:
        yield from ((f"--codex-dir {d}", _dir_problem(d)) for d in args.codex_dir or ())


def unreadable_named_input(args, sources: frozenset[str]) -> str | None:
    """``"--log /x.log: No such file or directory"`` for the first named input that cannot
    be read, or None when all can."""
    for named, problem in _named(args, sources):
        if problem:
            return f"{named}: {problem}"
    return None


def missing_log_note(args, sources: frozenset[str]) -> str | None:
    """What ``watch`` and the dashboard say of a ``--log`` named to them that is not there
    yet: it is watched for (a gateway may not have written its first line). One that is
    there but cannot be read is reported as it is read, like every hostile file."""
    if "openclaw" not in sources or not args.log or args.log == "-" \
            or os.path.lexists(os.path.expanduser(args.log)):
        return None
    return f"clawwatch: --log {args.log} is not there yet; it is read once it appears"

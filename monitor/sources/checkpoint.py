"""Persist source positions so a restarted monitor resumes where it stopped."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
import time
from collections.abc import Callable

from monitor import untrusted_json
from monitor.sources.regular import file_kind, open_regular_file

CHECKPOINT_VERSION = 1
#: A save that keeps failing (a full disk) is reported again at most this often.
FAILURE_REPORT_SECONDS = 300.0


class CheckpointPathError(Exception):
    """The checkpoint cannot be written where it is asked for; the message says why."""


def _cannot_write(path: str, exc: OSError) -> str:
    return f"checkpoint {path}: cannot write: {exc.strerror or exc}"


def default_checkpoint_path(state_dir: str | None, log_path: str | None, env=None, *,
                            claude_dirs: tuple[str, ...] | list[str] = (),
                            codex_dirs: tuple[str, ...] | list[str] = ()) -> str:
    """A per-user file, one per watched (state dir, log, Claude Code dirs, Codex dirs); with
    no Claude Code or Codex dir the name is the one earlier versions used."""
    env = os.environ if env is None else env
    base = env.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    key = f"{state_dir}|{log_path}"
    if claude_dirs or codex_dirs:
        key += f"|claude={','.join(claude_dirs)}|codex={','.join(codex_dirs)}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return os.path.join(base, "clawwatch", "checkpoints", f"{digest}.json")


class CheckpointStore:
    """A JSON file written atomically (temp file + rename), so a crash leaves the old one."""

    def __init__(self, path: str) -> None:
        self.path = path

    def load(self) -> dict | None:
        try:
            with open_regular_file(self.path, "r", encoding="utf-8") as handle:
                data = untrusted_json.load(handle)
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("version") != CHECKPOINT_VERSION:
            return None
        sources = data.get("sources")
        return sources if isinstance(sources, dict) else None

    def check_writable(self) -> None:
        """Raise ``CheckpointPathError`` unless a save can work: the path is a regular file
        or nothing yet, and its directory can be made and written to."""
        try:
            mode = os.stat(self.path).st_mode
        except FileNotFoundError:
            mode = None
        except OSError as exc:
            raise CheckpointPathError(_cannot_write(self.path, exc)) from None
        if mode is not None and not stat.S_ISREG(mode):
            raise CheckpointPathError(f"checkpoint {self.path}: not a regular file "
                                      f"({file_kind(mode)})")
        directory = os.path.dirname(os.path.abspath(self.path))
        try:
            os.makedirs(directory, exist_ok=True)
            fd, probe = tempfile.mkstemp(prefix=".checkpoint-", dir=directory)
            os.close(fd)
            os.unlink(probe)
        except OSError as exc:
            raise CheckpointPathError(_cannot_write(self.path, exc)) from None

    def save(self, sources: dict) -> None:
        directory = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(directory, exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=".checkpoint-", dir=directory)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump({"version": CHECKPOINT_VERSION, "sources": sources}, handle)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp, self.path)
        except BaseException:
            try:
                os.unlink(temp)
            except OSError:
                pass
            raise


class CheckpointSaver:
    """Saves while watching, a failure (a full disk, a dir taken away) told, not raised: the
    watcher goes on, and a restart re-reads from the last checkpoint that was saved."""

    def __init__(self, store: CheckpointStore,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.store = store
        self._clock = clock
        self._reported: tuple[str, float] | None = None

    def save(self, sources: dict) -> str | None:
        """Save; on failure, the message to report, or None when the same failure was
        reported less than ``FAILURE_REPORT_SECONDS`` ago."""
        try:
            self.store.save(sources)
        except OSError as exc:
            message = _cannot_write(self.store.path, exc)
            now = self._clock()
            if self._reported is not None and self._reported[0] == message \
                    and now - self._reported[1] < FAILURE_REPORT_SECONDS:
                return None
            self._reported = (message, now)
            return message
        self._reported = None
        return None

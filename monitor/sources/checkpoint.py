"""Persist source positions so a restarted monitor resumes where it stopped."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile

from monitor import untrusted_json
from monitor.sources.regular import open_regular_file

CHECKPOINT_VERSION = 1


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

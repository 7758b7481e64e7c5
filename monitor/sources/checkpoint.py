"""Persist source positions so a restarted monitor resumes where it stopped."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import stat
import tempfile
import time
from collections.abc import Callable

from monitor import untrusted_json
from monitor.sources.regular import OPEN_FLAGS, file_kind, open_regular_file

CHECKPOINT_VERSION = 1
#: A checkpoint larger than this is not read: one position per file is ~200 bytes, so this
#: holds ~300,000 files, and reading and decoding it takes well under a second.
MAX_CHECKPOINT_BYTES = 64 << 20
#: What a checkpoint that cannot be read is renamed to, so the next save does not destroy it.
UNREADABLE_SUFFIX = ".unreadable"
#: Beside the checkpoint: the file the watch that saves it holds locked (``claim``).
LOCK_SUFFIX = ".lock"
#: A save that keeps failing (a full disk) is reported again at most this often.
FAILURE_REPORT_SECONDS = 300.0


class CheckpointPathError(Exception):
    """The checkpoint cannot be written where it is asked for; the message says why."""


class CheckpointInUse(Exception):
    """Another process (another ``watch``) holds the checkpoint's lock."""


class UnreadableCheckpoint(Exception):
    """The checkpoint file is there but cannot be used; the message says why."""


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
    # A path that is not UTF-8 holds surrogates (``os.fsdecode``): they are digested too.
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return os.path.join(base, "clawwatch", "checkpoints", f"{digest}.json")


class CheckpointStore:
    """A JSON file written atomically (temp file + rename), so a crash leaves the old one."""

    def __init__(self, path: str) -> None:
        self.path = path
        #: Why the last ``load`` found a file it could not use, or None.
        self.unreadable: str | None = None
        self._lock_fd: int | None = None

    def claim(self) -> None:
        """Take the checkpoint for this process: the lock file beside it, ``flock``-ed until
        ``release`` or until the process ends, however it ends. Two watches saving one
        checkpoint overwrite each other's positions, and the one restarted from a position
        the other saved never reports what only the other read. ``CheckpointInUse`` when
        another process holds it; ``CheckpointPathError`` when the lock file cannot be
        opened (not a regular file, not ours to write)."""
        lock = self.path + LOCK_SUFFIX
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | OPEN_FLAGS, 0o600)
        except OSError as exc:
            raise CheckpointPathError(f"checkpoint {self.path}: cannot lock {lock}: "
                                      f"{exc.strerror or exc}") from None
        try:
            mode = os.fstat(fd).st_mode
            if not stat.S_ISREG(mode):
                raise CheckpointPathError(f"checkpoint {self.path}: cannot lock {lock}: not "
                                          f"a regular file ({file_kind(mode)})")
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise CheckpointInUse(f"checkpoint {self.path} is in use by another "
                                  "clawwatch watch") from None
        except OSError as exc:
            os.close(fd)
            raise CheckpointPathError(f"checkpoint {self.path}: cannot lock {lock}: "
                                      f"{exc.strerror or exc}") from None
        except BaseException:
            os.close(fd)
            raise
        self._lock_fd = fd

    def release(self) -> None:
        """Let go of what ``claim`` took (the lock file stays, for the next watch)."""
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def load(self) -> dict | None:
        """The saved sources; None when there is no checkpoint, or one that cannot be used
        (``unreadable`` then says why)."""
        self.unreadable = None
        try:
            sources = self._read()
        except FileNotFoundError:
            return None
        except OSError as exc:
            self.unreadable = exc.strerror or str(exc)
            return None
        except UnreadableCheckpoint as exc:
            self.unreadable = str(exc)
            return None
        return sources

    def _read(self) -> dict:
        with open_regular_file(self.path) as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > MAX_CHECKPOINT_BYTES:
                raise UnreadableCheckpoint(
                    f"{size} bytes, more than a checkpoint holds "
                    f"({MAX_CHECKPOINT_BYTES >> 20} MiB)")
            text = handle.read(MAX_CHECKPOINT_BYTES + 1)
        if len(text) > MAX_CHECKPOINT_BYTES:
            raise UnreadableCheckpoint(f"grew past {MAX_CHECKPOINT_BYTES >> 20} MiB as it "
                                       "was read")
        try:
            data = untrusted_json.loads(text)
        except ValueError:
            raise UnreadableCheckpoint("not JSON (damaged, or not a checkpoint)") from None
        if type(data) is not dict or data.get("version") != CHECKPOINT_VERSION \
                or type(data.get("sources")) is not dict:
            raise UnreadableCheckpoint(
                f"not a version {CHECKPOINT_VERSION} checkpoint of clawwatch")
        return data["sources"]

    def keep_unreadable(self) -> str | None:
        """Rename the file ``load`` could not use out of the way of the next save; the
        name it now has, or None when it could not be renamed."""
        kept = self.path + UNREADABLE_SUFFIX
        try:
            os.replace(self.path, kept)
        except OSError:
            return None
        return kept

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


def unreadable_checkpoint_note(store: CheckpointStore) -> str:
    """The one line ``watch`` writes when its checkpoint could not be used: why, where the
    file was kept, and that this run starts as one without a checkpoint."""
    kept = store.keep_unreadable()
    where = f"kept as {kept}" if kept else "the next save replaces it"
    return f"clawwatch watch: checkpoint {store.path}: {store.unreadable}; {where}; starting " \
        "without it"

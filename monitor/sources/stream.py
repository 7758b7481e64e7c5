"""The gateway log from a stream: standard input (``--log -``) or ``journalctl`` (``--journal``).

A reader thread moves raw chunks from the descriptor into a bounded queue (at most
``QUEUE_CHUNKS`` × ``CHUNK_BYTES`` held: when it is full the reader waits, and the writer
with it), and ``poll`` splits them into lines on the calling thread, through the same
per-line parsing as the log file (``LogLineSource``: tslog JSON, console, journal JSON,
short-iso). The reader never holds a lock the interpreter needs at exit: it reads the raw
descriptor with ``os.read`` after ``select`` says it is readable (waking every
``SELECT_SECONDS`` to see whether it was told to stop), so a signal-driven exit never waits
for a silent, open stdin, and the descriptor's flags (shared with whoever else holds the
terminal or pipe) are left as they are.

With ``to_eof`` (``replay``) the source is ``behind`` until the stream ends, and ``poll``
waits a little for data instead of returning at once; otherwise (``watch``) it reads what
has arrived, its first poll reads nothing (so a live loop's quiet catch-up does not swallow
what arrives at its start: a stream has no history), and the waker is told when data
arrives. At the end of the stream a last line without a newline is read; while the stream
stays open, such a line is read once it has stood still for ``partial_line_grace`` seconds,
and its rest (if the writer completes it later) is skipped.

``journalctl`` runs as a child (``-o json``, ``--follow`` when watching); it is terminated
when the source is closed, and killed if it has not ended ``CLOSE_GRACE_SECONDS`` later, or
at once when clawwatch ends without closing it (killed, or a ``replay`` ended by SIGTERM): a
``journalctl -u`` scanning a large journal writes nothing for minutes, and would read on
for nobody until its next write. Its journal cursor (``__CURSOR`` of the last entry read) is
the checkpoint, and a restarted watch goes on ``--after-cursor`` it.
"""

from __future__ import annotations

import functools
import os
import queue
import re
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable

from monitor import untrusted_json
from monitor.events import SourceNotice
from monitor.lifetime import end_with_parent
from monitor.sources.gateway_log import LogLineSource
from monitor.sources.line_split import split_lines
from monitor.sources.tail import (
    DEFAULT_MAX_LINE_BYTES,
    PARTIAL_LINE_GRACE_SECONDS,
    POLL_BUDGET_BYTES,
)

CHUNK_BYTES = 64 << 10
QUEUE_CHUNKS = 64
SELECT_SECONDS = 0.2
#: How long a ``to_eof`` poll waits for the first chunk before returning.
REPLAY_WAIT_SECONDS = 0.1
#: How long journalctl has to exit once its output ended.
TERMINATE_SECONDS = 2.0
#: How long journalctl has to end on SIGTERM when the source is closed, before SIGKILL: a
#: stopping watch closes it after its last reads, and ends within 2 s of its own signal.
CLOSE_GRACE_SECONDS = 0.3
STDERR_KEPT = 2000
CURSOR_RE = re.compile(r"^[A-Za-z0-9=;_.:-]{1,1024}$")
UNIT_RE = re.compile(r"^[^\x00-\x1f\x7f]{1,256}$")
_EOF = object()


class StreamSetupError(Exception):
    """The stream cannot be read at all (journalctl missing): said as is, exit 2."""


class _Reader(threading.Thread):
    """Raw chunks of ``fd`` into a bounded queue; ``_EOF`` (or an ``OSError``) last."""

    def __init__(self, fd: int, wake: Callable[[], None] | None, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self.fd = fd
        self.queue: queue.Queue = queue.Queue(maxsize=QUEUE_CHUNKS)
        self.wake = wake
        self.stopping = threading.Event()

    def run(self) -> None:
        end: object = _EOF
        try:
            while not self.stopping.is_set():
                try:
                    ready, _, _ = select.select([self.fd], [], [], SELECT_SECONDS)
                except InterruptedError:
                    continue
                if not ready:
                    continue
                try:
                    data = os.read(self.fd, CHUNK_BYTES)
                except (BlockingIOError, InterruptedError):
                    continue
                if not data:
                    break
                if not self._put(data):
                    return
        except (OSError, ValueError) as exc:
            end = exc if isinstance(exc, OSError) else OSError(str(exc))
        self._put(end)

    def _put(self, item) -> bool:
        while not self.stopping.is_set():
            try:
                self.queue.put(item, timeout=SELECT_SECONDS)
            except queue.Full:
                continue
            if self.wake is not None:
                self.wake()
            return True
        return False

    def stop(self) -> None:
        self.stopping.set()


class StreamLogSource(LogLineSource):
    """The gateway log read from a descriptor that is not a file: stdin or a child's pipe."""

    #: Not a file: its path is a name ("-", "journal:UNIT"), not watched for changes.
    stream = True

    def __init__(self, path: str, fd: int, *, to_eof: bool = False,
                 partial_line_grace: float | None = PARTIAL_LINE_GRACE_SECONDS,
                 max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        super().__init__(path)
        self.fd = fd
        self.to_eof = to_eof
        self.partial_line_grace = partial_line_grace
        self.max_line_bytes = max_line_bytes
        self.poll_budget_bytes = POLL_BUDGET_BYTES
        self._wake: Callable[[], None] | None = None
        self._reader: _Reader | None = None
        self._buffer = b""
        self._offset = 0                # stream offset of ``_buffer``'s first byte
        self._skipping = False          # inside a line already read (or one too long)
        self._last_data = time.monotonic()
        self._primed = to_eof
        #: The stream ended and everything in it was read.
        self.finished = False
        self.behind = to_eof

    # -------------------------------------------------------------- running

    def attach_waker(self, wake: Callable[[], None]) -> None:
        """Call ``wake`` (from the reader thread) when data arrives."""
        self._wake = wake
        if self._reader is not None:
            self._reader.wake = wake

    def _start(self) -> None:
        if self._reader is None:
            self._reader = _Reader(self.fd, self._wake, f"clawwatch-read-{self.path}")
            self._reader.start()

    def poll(self) -> list:
        self._start()
        out: list = []
        if self.finished:
            self.behind = False
            return out
        if not self._primed:
            self._primed = True
            return out
        assert self._reader is not None
        budget = self.poll_budget_bytes
        ended: object | None = None
        waited = not self.to_eof
        while budget > 0:
            try:
                if waited:
                    item = self._reader.queue.get_nowait()
                else:
                    item = self._reader.queue.get(timeout=REPLAY_WAIT_SECONDS)
            except queue.Empty:
                break
            waited = True
            if isinstance(item, bytes):
                budget -= len(item)
                self._last_data = time.monotonic()
                self._split(item, out)
                if self.out_of_time():
                    break
                continue
            ended = item
            break
        if ended is not None:
            if isinstance(ended, OSError):
                out.append(self.error("-", f"read failed: {ended.strerror or ended}"))
            self._end_of_stream(out)
        elif self._buffer and not self._skipping and self.partial_line_grace is not None \
                and time.monotonic() - self._last_data >= self.partial_line_grace:
            self._read_partial(out)
            self._skipping = True
        self.behind = not self.finished and (self.to_eof or not self._reader.queue.empty())
        self.backlog_bytes = self._reader.queue.qsize() * CHUNK_BYTES
        return out

    def _end_of_stream(self, out: list) -> None:
        if self._buffer and not self._skipping:
            self._read_partial(out)
        self._buffer = b""
        self.finished = True
        self.behind = False
        self._on_end(out)

    def _on_end(self, out: list) -> None:
        out.append(SourceNotice(self.kind, self.path, "end of stream"))

    def _read_partial(self, out: list) -> None:
        self._emit_line(self._buffer, self.path, self._offset, out)
        self._offset += len(self._buffer)
        self._buffer = b""

    def _split(self, chunk: bytes, out: list) -> None:
        data = self._buffer + chunk if self._buffer else chunk
        split = split_lines(data, self._offset, self._skipping, self.max_line_bytes,
                            lambda at, line: self._emit_line(line, self.path, at, out))
        if split.overlong_at is not None:
            out.append(self.error(f"offset {split.overlong_at}",
                                  f"line longer than {self.max_line_bytes} bytes skipped"))
        self._offset, self._buffer, self._skipping = split.offset, split.rest, split.skipping

    def close(self) -> None:
        if self._reader is not None:
            self._reader.stop()
            self._reader.join(timeout=SELECT_SECONDS * 3)


class JournalSource(StreamLogSource):
    """``journalctl -o json -u UNIT`` (``--follow`` unless ``to_eof``), as a child."""

    def __init__(self, unit: str, *, to_eof: bool = False, resume: dict | None = None,
                 from_start: bool = False, journalctl: str = "journalctl") -> None:
        if not UNIT_RE.match(unit or ""):
            raise StreamSetupError(f"clawwatch: --journal {unit!r}: not a unit name")
        program = shutil.which(journalctl)
        if program is None:
            raise StreamSetupError(
                "clawwatch: --journal needs journalctl, which was not found on PATH "
                "(read a saved journal with: journalctl -o json -u UNIT | clawwatch replay "
                "--log -)")
        cursor = (resume or {}).get("cursor")
        cursor = cursor if isinstance(cursor, str) and CURSOR_RE.match(cursor) else None
        argv = [program, "--output=json", f"--unit={unit}", "--no-pager"]
        if not to_eof:
            argv.append("--follow")
            if cursor:
                argv.append(f"--after-cursor={cursor}")
            else:
                argv.append("--no-tail" if from_start else "--lines=0")
        elif cursor:
            argv.append(f"--after-cursor={cursor}")
        self._stderr = tempfile.TemporaryFile()
        try:
            self.child = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self._stderr,
                close_fds=True,
                preexec_fn=functools.partial(end_with_parent, os.getpid(), signal.SIGKILL))
        except OSError as exc:
            self._stderr.close()
            raise StreamSetupError(f"clawwatch: --journal: cannot run {program}: "
                                   f"{exc.strerror or exc}") from None
        assert self.child.stdout is not None
        super().__init__(f"journal:{unit}", self.child.stdout.fileno(), to_eof=to_eof)
        self.argv = argv
        self.cursor = cursor
        #: journalctl ended with a failure (its exit status and what it said).
        self.failure: str | None = None
        self.unit = unit
        self.lines_read = 0

    def _emit_line(self, data: bytes, path: str, offset: int | str, out: list) -> None:
        super()._emit_line(data, path, offset, out)
        self.lines_read += 1
        if data.startswith(b'{"') and b'"__CURSOR"' in data:
            try:
                entry = untrusted_json.loads(data)
            except ValueError:
                return
            cursor = entry.get("__CURSOR") if isinstance(entry, dict) else None
            if isinstance(cursor, str) and CURSOR_RE.match(cursor):
                self.cursor = cursor

    def _on_end(self, out: list) -> None:
        try:
            status = self.child.wait(timeout=TERMINATE_SECONDS)
        except subprocess.TimeoutExpired:
            status = None
        if status:
            said = self._said()
            self.failure = f"journalctl exited with status {status}" + (
                f": {said}" if said else "")
            out.append(self.error("-", self.failure))
        elif self.empty_note:
            out.append(SourceNotice(self.kind, self.path, self.empty_note))
        else:
            out.append(SourceNotice(self.kind, self.path, "journalctl ended"))

    @property
    def empty_note(self) -> str | None:
        """What to say when journalctl ended having given nothing: it is silent about a
        unit it does not know, so a mistyped name would look like a quiet gateway."""
        if not self.finished or self.failure or self.lines_read or self.cursor:
            return None
        return (f"--journal {self.unit}: journalctl has no entry of this unit "
                "(check its name with: systemctl list-units --all)")

    def _said(self) -> str:
        try:
            self._stderr.seek(0, os.SEEK_END)
            size = self._stderr.tell()
            self._stderr.seek(max(0, size - STDERR_KEPT))
            return self._stderr.read().decode("utf-8", "replace").strip()
        except (OSError, ValueError):
            return ""

    def checkpoint(self) -> dict:
        return {"cursor": self.cursor} if self.cursor else {}

    def close(self) -> None:
        if self.child.poll() is None:
            self.child.terminate()
            try:
                self.child.wait(timeout=CLOSE_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                self.child.kill()
                self.child.wait()
        super().close()
        if self.child.stdout is not None:
            self.child.stdout.close()
        self._stderr.close()


def stdin_source(*, to_eof: bool) -> StreamLogSource:
    """Standard input as the gateway log (``--log -``)."""
    try:
        os.fstat(0)
    except OSError:
        raise StreamSetupError("clawwatch: --log -: standard input is closed") from None
    return StreamLogSource("-", 0, to_eof=to_eof)


def open_log_stream(name: str, *, to_eof: bool, from_start: bool = False,
                    resume: dict | None = None) -> StreamLogSource:
    """``"-"``: stdin; ``"journal:UNIT"``: journalctl for that unit."""
    if name == "-":
        return stdin_source(to_eof=to_eof)
    if name.startswith("journal:"):
        return JournalSource(name[len("journal:"):], to_eof=to_eof, resume=resume,
                             from_start=from_start)
    raise StreamSetupError(f"clawwatch: {name}: not a stream")

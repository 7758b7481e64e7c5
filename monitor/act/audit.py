"""The append-only JSONL audit log of every action attempt and result.

One JSON object per line: ``ts`` (ISO 8601), ``event`` (``attempt`` | ``result`` |
``dry-run`` | ``suppressed``), ``key``, ``action``, ``mode``, ``trigger`` (the finding:
detector, level, count, message, at_call, or null for a manual action), ``ok``,
``detail``, ``pids``, ``error``; ``webhook-failed`` entries record a webhook delivery that
failed (``detail`` the webhook's scheme and host, ``error`` why). Every entry is redacted
(``monitor.redaction.redact_record``) before it is written. Each line is written with one
``write`` on an ``O_APPEND`` descriptor, so concurrent writers never interleave within a
line, and the file is never truncated or rewritten. A line a full disk (or a crash) cut
short is ended before the next entry, so it costs only itself.
"""

from __future__ import annotations

import os
import threading
from datetime import UTC, datetime

from monitor import untrusted_json
from monitor.display import json_dumps
from monitor.redaction import redact_record
from monitor.sources.regular import open_regular, open_regular_file


def default_audit_path(env=None) -> str:
    """``$XDG_STATE_HOME/clawwatch/audit.jsonl`` (``~/.local/state/clawwatch/audit.jsonl``)."""
    env = os.environ if env is None else env
    base = env.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "clawwatch", "audit.jsonl")


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class AuditLog:
    """Appends entries; a failure to write is kept in ``last_error`` (never raised)."""

    def __init__(self, path: str | None = None, *, env=None) -> None:
        path = path or default_audit_path(env)
        try:
            self.path = os.path.abspath(os.path.expanduser(path))
        except ValueError:      # ``~user`` naming a user with a NUL: no file has this name
            self.path = path
        self.last_error: str | None = None
        self._lock = threading.Lock()

    def append(self, entry: dict) -> bool:
        line = json_dumps(redact_record({"ts": now_iso(), **entry}), default=str) + "\n"
        data = line.encode("utf-8")
        with self._lock:
            try:
                os.makedirs(os.path.dirname(self.path), exist_ok=True)
                fd = open_regular(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT)
                try:
                    size = os.fstat(fd).st_size
                    if size and os.pread(fd, 1, size - 1) != b"\n":
                        data = b"\n" + data
                    written = os.write(fd, data)
                finally:
                    os.close(fd)
            except OSError as exc:
                self.last_error = f"audit log {self.path}: {exc.strerror or exc}"
                return False
            except ValueError:  # a NUL or a lone surrogate: every os call refuses the name
                self.last_error = (f"audit log {self.path!r}: no file can have this name (it "
                                   "holds a NUL or a lone surrogate)")
                return False
        if written < len(data):
            self.last_error = (f"audit log {self.path}: only {written} of {len(data)} bytes "
                               "of an entry written (is the disk full?)")
            return False
        return True

    def read(self, limit: int | None = None) -> list[dict]:
        """The newest ``limit`` entries (all when None), oldest first; bad lines skipped."""
        try:
            with open_regular_file(self.path, "r", encoding="utf-8", errors="replace") as handle:
                lines = handle.readlines()
        except (OSError, ValueError):       # ValueError: a name no file can have
            return []
        entries = []
        for line in lines[-limit:] if limit else lines:
            try:
                entry = untrusted_json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict):
                entries.append(entry)
        return entries


class AuditedController:
    """Wraps an ActionController so every attempt and result reaches the audit log
    (the dashboard's keys go through this; the policy audits its own actions)."""

    def __init__(self, inner, audit: AuditLog, *, mode: str = "manual") -> None:
        self.inner = inner
        self.audit = audit
        self.mode = mode

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    def _performed(self, key: str, action: str, trigger: str | None, perform):
        base = {"key": key, "action": action, "mode": self.mode, "trigger": trigger}
        self.audit.append({"event": "attempt", **base})
        result = perform()
        entry = {"event": "result", **base, "ok": result.ok, "detail": result.detail,
                 "pids": list(result.pids)}
        if getattr(result, "ambiguous", ()):
            entry["ambiguous"] = [info.as_record() for info in result.ambiguous]
        self.audit.append(entry)
        return result

    def stop(self, session_key: str, *, method="abort", trigger: str | None = None):
        return self._performed(session_key, method, trigger,
                               lambda: self.inner.stop(session_key, method=method,
                                                       trigger=trigger))

    def kill(self, session_key: str, *, trigger: str | None = None, **options):
        return self._performed(session_key, "kill", trigger,
                               lambda: self.inner.kill(session_key, trigger=trigger, **options))

"""The OpenClaw gateway log, in every form it is found in, followed across rotation.

Each line is read by ``log_line_forms`` (tslog JSON, console, journald); a console message
that OpenClaw logged with newlines inside continues on lines of no form of their own, kept
as text. ``traceId`` is constant within one run, so a bare ``Loop warning…`` line is joined
to its run through an earlier line of the same trace (``TraceJoin``).
"""

from __future__ import annotations

import os
import re
from collections import OrderedDict

from monitor.events import GatewayNotice, SourceError, SourceNotice
from monitor.sources.base import Source
from monitor.sources.log_ahead import AHEAD_STEP_BYTES, ParsedAhead
from monitor.sources.log_line_forms import (
    MalformedLogLine,
    console_continuation,
    parse_log_line,
)
from monitor.sources.tail import POLL_BUDGET_BYTES, READ_STEP_BYTES, FileFollower
from monitor.sources.tail_state import FollowerState

ROTATED_SUFFIX_RE = re.compile(r"\.(\d+)\.log$")
TRACE_MEMORY = 4096


class TraceJoin:
    """Remembers the ids seen per traceId, to fill in lines that carry none."""

    def __init__(self, capacity: int = TRACE_MEMORY) -> None:
        self.capacity = capacity
        self._ids: OrderedDict[str, dict[str, str]] = OrderedDict()

    def attribute(self, notice: GatewayNotice) -> GatewayNotice:
        trace_id = notice.trace_id
        if trace_id is None:
            return notice
        remembered = self._ids
        known = remembered.get(trace_id)
        if known is None:
            known = remembered[trace_id] = {}
            if len(remembered) > self.capacity:
                remembered.popitem(last=False)
        else:
            remembered.move_to_end(trace_id)
        missing = False
        for name, value in (("run_id", notice.run_id), ("session_id", notice.session_id),
                            ("session_key", notice.session_key),
                            ("agent_id", notice.agent_id)):
            if value:                       # the first line of a run names it; a later
                known.setdefault(name, value)   # line's text cannot re-attribute the run
            elif name in known:
                missing = True
        if not missing:
            return notice
        return GatewayNotice(
            level=notice.level, subsystem=notice.subsystem, message=notice.message,
            ts=notice.ts, trace_id=trace_id,
            run_id=notice.run_id or known.get("run_id"),
            session_id=notice.session_id or known.get("session_id"),
            session_key=notice.session_key or known.get("session_key"),
            agent_id=notice.agent_id or known.get("agent_id"),
            fields=notice.fields, origin=notice.origin,
        )


def rotated_siblings(path: str) -> list[str]:
    """Numbered rotations of ``path`` (``x.1.log`` …), oldest first."""
    directory = os.path.dirname(os.path.abspath(path))
    stem, ext = os.path.splitext(os.path.basename(path))
    found = []
    try:
        names = os.listdir(directory)
    except (OSError, ValueError):       # ValueError: a NUL or a lone surrogate in the name
        return []
    for name in names:
        if name.startswith(stem + ".") and name.endswith(ext):
            match = ROTATED_SUFFIX_RE.search(name)
            if match and name == f"{stem}.{match.group(1)}{ext}":
                found.append((int(match.group(1)), os.path.join(directory, name)))
    return [p for _, p in sorted(found, reverse=True)]


class LogLineSource(Source):
    """What every gateway-log source shares: lines of any form into notices, joined to
    their run through the trace, console continuation lines kept as text."""

    kind = "gateway-log"

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.trace_join = TraceJoin()
        #: A console-form line was read: text lines with no form of their own are the rest
        #: of a console message (a stack trace), not errors.
        self.console_seen = False

    def _emit_line(self, data: bytes, path: str, offset: int | str, out: list) -> None:
        if not data.strip():
            return
        origin = f"{path}@{offset}"
        try:
            notice = parse_log_line(data, origin)
        except MalformedLogLine as exc:
            notice = console_continuation(data, origin) if self.console_seen else None
            if notice is None:
                where = f"offset {offset}" if isinstance(offset, int) else str(offset)
                out.append(self.error(where, str(exc), path=path))
                return
        else:
            if not data.lstrip().startswith(b"{"):
                self.console_seen = True
        self.events += 1
        out.append(self.trace_join.attribute(notice))


class GatewayLogSource(LogLineSource):
    """Follows one gateway log file (and, with ``include_rotated``, reads its older rotations
    first). One poll reads at most ``poll_budget_bytes``; ``behind`` says there is more."""

    def __init__(self, path: str, *, include_rotated: bool = False,
                 resume: FollowerState | None = None, start_at_end: bool = False) -> None:
        super().__init__(path)
        self.poll_budget_bytes = POLL_BUDGET_BYTES
        self._pending_history = rotated_siblings(path) if include_rotated and resume is None else []
        self._history: FileFollower | None = None
        self.follower = FileFollower(path, resume=resume, start_at_end=start_at_end)
        self.seen_file = False
        self.ahead = ParsedAhead()
        #: Whether the last read ahead stopped before the end (``behind`` but for ``ahead``).
        self._read_behind = False
        self._bytes_read = 0

    def input_files(self) -> list[str]:
        """The files a read to the end will read, in order (the older rotations not yet
        read, then the log itself)."""
        return [*self._pending_history, self.path]

    def poll(self) -> list:
        """The oldest batch parsed ahead (``parse_ahead``) if any, else a read of at most
        ``poll_budget_bytes``, ``READ_STEP_BYTES`` at a time until the budget or the step's
        ``deadline`` runs out (after at least one read)."""
        if not self.ahead:
            return self._read()
        batch = self.ahead.take()
        self.events += batch.events_counted
        self.errors += batch.errors_counted
        self.behind = bool(self.ahead) or self._read_behind
        self.backlog_bytes = self.ahead.log_bytes + self._unread_bytes()
        return batch.events

    def parse_ahead(self) -> None:
        """Read and parse a step (``AHEAD_STEP_BYTES``) for the next polls to give out, while
        the source set holds the log back (see ``log_ahead``); nothing once
        ``AHEAD_KEPT_BYTES`` are kept."""
        if self.ahead.full:
            return
        before = self._read_checkpoint()
        events, errors, budget = self.events, self.errors, self.poll_budget_bytes
        self.poll_budget_bytes = AHEAD_STEP_BYTES
        try:
            out = self._read()
        finally:
            self.poll_budget_bytes = budget
        self.ahead.add(out, self.events - events, self.errors - errors,
                       self._bytes_read, before)
        self.events, self.errors = events, errors
        self._read_behind = self.behind
        self.behind = bool(self.ahead) or self._read_behind
        self.backlog_bytes += self.ahead.log_bytes

    def _unread_bytes(self) -> int:
        return self._history_backlog() + self.follower.backlog_bytes

    def _read(self) -> list:
        out: list = []
        budget = self.poll_budget_bytes
        stepped = False
        while self._pending_history and budget > 0 and not (stepped and self.out_of_time()):
            if self._history is None:
                self._history = FileFollower(self._pending_history[0])
            self._emit(self._history.poll(max_bytes=min(budget, READ_STEP_BYTES)), out)
            self._give_notices(self._history, out)
            budget -= self._history.bytes_read
            stepped = True
            if self._history.behind:
                continue
            self._history.close()
            self._history = None
            self._pending_history.pop(0)
        if self._pending_history or (stepped and self.out_of_time()):
            self.behind = True
        else:
            while True:
                self._emit(self.follower.poll(max_bytes=min(budget, READ_STEP_BYTES)), out)
                budget -= self.follower.bytes_read
                if not self.follower.behind or budget <= 0 or self.out_of_time():
                    break
            self._give_notices(self.follower, out)
            self.behind = self.follower.behind
        self._bytes_read = self.poll_budget_bytes - budget
        self.backlog_bytes = self._unread_bytes()
        return out

    def _give_notices(self, follower: FileFollower, out: list) -> None:
        for notice in follower.take_notices():
            if notice.error:
                out.append(self.error(notice.where or "-", notice.message, path=notice.path))
            else:
                out.append(SourceNotice(self.kind, notice.path, notice.message))

    def _history_backlog(self) -> int:
        unread = 0
        for index, path in enumerate(self._pending_history):
            if index == 0 and self._history is not None:
                unread += self._history.backlog_bytes
                continue
            try:
                unread += os.stat(path).st_size
            except OSError:
                continue
        return unread

    def _emit(self, lines, out: list) -> None:
        for line in lines:
            self._emit_line(line.data, line.path, line.offset, out)

    def detached_first(self) -> bool:
        return self.follower.detached()

    def checkpoint(self) -> dict:
        """Where the next run goes on: before the lines parsed ahead and not given out."""
        return self.ahead.checkpoint or self._read_checkpoint()

    def _read_checkpoint(self) -> dict:
        state = self.follower.state()
        return {"follower": state.as_json() if state else None}

    def close(self) -> None:
        self.ahead.clear()
        if self._history is not None:
            self._history.close()
            self._history = None
        self.follower.close()


__all__ = [
    "GatewayLogSource",
    "LogLineSource",
    "SourceError",
    "TraceJoin",
    "rotated_siblings",
]

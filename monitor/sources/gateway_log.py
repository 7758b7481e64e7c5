"""The OpenClaw gateway file log: tslog JSON lines, followed across rotation.

A line is one JSON object: ``"0"`` holds the subsystem bindings as a JSON
string, the message is the last positional string (``"1"``, ``"2"``...) or
``message``, the level is ``_meta.logLevelName``. Run, session and key ids sit
inside the text as ``runId=… sessionId=… sessionKey=…``; ``traceId`` is
constant within one run, so a bare ``Loop warning…`` line is joined to its run
through an earlier line of the same trace.
"""

from __future__ import annotations

import os
import re
from collections import OrderedDict

from monitor import untrusted_json
from monitor.events import GatewayNotice, SourceError, SourceNotice
from monitor.sources.base import Source
from monitor.sources.tail import (
    POLL_BUDGET_BYTES,
    READ_STEP_BYTES,
    FileFollower,
    FollowerState,
)
from monitor.sources.transcript import parse_timestamp

ID_FIELD_RE = re.compile(
    r"\b(runId|sessionId|sessionKey|agentId|tool|toolCallId|detector|level|action|count|"
    r"pairedTool|currentTool)=(\"[^\"]*\"|[^\s,;)]+)"
)
STRUCTURED_ID_KEYS = {"runId": "runId", "sessionId": "sessionId", "sessionKey": "sessionKey",
                      "agentId": "agentId"}
ROTATED_SUFFIX_RE = re.compile(r"\.(\d+)\.log$")
TRACE_MEMORY = 4096


class MalformedLogLine(ValueError):
    pass


def _subsystem_of(record: dict) -> str | None:
    bindings = record.get("0")
    if isinstance(bindings, str) and bindings.startswith("{"):
        try:
            parsed = untrusted_json.loads(bindings)
        except ValueError:
            return None
        if isinstance(parsed, dict) and isinstance(parsed.get("subsystem"), str):
            return parsed["subsystem"]
    return None


def _message_of(record: dict, has_subsystem: bool) -> tuple[str, dict | None]:
    """The last positional string, and the structured object when one was logged."""
    structured = None
    message = None
    index = 1 if has_subsystem else 0
    while str(index) in record:
        value = record[str(index)]
        if isinstance(value, str):
            message = value
        elif isinstance(value, dict) and structured is None:
            structured = value
        index += 1
    if message is None:
        fallback = record.get("message")
        message = fallback if isinstance(fallback, str) else ""
    return message, structured


def parse_log_line(data: bytes, origin: str = "") -> GatewayNotice:
    """Parse one log line; raises ``MalformedLogLine`` with the reason."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedLogLine(f"invalid UTF-8 at byte {exc.start}") from None
    if "\x00" in text:
        raise MalformedLogLine("NUL byte in line")
    try:
        record = untrusted_json.loads(text)
    except ValueError as exc:
        raise MalformedLogLine(f"invalid JSON: {exc}") from None
    if not isinstance(record, dict):
        raise MalformedLogLine("line is not a JSON object")
    meta = record.get("_meta") if isinstance(record.get("_meta"), dict) else {}
    subsystem = _subsystem_of(record)
    message, structured = _message_of(record, subsystem is not None)
    if not message and structured is None and "0" not in record and "message" not in record:
        raise MalformedLogLine("not a tslog record (no message)")
    level = meta.get("logLevelName") if isinstance(meta.get("logLevelName"), str) else "INFO"
    fields: dict[str, str] = {}
    for name, value in ID_FIELD_RE.findall(message):
        # The first of each: OpenClaw puts its ids first; what follows (a quoted
        # ``message="…"``, a tool's output) must not re-attribute the line.
        fields.setdefault(name, value.strip('"'))
    if structured:
        for key, name in STRUCTURED_ID_KEYS.items():
            value = structured.get(key)
            if isinstance(value, str) and name not in fields:
                fields[name] = value
        if isinstance(structured.get("event"), str):
            fields.setdefault("event", structured["event"])
    top_session = record.get("session_id")
    if isinstance(top_session, str):
        fields.setdefault("sessionKey" if top_session.startswith("agent:") else "sessionId",
                          top_session)
    if isinstance(record.get("agent_id"), str):
        fields.setdefault("agentId", record["agent_id"])
    trace_id = record.get("traceId") if isinstance(record.get("traceId"), str) else None
    return GatewayNotice(
        level=level.upper(),
        subsystem=subsystem,
        message=message,
        ts=parse_timestamp(record.get("time")) or parse_timestamp(meta.get("date")),
        trace_id=trace_id,
        run_id=fields.get("runId"),
        session_id=fields.get("sessionId"),
        session_key=fields.get("sessionKey"),
        agent_id=fields.get("agentId"),
        fields=fields,
        origin=origin,
    )


class TraceJoin:
    """Remembers the ids seen per traceId, to fill in lines that carry none."""

    def __init__(self, capacity: int = TRACE_MEMORY) -> None:
        self.capacity = capacity
        self._ids: OrderedDict[str, dict[str, str]] = OrderedDict()

    def attribute(self, notice: GatewayNotice) -> GatewayNotice:
        if notice.trace_id is None:
            return notice
        known = self._ids.get(notice.trace_id)
        ids = {k: v for k, v in (("run_id", notice.run_id), ("session_id", notice.session_id),
                                 ("session_key", notice.session_key),
                                 ("agent_id", notice.agent_id)) if v}
        if known is None:
            known = {}
            self._ids[notice.trace_id] = known
            if len(self._ids) > self.capacity:
                self._ids.popitem(last=False)
        else:
            self._ids.move_to_end(notice.trace_id)
        known.update(ids)
        missing = {k: v for k, v in known.items() if k not in ids}
        if not missing:
            return notice
        return GatewayNotice(
            level=notice.level, subsystem=notice.subsystem, message=notice.message,
            ts=notice.ts, trace_id=notice.trace_id,
            run_id=notice.run_id or missing.get("run_id"),
            session_id=notice.session_id or missing.get("session_id"),
            session_key=notice.session_key or missing.get("session_key"),
            agent_id=notice.agent_id or missing.get("agent_id"),
            fields=notice.fields, origin=notice.origin,
        )


def rotated_siblings(path: str) -> list[str]:
    """Numbered rotations of ``path`` (``x.1.log`` …), oldest first."""
    directory = os.path.dirname(os.path.abspath(path))
    stem, ext = os.path.splitext(os.path.basename(path))
    found = []
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    for name in names:
        if name.startswith(stem + ".") and name.endswith(ext):
            match = ROTATED_SUFFIX_RE.search(name)
            if match and name == f"{stem}.{match.group(1)}{ext}":
                found.append((int(match.group(1)), os.path.join(directory, name)))
    return [p for _, p in sorted(found, reverse=True)]


class GatewayLogSource(Source):
    """Follows one gateway log file (and, with ``include_rotated``, reads its older rotations
    first). One poll reads at most ``poll_budget_bytes``; ``behind`` says there is more."""

    kind = "gateway-log"

    def __init__(self, path: str, *, include_rotated: bool = False,
                 resume: FollowerState | None = None, start_at_end: bool = False) -> None:
        super().__init__(path)
        self.poll_budget_bytes = POLL_BUDGET_BYTES
        self._pending_history = rotated_siblings(path) if include_rotated and resume is None else []
        self._history: FileFollower | None = None
        self.follower = FileFollower(path, resume=resume, start_at_end=start_at_end)
        self.trace_join = TraceJoin()
        self.seen_file = False

    def poll(self) -> list:
        """At most ``poll_budget_bytes``, read ``READ_STEP_BYTES`` at a time until the budget
        or the step's ``deadline`` runs out (after at least one read)."""
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
        self.backlog_bytes = self._history_backlog() + self.follower.backlog_bytes
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
            if not line.data.strip():
                continue
            origin = f"{line.path}@{line.offset}"
            try:
                notice = parse_log_line(line.data, origin)
            except MalformedLogLine as exc:
                out.append(self.error(f"offset {line.offset}", str(exc), path=line.path))
                continue
            self.events += 1
            out.append(self.trace_join.attribute(notice))

    def checkpoint(self) -> dict:
        state = self.follower.state()
        return {"follower": state.as_json() if state else None}

    def close(self) -> None:
        if self._history is not None:
            self._history.close()
            self._history = None
        self.follower.close()


__all__ = [
    "GatewayLogSource",
    "MalformedLogLine",
    "SourceError",
    "TraceJoin",
    "parse_log_line",
    "rotated_siblings",
]

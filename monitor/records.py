"""The output records: what ``Monitor.step()`` and the action loop hand on, typed.

Each record is a ``msgspec.Struct`` tagged by its ``type``; ``as_json`` gives the
``watch --json`` line of shared/CONTRACT.md, keys in the documented order; a field with a
default is left out while it holds it (``dry_run`` appears only on a dry run,
``known_from`` only on a session known from the log alone). Consumers (``cli``, ``act/``,
``snapshot``, ``metrics``) read attributes and tell kinds apart with ``isinstance``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from monitor.redaction import redact_record


class Record(msgspec.Struct, tag_field="type", kw_only=True, omit_defaults=True):
    ts: str | None


class SessionRecord(Record, tag="session", kw_only=True):
    key: str | None
    session_id: str
    agent_id: str
    status: str | None
    model: str | None
    label: str | None
    aborted_last_run: bool
    known_from: str | None = None


class ToolCallRecord(Record, tag="tool_call", kw_only=True):
    key: str | None
    session_id: str
    agent_id: str
    call_id: str | None
    name: str
    at_call: int
    run_id: str | None


class FindingRecord(Record, tag="finding", kw_only=True):
    key: str | None
    session_id: str | None
    detector: str
    level: str
    count: int
    tool: str | None
    at_call: int
    message: str
    #: Raised during a quiet catch-up (a first watch's, the dashboard's first scan) and
    #: still current when it ended (``Monitor.still_current``): a loop already under way.
    caught_up: bool = False

    @classmethod
    def of(cls, finding: Any, *, ts: str | None, key: str | None,
           session_id: str | None, caught_up: bool = False) -> FindingRecord:
        """The record of a ``detect.findings.Finding``, raised on ``key``/``session_id``."""
        return cls(ts=ts, key=key, session_id=session_id, detector=finding.detector,
                   level=finding.level, count=finding.count, tool=finding.tool,
                   at_call=finding.at_call, message=finding.message, caught_up=caught_up)


class ActionRecord(Record, tag="action", kw_only=True):
    key: str
    action: str
    trigger: str | None
    ok: bool
    detail: str
    pids: list[int]
    session_id: str | None
    level: str | None
    dry_run: bool = False
    ambiguous: list[dict] | None = None


class ErrorRecord(Record, tag="error", kw_only=True):
    source: str
    path: str | None = None
    where: str | None = None
    message: str


class NoticeRecord(Record, tag="notice", kw_only=True):
    source: str
    path: str | None
    message: str


_to_builtins = msgspec.to_builtins


def as_json(record: Record) -> dict[str, Any]:
    """``record`` as the JSON object of its output line (not yet redacted)."""
    return _to_builtins(record)


def as_json_list(records: Iterable[Record]) -> list[dict[str, Any]]:
    """Each record as the JSON object of its output line."""
    return [_to_builtins(record) for record in records]


def redacted(record: Record) -> Record:
    """``record`` with its secret-looking text masked (``redaction.redact_record``); the
    same object when nothing is."""
    fields = msgspec.structs.asdict(record)
    masked = redact_record(fields)
    return record if masked is fields else type(record)(**masked)


def redacted_json(record: Record) -> dict[str, Any]:
    """The output line's JSON object with its secrets masked: what is printed or sent."""
    return redact_record(_to_builtins(record))

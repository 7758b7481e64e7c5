"""Turn one pi-shaped transcript entry into typed events.

The same entry shape is stored as a JSONL line (legacy era) and as
``transcript_events.event_json`` (SQLite era), so both sources use this.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from monitor.events import (
    AssistantMessage,
    Compaction,
    LoopVeto,
    ModelChange,
    SessionStart,
    ToolCall,
    ToolResult,
    TranscriptEvent,
    Usage,
    UserMessage,
)
from monitor.redaction import KEPT_NAME_CHARS, bounded

TOOL_CALL_ITEM_TYPES = ("toolCall", "tool_use")
IGNORED_ENTRY_TYPES = frozenset(
    {"thinking_level_change", "custom", "custom_message", "label"}
)


class UnknownEntry(ValueError):
    """An entry whose ``type`` this reader does not know (counted, not fatal)."""


MAX_EPOCH_SECONDS = 253_402_300_799.0  # 9999-12-31T23:59:59Z, the last second datetime holds


def epoch_seconds(value: float) -> float | None:
    """``value`` when it is a finite time that ``datetime`` can represent, else None: a
    transcript that says ``1e999`` or ``NaN`` must not crash whatever formats the time."""
    return value if math.isfinite(value) and 0 <= value <= MAX_EPOCH_SECONDS else None


#: Epoch milliseconds that ``parse_timestamp`` reads as milliseconds and keeps as they are
#: (past 1e11, up to the last second ``datetime`` holds): the time of most messages.
_MS_FROM, _MS_UP_TO = 1e11, int(MAX_EPOCH_SECONDS) * 1000


def parse_timestamp(value: Any) -> float | None:
    """Seconds since the epoch from an ISO string or epoch milliseconds."""
    if type(value) is int and _MS_FROM < value <= _MS_UP_TO:     # most messages' time
        return value / 1000.0
    if isinstance(value, str):
        if not value:
            return None
        try:
            when = datetime.fromisoformat(value)
        except ValueError:              # anything only the rewrite of "Z" makes readable
            try:
                when = datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                return None
        try:
            return epoch_seconds(when.timestamp())
        except (ValueError, OverflowError):
            return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return epoch_seconds(value / 1000.0 if value > 1e11 else float(value))
        except OverflowError:
            return None
    return None


MAX_COUNT = 10**15
"""The largest token count or cost (in dollars) taken from a transcript: a thousand times
anything a real session reaches, small enough that sums and rates stay exact floats."""


def sane_count(value: Any) -> int | None:
    """A token count as an ``int``, or None when ``value`` is not one: not a number (a
    bool is not), NaN or infinite, negative, or above ``MAX_COUNT``. A fraction is cut
    (``12.7`` counts 12). Such a value is dropped, not clamped: a count of ``10**400`` or
    ``-5`` says nothing about the tokens used, and clamping it to the bound would make a
    single forged record trip every token budget."""
    kind = type(value)  # ``bool`` is not ``int`` here; NaN and infinities fail the bounds
    if (kind is int or kind is float) and 0 <= value <= MAX_COUNT:
        return int(value)
    return None


def sane_cost(value: Any) -> float | None:
    """A cost as a ``float``, or None under the same rules as ``sane_count``."""
    kind = type(value)
    if (kind is int or kind is float) and 0 <= value <= MAX_COUNT:
        return float(value)
    return None


def parse_usage(raw: Any) -> Usage:
    """A message's usage, each field checked where it enters: a token count or cost that
    is not a finite number in ``[0, MAX_COUNT]`` (``sane_count``) is dropped, i.e. read as
    0, and an unusable ``totalTokens`` falls back to input + output. So a hostile number
    (a 400-digit integer, ``1e999``, ``-1``, ``true``) affects only its own record's usage,
    and nothing downstream (token sums, rates, budgets) can overflow or raise on it."""
    if not isinstance(raw, dict):
        return Usage()
    input_tokens, output_tokens, total, cost = usage_sums(raw)
    return Usage(
        input=input_tokens,
        output=output_tokens,
        cache_read=sane_count(raw.get("cacheRead")) or 0,
        cache_write=sane_count(raw.get("cacheWrite")) or 0,
        total=total,
        cost=cost,
    )


def usage_sums(raw: dict) -> tuple[int, int, int, float]:
    """The input, output and total tokens and the cost of a usage dict, as ``parse_usage``
    reads them, without making a ``Usage`` (what a history count sums)."""
    get = raw.get
    input_tokens = sane_count(get("input")) or 0
    output_tokens = sane_count(get("output")) or 0
    total = sane_count(get("totalTokens"))
    cost = get("cost")
    if isinstance(cost, dict):
        cost = cost.get("total")
    return (input_tokens, output_tokens,
            total if total is not None else input_tokens + output_tokens,
            sane_cost(cost) or 0.0)


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            item.get("text", "")
            for item in content
            if isinstance(item, dict) and item.get("type") == "text"
            and isinstance(item.get("text"), str)
        )
    return ""


def text_or_none(value: Any) -> str | None:
    """``value`` when it is text, else None (a field a hostile file may fill with anything)."""
    return value if isinstance(value, str) else None


def tool_name(value: Any) -> str:
    """A tool's name as kept: "?" when it is not text, and past ``KEPT_NAME_CHARS``
    redacted and cut (a name keys the counts and reaches every output; no real tool's name
    comes near, a crafted 30 MB one would be carried whole through both)."""
    if not isinstance(value, str):
        return "?"
    return value if len(value) <= KEPT_NAME_CHARS else bounded(value)


def run_id_from(meta: Any, idempotency_key: Any) -> str | None:
    """The run of a message: its ``__openclaw.runId``, else a user message's
    ``idempotencyKey`` without its ``:user``."""
    if isinstance(meta, dict) and isinstance(meta.get("runId"), str):
        return meta["runId"]
    if isinstance(idempotency_key, str) and idempotency_key.endswith(":user"):
        return idempotency_key[: -len(":user")]
    return None


def parse_entry(entry: Any, session_id: str, origin: str) -> list[TranscriptEvent]:
    """Events for one entry; raises ``UnknownEntry`` or ``ValueError`` for what cannot be read."""
    if not isinstance(entry, dict):
        raise ValueError("entry is not a JSON object")
    entry_type = entry.get("type")
    if entry_type == "message":
        message = entry.get("message")
        if not isinstance(message, dict):
            raise ValueError("message entry without a message object")
        return _parse_message(message, session_id, origin, entry.get("timestamp"))
    ts = parse_timestamp(entry.get("timestamp"))
    if entry_type == "session":         # the session read, whatever id the header gives
        cwd = entry.get("cwd") if isinstance(entry.get("cwd"), str) else None
        return [SessionStart(session_id, ts, cwd, origin)]
    if entry_type in ("compaction", "reset", "branch_summary"):
        return [Compaction(session_id, entry_type, sane_count(entry.get("tokensBefore")),
                           ts, origin)]
    if entry_type == "model_change":
        return [ModelChange(session_id, entry.get("provider"), entry.get("modelId"), ts, origin)]
    if isinstance(entry_type, str) and entry_type in IGNORED_ENTRY_TYPES:
        return []
    raise UnknownEntry(f"unknown entry type {entry_type!r}")


def _parse_message(message: dict, session_id: str, origin: str, entry_timestamp: Any
                   ) -> list[TranscriptEvent]:
    get = message.get
    role = get("role")
    ts = parse_timestamp(get("timestamp")) or parse_timestamp(entry_timestamp)
    run_id = run_id_from(get("__openclaw"), get("idempotencyKey"))
    if role == "assistant":
        return _parse_assistant(message, session_id, origin, ts, run_id)
    if role == "toolResult":
        return _parse_tool_result(message, session_id, origin, ts, run_id)
    if role == "user":
        return [UserMessage(session_id, run_id, ts, len(_text_of(get("content"))), origin)]
    return []


def _parse_assistant(message: dict, session_id: str, origin: str, ts: float | None,
                     run_id: str | None) -> list[TranscriptEvent]:
    content = message.get("content")
    items = content if isinstance(content, list) else []
    calls: list[TranscriptEvent] = []
    text_chars = 0
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind in TOOL_CALL_ITEM_TYPES:
            call_id = item.get("id")
            name = item.get("name")
            has_arguments = "arguments" in item or "input" in item
            arguments = item.get("arguments", item.get("input"))
            calls.append(ToolCall(
                session_id,
                call_id if isinstance(call_id, str) else f"{origin}#{index}",
                tool_name(name),
                arguments,
                run_id,
                ts,
                f"{origin}#{index}",
                has_arguments,
            ))
        elif kind == "text" and isinstance(item.get("text"), str):
            text_chars += len(item["text"])
    get = message.get
    assistant = AssistantMessage(
        session_id=session_id,
        run_id=run_id,
        ts=ts,
        usage=parse_usage(get("usage")),
        stop_reason=text_or_none(get("stopReason")),
        error_message=text_or_none(get("errorMessage")),
        model=text_or_none(get("model")),
        provider=text_or_none(get("provider")),
        tool_call_count=len(calls),
        text_chars=text_chars,
        origin=origin,
    )
    return [assistant, *calls]


def _parse_tool_result(message: dict, session_id: str, origin: str, ts: float | None,
                       run_id: str | None) -> list[TranscriptEvent]:
    call_id = message.get("toolCallId")
    name = message.get("toolName")
    details = message.get("details")
    result = ToolResult(
        session_id=session_id,
        call_id=call_id if isinstance(call_id, str) else "",
        name=tool_name(name),
        is_error=bool(message.get("isError")),
        details=details,
        text=_text_of(message.get("content")),
        run_id=run_id,
        ts=ts,
        origin=origin,
    )
    if not result.is_loop_veto:
        return [result]
    intervention = details.get("intervention") if isinstance(details, dict) else None
    intervention = intervention if isinstance(intervention, dict) else {}
    count = intervention.get("count")
    veto = LoopVeto(
        session_id=session_id,
        call_id=result.call_id,
        tool=result.name,
        detector=intervention.get("detector") if isinstance(intervention.get("detector"), str)
        else None,
        count=count if isinstance(count, int) and not isinstance(count, bool)
        and 0 <= count <= MAX_COUNT else None,
        level=intervention.get("level") if isinstance(intervention.get("level"), str) else None,
        reason=str(details.get("reason") or result.text),
        run_id=run_id,
        ts=ts,
        origin=origin,
    )
    return [result, veto]

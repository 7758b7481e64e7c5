"""A transcript entry decoded straight into its events, for the entries most lines hold.

``parse_entry(untrusted_json.loads(text))`` builds a dict of every field of an entry, then
reads a few of them. ``typed_events`` decodes ``text`` into msgspec Structs that declare only
the fields ``parse_entry`` reads (the rest, such as thinking text and signatures, are skipped
unbuilt) and gives the same events. It takes a message entry (of any role) and an entry of
a type the reader ignores. Anything else gives None, and the caller reads the entry the
full way, so a line is accepted, refused or reported exactly as before: another entry
type, a veto (whose ``LoopVeto`` the full read makes), a value of a type these Structs do
not take, JSON the fast decoder refuses, bytes that are not UTF-8, a line longer than
``COUNT_BRACKETS_UP_TO``, or one whose brackets say it may nest past ``MAX_DEPTH`` (where
the full read clips it).
"""

from __future__ import annotations

from typing import Any

import msgspec

from monitor.events import AssistantMessage, ToolCall, ToolResult, UserMessage, is_loop_veto_details
from monitor.sources.transcript import (
    IGNORED_ENTRY_TYPES,
    TOOL_CALL_ITEM_TYPES,
    parse_timestamp,
    parse_usage,
    run_id_from,
    text_or_none,
    tool_name,
)
from monitor.untrusted_json import COUNT_BRACKETS_UP_TO, may_nest_too_deep

_UNSET = msgspec.UNSET


class _Item(msgspec.Struct):
    type: Any = None
    id: Any = None
    name: Any = None
    text: Any = None
    arguments: Any = _UNSET
    input: Any = _UNSET


class MessageFields(msgspec.Struct):
    """The fields of a transcript message that a reader takes as any JSON value; a reader
    adds ``content`` and ``details`` as it reads them (``transcript_light`` too)."""

    role: Any = None
    timestamp: Any = None
    usage: Any = None
    stopReason: Any = None
    errorMessage: Any = None
    model: Any = None
    provider: Any = None
    toolCallId: Any = None
    toolName: Any = None
    isError: Any = None
    idempotencyKey: Any = None
    openclaw: Any = msgspec.field(default=None, name="__openclaw")


class _Message(MessageFields):
    content: list[_Item] | str | None = None
    details: Any = None


class _Entry(msgspec.Struct):
    type: Any = None
    timestamp: Any = None
    message: _Message | None = None


_DECODER = msgspec.json.Decoder(_Entry)


def typed_events(text: str | bytes, session_id: str, origin: str) -> list | None:
    """The events ``parse_entry`` gives for the entry ``text`` holds, or None when the entry
    must be read the full way (see the module docstring)."""
    if len(text) > COUNT_BRACKETS_UP_TO or may_nest_too_deep(text):
        return None
    entry = decode_typed(_DECODER, text)
    if entry is None:
        return None
    entry_type = entry.type
    if entry_type == "message":
        message = entry.message
        return None if message is None else _message_events(message, entry.timestamp,
                                                             session_id, origin)
    if isinstance(entry_type, str) and entry_type in IGNORED_ENTRY_TYPES:
        return []
    return None


def decode_typed(decoder: msgspec.json.Decoder, text: str | bytes) -> Any:
    """``decoder.decode(text)``, or None when it refuses ``text`` or when ``text`` is bytes
    that are not UTF-8: the full read refuses those, and a typed decoder does not look at
    the bytes of the fields it skips."""
    if type(text) is bytes and not text.isascii():
        try:
            text.decode("utf-8")
        except UnicodeDecodeError:
            return None
    try:
        return decoder.decode(text)
    except (msgspec.MsgspecError, RecursionError):
        return None


def _message_events(message: _Message, entry_timestamp: Any, session_id: str, origin: str
                    ) -> list | None:
    ts = parse_timestamp(message.timestamp) or parse_timestamp(entry_timestamp)
    run_id = run_id_from(message.openclaw, message.idempotencyKey)
    role = message.role
    if role == "assistant":
        return _assistant(message, session_id, origin, ts, run_id)
    if role == "toolResult":
        details = message.details
        if is_loop_veto_details(details):
            return None
        call_id = message.toolCallId
        return [ToolResult(session_id=session_id,
                           call_id=call_id if isinstance(call_id, str) else "",
                           name=tool_name(message.toolName), is_error=bool(message.isError),
                           details=details, text=_text_of(message.content), run_id=run_id,
                           ts=ts, origin=origin)]
    if role == "user":
        return [UserMessage(session_id, run_id, ts, len(_text_of(message.content)), origin)]
    return []


def _assistant(message: _Message, session_id: str, origin: str, ts: float | None,
               run_id: str | None) -> list:
    content = message.content
    calls: list = []
    text_chars = 0
    for index, item in enumerate(content if isinstance(content, list) else ()):
        kind = item.type
        if kind in TOOL_CALL_ITEM_TYPES:
            call_id, arguments, given_input = item.id, item.arguments, item.input
            calls.append(ToolCall(
                session_id,
                call_id if isinstance(call_id, str) else f"{origin}#{index}",
                tool_name(item.name),
                arguments if arguments is not _UNSET
                else None if given_input is _UNSET else given_input,
                run_id,
                ts,
                f"{origin}#{index}",
                arguments is not _UNSET or given_input is not _UNSET,
            ))
        elif kind == "text" and isinstance(item.text, str):
            text_chars += len(item.text)
    reply = AssistantMessage(
        session_id=session_id,
        run_id=run_id,
        ts=ts,
        usage=parse_usage(message.usage),
        stop_reason=text_or_none(message.stopReason),
        error_message=text_or_none(message.errorMessage),
        model=text_or_none(message.model),
        provider=text_or_none(message.provider),
        tool_call_count=len(calls),
        text_chars=text_chars,
        origin=origin,
    )
    return [reply, *calls]


def _text_of(content: list[_Item] | str | None) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join([item.text for item in content
                          if item.type == "text" and isinstance(item.text, str)])
    return ""

"""History the monitor only counts, decoded only as far as counting needs.

The dashboard and ``watch`` detect on the present (``Monitor.detect_since``); of an older
entry of a session that is not running they keep counts, tokens, tool names and times.
``counted_events`` decodes such an entry with typed structs that skip tool arguments,
results and texts without building them (a third of the cost of decoding it whole), and
gives the events ``parse_entry`` would give, marked ``counted_only``, with exactly the
fields counting reads; the rest are left empty (arguments None, result text ""). An entry
of a type the full read ignores (``custom`` and the like) gives no event, as there. Anything
else, or anything these structs do not take as typed (another entry type, a veto, a value
of an unexpected type, JSON the fast decoder refuses), gives None: the caller then reads
the entry in full, so a line is accepted, refused or reported exactly as it is today.
``count_into`` adds the same events to a ``CountedSum`` without making them, and a
``SummedRun`` puts each run of them summed in a source's output (what a history reader
process sends, and what a source reads itself while the monitor folds quietly).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import msgspec

from monitor import untrusted_json
from monitor.events import (
    AssistantMessage,
    CountedHistory,
    ToolCall,
    ToolResult,
    UserMessage,
    count_tool,
    reply_failed,
)
from monitor.sources.transcript import (
    IGNORED_ENTRY_TYPES,
    TOOL_CALL_ITEM_TYPES,
    parse_timestamp,
    parse_usage,
    run_id_from,
    tool_name,
    usage_sums,
)
from monitor.sources.transcript import text_or_none as _text
from monitor.sources.transcript_typed import MessageFields, decode_typed


class CountOnly(NamedTuple):
    """When an entry is only counted: its time is before ``since`` and
    ``session_is_history(session_id)`` (the monitor's view: not running, nothing newer
    seen). A source also keeps to the full read for the sessions its own index says are
    running."""

    since: float
    session_is_history: Callable[[str], bool]


class _Item(msgspec.Struct):
    type: Any = None
    id: Any = None
    name: Any = None
    arguments: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    input: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET


class _Details(msgspec.Struct):
    deniedReason: Any = None


class _Message(MessageFields):
    content: list[_Item] | str | None = None
    details: _Details | None = None


class _Entry(msgspec.Struct):
    type: Any = None
    timestamp: Any = None
    message: _Message | None = None


_DECODER = msgspec.json.Decoder(_Entry)


def counted_events(text: str | bytes, session_id: str, origin: str, count_only: CountOnly
                   ) -> list | None:
    """The counted-only events of one transcript entry, or None when it must be read in
    full (see the module docstring). ``text`` is the entry's JSON (bytes must be UTF-8:
    they are checked here, as the full read does)."""
    decoded = _counted_message(text, count_only)
    if not decoded:
        return decoded
    message, ts = decoded
    role = message.role
    if role == "assistant":
        return _assistant(message, session_id, origin, ts)
    if role == "toolResult":
        return [_tool_result(message, session_id, origin, ts)]
    if role == "user":
        return [UserMessage(session_id, _run_id(message), ts, 0, origin, counted_only=True)]
    return []


def count_into(summed: CountedSum, text: str | bytes, origin: str, count_only: CountOnly
               ) -> int | None:
    """``counted_events`` summed into ``summed`` without making the events: how many there
    were, or None when the entry must be read in full."""
    decoded = _counted_message(text, count_only)
    if not decoded:
        return decoded if decoded is None else 0
    message, ts = decoded
    role = message.role
    if role == "assistant":
        names = [item.name if isinstance(item.name, str) else "?" for item in _items(message)
                 if item.type in TOOL_CALL_ITEM_TYPES]
        events = 1 + len(names)
    elif role == "toolResult" or role == "user":
        events = 1
    else:
        return 0
    run_id = _run_id(message)
    summed.add_event(origin, ts, run_id, events)
    if role == "assistant":
        summed.add_reply(names, message.usage, _text(message.model),
                         reply_failed(_text(message.stopReason), _text(message.errorMessage)))
    elif role == "user" and run_id:
        summed.user_run_id = run_id
    return events


def _counted_message(text: str | bytes, count_only: CountOnly
                     ) -> tuple[_Message, float] | list | None:
    """The message of an entry only counted, and its time; [] for an entry that gives no
    event; None when the entry must be read in full. Bytes are checked to be UTF-8, as the
    full read checks them, and decoded as they are."""
    entry = decode_typed(_DECODER, text)
    if entry is None:
        return None
    message = entry.message
    if message is None and isinstance(entry.type, str) and entry.type in IGNORED_ENTRY_TYPES:
        return _ignored(text, entry, count_only)
    if entry.type != "message" or message is None:
        return None
    ts = parse_timestamp(message.timestamp) or parse_timestamp(entry.timestamp)
    if ts is None or ts >= count_only.since:
        return None
    if message.role == "toolResult" and message.details is not None \
            and message.details.deniedReason == "tool-loop":
        return None                     # a veto: the full read gives its LoopVeto too
    return message, ts


class CountedSum:
    """Counted-only events of one session summed into ``CountedHistory`` records, as a
    history reader sends them: each ``flush_to`` gives what was added since the last."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self._clear()

    def _clear(self) -> None:
        self.origin = ""
        self.events = self.tool_calls = self.assistant_messages = self.errors = 0
        self.tokens_input = self.tokens_output = self.tokens_total = 0
        self.first_ts = self.last_ts = self.model = self.user_run_id = None
        self.tools: dict[str, int] = {}
        self.costs: list[float] = []
        self.run_ids: list[str] = []

    def add_event(self, origin: str, ts: float, run_id: str | None, events: int = 1) -> None:
        """``events`` events of one entry, at ``ts`` in run ``run_id``."""
        if not self.events:
            self.origin = origin
        self.events += events
        if self.first_ts is None or ts < self.first_ts:
            self.first_ts = ts
        if self.last_ts is None or ts > self.last_ts:
            self.last_ts = ts
        if run_id and (not self.run_ids or self.run_ids[-1] != run_id):
            self.run_ids.append(run_id)

    def add_reply(self, tool_names: list[str], raw_usage: Any, model: str | None,
                  is_error: bool) -> None:
        """What an assistant reply adds besides its events (``add_event``): the tool calls
        it made, and its usage as the message holds it, read as ``parse_usage`` reads it."""
        if type(raw_usage) is dict:
            usage_input, usage_output, usage_total, cost = usage_sums(raw_usage)
            self.tokens_input += usage_input
            self.tokens_output += usage_output
            self.tokens_total += usage_total
            if cost:
                self.costs.append(cost)
        if tool_names:
            self.tool_calls += len(tool_names)
            tools = self.tools
            for name in tool_names:
                count_tool(tools, name)
        self.assistant_messages += 1
        self.model = model or self.model
        self.errors += is_error

    def flush_to(self, out: list) -> None:
        """Append what was summed since the last flush to ``out`` (nothing if nothing)."""
        if not self.events:
            return
        out.append(CountedHistory(
            self.session_id, self.origin, self.first_ts, self.last_ts,
            self.tool_calls, self.tools, self.assistant_messages, self.tokens_input,
            self.tokens_output, self.tokens_total, tuple(self.costs), self.errors, self.model,
            self.user_run_id, tuple(self.run_ids)))
        self._clear()


class SummedRun:
    """A source reading one session's entries into ``out``, each run of counted-only ones
    summed into a ``CountedHistory`` put where its first entry's events would have been.
    ``counting_now``: whether the session is history now (``only_counts``), so that its
    next entry may be counted at once; an entry read in full (``read_in_full``) sets it
    again."""

    def __init__(self, source, sid: str, out: list) -> None:
        self.source, self.sid, self.out = source, sid, out
        self.summed = source.counted_sum = CountedSum(sid)
        self.counting_now = source.only_counts(sid)

    def add(self, read, item):
        """``read(sid, item, out)``, what it returned."""
        out, summed = self.out, self.summed
        mark = len(out)
        returned = read(self.sid, item, out)
        if summed.events and len(out) > mark:
            held: list = []
            summed.flush_to(held)
            out[mark:mark] = held
        return returned

    def read_in_full(self, read, item):
        """``add(read, item)``, after which the session may no longer be history."""
        returned = self.add(read, item)
        self.counting_now = self.source.only_counts(self.sid)
        return returned

    def add_lines(self, lines, add: Callable | None = None) -> None:
        """``add(line)`` of each transcript line (``tail.Line``) of ``lines``, by default
        ``self.add(source.emit_line, line)``; a line the source would only count is counted
        at once."""
        source, summed, count_only = self.source, self.summed, self.source.count_only
        if add is None:
            emit_line = source.emit_line
            add = lambda line: self.add(emit_line, line)  # noqa: E731
        for line in lines:
            if self.counting_now:
                count = count_into(summed, line.data, f"{line.path}@{line.offset}", count_only)
                if count is not None:
                    source.events += count
                    continue
            add(line)
            self.counting_now = source.only_counts(self.sid)

    def close(self) -> None:
        self.summed.flush_to(self.out)
        self.source.counted_sum = None


def _ignored(text: str, entry: _Entry, count_only: CountOnly) -> list | None:
    """An entry the full read gives no event for (a third of a transcript's lines are
    ``custom`` cache-TTL marks): none here either, when it is history and shallow enough that
    the full read would take it as it is."""
    ts = parse_timestamp(entry.timestamp)
    if ts is None or ts >= count_only.since or untrusted_json.may_nest_too_deep(text):
        return None
    return []


def _run_id(message: _Message) -> str | None:
    return run_id_from(message.openclaw, message.idempotencyKey)


def _assistant(message: _Message, session_id: str, origin: str, ts: float) -> list:
    run_id = _run_id(message)
    calls = [ToolCall(session_id,
                      item.id if isinstance(item.id, str) else f"{origin}#{index}",
                      tool_name(item.name),
                      None, run_id, ts, f"{origin}#{index}",
                      item.arguments is not msgspec.UNSET or item.input is not msgspec.UNSET,
                      counted_only=True)
             for index, item in enumerate(_items(message))
             if item.type in TOOL_CALL_ITEM_TYPES]
    reply = AssistantMessage(
        session_id=session_id, run_id=run_id, ts=ts, usage=parse_usage(message.usage),
        stop_reason=_text(message.stopReason), error_message=_text(message.errorMessage),
        model=_text(message.model), provider=_text(message.provider),
        tool_call_count=len(calls), text_chars=0, origin=origin, counted_only=True)
    return [reply, *calls]


def _items(message: _Message) -> list[_Item]:
    return message.content if isinstance(message.content, list) else []


def _tool_result(message: _Message, session_id: str, origin: str, ts: float) -> ToolResult:
    call_id, name = message.toolCallId, message.toolName
    return ToolResult(session_id=session_id, call_id=call_id if isinstance(call_id, str) else "",
                      name=tool_name(name),
                      is_error=bool(message.isError), details=None, text="",
                      run_id=_run_id(message), ts=ts, origin=origin, counted_only=True)

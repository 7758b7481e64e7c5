"""Typed records that flow from the sources to the detectors.

Every record is an immutable msgspec Struct (cheap to build: a frozen dataclass
sets each field through ``object.__setattr__``). Records that come from a
transcript carry ``session_id`` (the transcript generation) and an ``origin``
that names exactly where they were read (``path@offset`` or ``db#session_id:seq``),
so duplicates and gaps can be proven by id. The session *key* is attached later
by the pipeline from the session index, because transcript rows do not hold it.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

import msgspec

SourceKind = Literal["sqlite", "jsonl", "gateway-log"]


class SessionInfo(msgspec.Struct, frozen=True):
    """One row of a session index (``session_nodes`` or ``sessions.json``)."""

    key: str
    session_id: str
    agent_id: str
    model: str | None = None
    provider: str | None = None
    status: str | None = None
    run_id: str | None = None
    active_run_id: str | None = None
    aborted_last_run: bool = False
    label: str | None = None
    updated_at: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    origin: str = ""
    source: str = "openclaw"    # "openclaw", "claude-code" or "codex"


class SessionStart(msgspec.Struct, frozen=True):
    """The transcript header (``type: session``): a new transcript generation."""

    session_id: str
    ts: float | None
    cwd: str | None = None
    origin: str = ""


class UserMessage(msgspec.Struct, frozen=True):
    """A user prompt; its ``idempotencyKey`` names the run it starts."""

    session_id: str
    run_id: str | None
    ts: float | None
    text_chars: int = 0
    origin: str = ""
    #: Read only to be counted (``transcript_light``): history no detector sees.
    counted_only: bool = False


class Usage(msgspec.Struct, frozen=True):
    """Token usage of one assistant message (per message, never cumulative)."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total: int = 0
    cost: float = 0.0


class AssistantMessage(msgspec.Struct, frozen=True):
    """One model reply: usage, stop reason and error, plus how many tool calls it made."""

    session_id: str
    run_id: str | None
    ts: float | None
    usage: Usage
    stop_reason: str | None
    error_message: str | None
    model: str | None
    provider: str | None
    tool_call_count: int
    text_chars: int
    origin: str = ""
    #: One piece of a reply its client wrote in several lines (Claude Code before 2.1
    #: writes each content block as a line without a stop reason, the last one ending the
    #: turn): never the end of a turn, even with no tool call in it.
    mid_reply: bool = False
    #: Read only to be counted (``transcript_light``): no text was measured.
    counted_only: bool = False

    @property
    def is_error(self) -> bool:
        return reply_failed(self.stop_reason, self.error_message)


def reply_failed(stop_reason: str | None, error_message: str | None) -> bool:
    """Whether a reply that stopped so ended in an error (``AssistantMessage.is_error``)."""
    return stop_reason in ("error", "aborted") or bool(error_message)


class ToolCall(msgspec.Struct, frozen=True):
    """A ``toolCall`` item of an assistant message."""

    session_id: str
    call_id: str
    name: str
    arguments: Any
    run_id: str | None
    ts: float | None
    origin: str = ""
    has_arguments: bool = True
    # The OpenClaw tool whose outcome rules apply ("exec", "read", "write", "web_fetch"...),
    # for a Claude Code / Codex tool (``cli_tools.openclaw_tool``); None: ``name`` itself.
    shape: str | None = None
    #: Read only to be counted (``transcript_light``): ``arguments`` is None.
    counted_only: bool = False


class ToolResult(msgspec.Struct, frozen=True):
    """A ``toolResult`` message answering ``call_id``."""

    session_id: str
    call_id: str
    name: str
    is_error: bool
    details: Any
    text: str
    run_id: str | None
    ts: float | None
    origin: str = ""
    #: Read only to be counted (``transcript_light``): ``details`` None, ``text`` "".
    counted_only: bool = False

    @property
    def is_loop_veto(self) -> bool:
        return is_loop_veto_details(self.details)


def is_loop_veto_details(details: Any) -> bool:
    """Whether a tool result's ``details`` say OpenClaw's own loop detector blocked the call
    (``deniedReason`` ``tool-loop``)."""
    return isinstance(details, dict) and details.get("deniedReason") == "tool-loop"


class LoopVeto(msgspec.Struct, frozen=True):
    """OpenClaw's own loop detector blocked a call (``details.deniedReason == "tool-loop"``)."""

    session_id: str
    call_id: str
    tool: str
    detector: str | None
    count: int | None
    level: str | None
    reason: str
    run_id: str | None
    ts: float | None
    origin: str = ""


class Compaction(msgspec.Struct, frozen=True):
    """A compaction, branch summary or reset boundary in a transcript."""

    session_id: str
    kind: Literal["compaction", "reset", "branch_summary"]
    tokens_before: int | None
    ts: float | None
    origin: str = ""


class ModelChange(msgspec.Struct, frozen=True):
    session_id: str
    provider: str | None
    model: str | None
    ts: float | None
    origin: str = ""


class GatewayNotice(msgspec.Struct, frozen=True):
    """One gateway log line, with the ids found in its text."""

    level: str
    subsystem: str | None
    message: str
    ts: float | None
    trace_id: str | None = None
    run_id: str | None = None
    session_id: str | None = None
    session_key: str | None = None
    agent_id: str | None = None
    fields: dict[str, str] = msgspec.field(default_factory=dict)
    origin: str = ""


class SourceError(msgspec.Struct, frozen=True):
    """Something a source could not read; ``where`` is an offset or a row id."""

    source: SourceKind
    path: str
    where: str
    message: str
    #: Not any one session's error (the index's, the database's): see ``Source.error``.
    shared: bool = False


class SourceNotice(msgspec.Struct, frozen=True):
    """Something a source noticed that is not an error (truncation, rotation, new file)."""

    source: SourceKind
    path: str
    message: str


class CountedHistory(msgspec.Struct, frozen=True):
    """Consecutive counted-only events of one session (``transcript_light``), summed by a
    history reader process (``sources.history_reader``) for a monitor that folds quietly:
    folding it changes the session as folding each of them would."""

    session_id: str
    #: The first event's.
    origin: str
    first_ts: float | None
    last_ts: float | None
    tool_calls: int
    tools: dict[str, int]
    assistant_messages: int
    tokens_input: int
    tokens_output: int
    tokens_total: int
    #: Each reply's cost that is not zero, in order (float sums depend on their order).
    costs: tuple[float, ...]
    errors: int
    #: The last model a reply named, the run the last prompt with one started, and every
    #: run named, in order, without repeats in a row.
    model: str | None
    user_run_id: str | None
    run_ids: tuple[str, ...]


#: Tool names a session's ``tools`` counts one by one; the calls of any other name count under
#: ``OTHER_TOOLS``. A real agent offers tens of tools, a crafted transcript a new one per call.
TOOL_NAMES_KEPT = 256
OTHER_TOOLS = "(other tools)"


def count_tool(tools: dict[str, int], name: str, calls: int = 1) -> None:
    """Add ``calls`` calls of ``name`` to ``tools`` (see ``TOOL_NAMES_KEPT``)."""
    if name not in tools and len(tools) >= TOOL_NAMES_KEPT:
        name = OTHER_TOOLS
    tools[name] = tools.get(name, 0) + calls


TranscriptEvent = (
    SessionStart
    | UserMessage
    | AssistantMessage
    | ToolCall
    | ToolResult
    | LoopVeto
    | Compaction
    | ModelChange
)
#: For a dispatch on ``type(event)`` (every record type is final).
TRANSCRIPT_EVENT_TYPES = frozenset(get_args(TranscriptEvent))
#: The records that may be read only to be counted (``counted_only``).
COUNTED_TYPES = frozenset({AssistantMessage, ToolCall, ToolResult, UserMessage})
Event = TranscriptEvent | SessionInfo | GatewayNotice | SourceError | SourceNotice

"""Codex CLI transcripts: ``<sessions>/YYYY/MM/DD/rollout-<time>-<id>.jsonl``.

Codex (``codex``, ``codex exec``) records each session ("thread") in a rollout file of lines
``{"timestamp", "type", "payload"}`` (``RolloutLine`` of codex-rs): ``session_meta`` first
(the thread id, cwd, CLI version, model provider), ``turn_context`` per turn (model,
``turn_id``), ``response_item`` (the model's and tools' items: ``message``, ``reasoning``,
``function_call``, ``function_call_output``, ``custom_tool_call`` (``apply_patch``) and its
output, ``local_shell_call``, ``web_search_call``), ``event_msg`` (``user_message``,
``token_count``, ``error``, ``turn_aborted``, ``task_started``, ``item_completed``, ...) and
``compacted``.
Newer versions add more (``world_state``, ``token_usage_record``, ``item_completed``); what
carries no call, output or usage is skipped without counting as an error.

Events: the key is ``codex:<thread id>`` (the id in the file's name, as codex-rs names every
rollout; the ``session_meta``'s only for a file not named so: a rollout whose lines name
another thread is still its own file's), the agent ``codex`` (``agents.codex`` in the config
sets this source's thresholds and budgets), the run a turn's ``turn_id``. Each ``function_call``
/ ``custom_tool_call`` / ``local_shell_call`` / ``web_search_call`` is a ``ToolCall``, each output
a ``ToolResult`` shaped by ``cli_tools``; a prompt (``user_message``, or since 0.17x a completed
``UserMessage`` item) is a ``UserMessage``; ``error`` and
``turn_aborted`` are failed replies (``AssistantMessage`` with ``stop_reason`` ``"error"`` /
``"aborted"``). A call id already read (a rollout repeating another's items) is not called
again, however long ago it was read: the recent ids are kept with their names, every id as a
digest (``seen_digests``; a checkpoint keeps the last ``IDS_CHECKPOINTED`` ids with their
names, and the newest digests).

Tokens: ``token_count`` carries the thread's cumulative ``total_token_usage``, repeated as often
as Codex likes (the same total again when only the rate limits changed), so a session's tokens
are its highest total, never a sum of totals. Each ``token_count`` that raises the total becomes
one ``AssistantMessage`` (one model reply: the calls and text since the previous one) whose
``Usage`` is the rise above the highest total so far (each count's increase, never below zero:
codex-rs never lowers a total, so one that falls and climbs back, as a forged line can make it,
spends nothing twice), so the replies' usages add up to the highest total; a ``token_count``
with only ``last_token_usage`` adds that. As in ccusage, ``input`` is the uncached input
(``input_tokens - cached - cache write``), ``cache_read`` the cached input (at most
``input_tokens``), ``total`` is ``total_tokens``.

A rollout that continues another thread (a fork, a backtrack, a ``thread_spawn`` sub-agent)
may start with that thread's lines copied after a second ``session_meta`` (``codex_copies``
says which): they are the parent's, spent and called once, by the parent, so they are no event
of this rollout and their totals only set its starting total (ccusage skips them too). One that
copies nothing (the paginated layout) starts its totals at its parent's: its first reply counts
its own ``last_token_usage`` (``codex_usage.share``).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import OrderedDict
from typing import Any

from monitor.events import (
    AssistantMessage,
    Compaction,
    SessionInfo,
    SessionStart,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
)
from monitor.sources.cli_tools import codex_result, openclaw_tool, parse_arguments, tool_kind
from monitor.sources.codex_copies import still_copied
from monitor.sources.codex_usage import Counts, share
from monitor.sources.jsonl_tree import JsonlTreeSource
from monitor.sources.seen_digests import SeenDigests, digests_state, key_digest, restore_digests
from monitor.sources.transcript import parse_timestamp, sane_count, tool_name
from monitor.sources.transcript import text_or_none as _text

SOURCE = "codex"
AGENT_ID = "codex"
#: Tool calls remembered (id -> name) to name their outputs.
CALLS_KEPT = 8192
IDS_CHECKPOINTED = 256
LABEL_CHARS = 512
ERROR_CHARS = 2000
_SAFE_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}\Z", re.ASCII)
_FILE_ID = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl\Z")
CALL_ITEMS = ("function_call", "custom_tool_call", "local_shell_call", "web_search_call")
OUTPUT_ITEMS = ("function_call_output", "custom_tool_call_output")


def session_key(session_id: str) -> str:
    return f"{SOURCE}:{session_id}"


def _safe_id(value: Any) -> str | None:
    return value if isinstance(value, str) and _SAFE_ID.match(value) else None


def is_codex_entry(entry: dict) -> bool:
    """Whether a transcript's first JSON object is a Codex rollout line."""
    return isinstance(entry.get("payload"), dict) and entry.get("type") in (
        "session_meta", "response_item", "event_msg", "turn_context")


class _Rollout:
    """What one rollout file's lines share."""

    __slots__ = ("announced", "calls", "copied_turn", "copy_second", "cwd", "meta_seen", "model",
                 "named", "prompt", "provider", "replies", "run_id", "session_id", "text_chars",
                 "total")

    def __init__(self, session_id: str, named: bool = False) -> None:
        self.session_id = session_id
        #: The file's name gives the thread id: the lines cannot give the rollout another.
        self.named = named
        self.announced = False
        self.meta_seen = False
        self.cwd: str | None = None
        self.model: str | None = None
        self.provider: str | None = None
        self.run_id: str | None = None
        self.total: Counts | None = None
        self.calls = 0
        self.text_chars = 0
        #: While copied lines are read: the second the copied ``session_meta`` is stamped.
        self.copy_second: str | None = None
        #: A copied turn has begun (its lines are copies whatever their stamp).
        self.copied_turn = False
        self.replies = 0
        #: The last prompt given as a ``UserMessage`` (replies so far, digest of its text).
        self.prompt: str | None = None

    def state(self) -> dict:
        return {"session": self.session_id, "meta": self.meta_seen, "cwd": self.cwd,
                "model": self.model, "provider": self.provider, "run": self.run_id,
                "calls": self.calls,
                "text": self.text_chars, "copy_second": self.copy_second,
                "copied_turn": self.copied_turn,
                "replies": self.replies, "prompt": self.prompt,
                "total": self.total.as_list() if self.total else None}

    def restore(self, saved: dict) -> None:
        if not self.named:
            self.session_id = _safe_id(saved.get("session")) or self.session_id
        self.meta_seen = saved.get("meta") is True
        self.cwd = _text(saved.get("cwd"))
        self.model = _text(saved.get("model"))
        self.provider = _text(saved.get("provider"))
        self.run_id = _safe_id(saved.get("run"))
        self.calls = sane_count(saved.get("calls")) or 0
        self.text_chars = sane_count(saved.get("text")) or 0
        self.copy_second = _text(saved.get("copy_second"))
        self.copied_turn = saved.get("copied_turn") is True
        self.replies = sane_count(saved.get("replies")) or 0
        self.prompt = _text(saved.get("prompt"))
        total = saved.get("total")
        counts = [sane_count(n) for n in total] if isinstance(total, list) else []
        if len(counts) == 6 and None not in counts:
            self.total = Counts(*counts)


class CodexSource(JsonlTreeSource):
    """Every Codex rollout under ``sessions_dir`` (``$CODEX_HOME/sessions``)."""

    source_name = SOURCE
    max_depth = 4

    def __init__(self, sessions_dir: str, *, agent_id: str = AGENT_ID,
                 resume: dict | None = None, only_files: set[str] | None = None) -> None:
        self._rollouts: dict[str, _Rollout] = {}
        self._saved: dict[str, dict] = {}
        self._calls: OrderedDict[str, str] = OrderedDict()
        self._calls_seen = SeenDigests()
        super().__init__(sessions_dir, agent_id, resume=resume, only_files=only_files)

    @classmethod
    def for_file(cls, path: str, **options) -> CodexSource:
        """A source reading only the rollout ``path`` (named ``rollout-*.jsonl``)."""
        path = os.path.abspath(path)
        return cls(os.path.dirname(path), only_files={path}, **options)

    def wants_dir(self, parts: tuple[str, ...]) -> bool:
        return parts[-1].isdigit()

    def wants_file(self, parts: tuple[str, ...]) -> bool:
        return parts[-1].startswith("rollout-") and parts[-1].endswith(".jsonl")

    def session_of(self, path: str) -> str:
        rollout = self._rollouts.get(path)
        if rollout is not None:
            return rollout.session_id
        match = _FILE_ID.search(os.path.basename(path))
        return match.group(1) if match else os.path.basename(path)[: -len(".jsonl")]

    def _rollout(self, path: str) -> _Rollout:
        rollout = self._rollouts.get(path)
        if rollout is None:
            named = _FILE_ID.search(os.path.basename(path)) is not None
            rollout = _Rollout(self.session_of(path), named)
            saved = self._saved.pop(path, None)
            if saved:
                rollout.restore(saved)
            self._rollouts[path] = rollout
        return rollout

    # ------------------------------------------------------------------- lines

    def read_entry(self, path: str, offset: int, entry: dict, text: str) -> list:
        line_type = entry.get("type")
        if not isinstance(line_type, str):
            raise ValueError("rollout line without a type")
        payload = entry.get("payload")
        if not isinstance(payload, dict):
            if line_type in ("session_meta", "response_item", "event_msg", "turn_context"):
                raise ValueError(f"{line_type} line without a payload object")
            return []
        rollout = self._rollout(path)
        stamp = _text(entry.get("timestamp")) or ""
        if rollout.copy_second is not None:
            copied, rollout.copied_turn = still_copied(
                rollout.session_id, line_type, payload, stamp[:19] == rollout.copy_second,
                rollout.copied_turn)
            if copied:
                self._copied(rollout, line_type, payload)
                return []
            rollout.copy_second, rollout.copied_turn = None, False
        ts = parse_timestamp(stamp)
        origin = f"{path}@{offset}"
        events: list = []
        if line_type == "session_meta":
            events = self._session_meta(rollout, payload, stamp, ts, origin)
        elif line_type == "turn_context":
            rollout.model = _text(payload.get("model")) or rollout.model
            rollout.run_id = _safe_id(payload.get("turn_id")) or rollout.run_id
        elif line_type == "response_item":
            events = self._response_item(rollout, payload, ts, origin)
        elif line_type == "event_msg":
            events = self._event(rollout, payload, ts, origin)
        elif line_type == "compacted":
            events = [Compaction(rollout.session_id, "compaction", None, ts, origin)]
        if events and not rollout.announced:
            rollout.announced = True
            events.insert(0, self._session_info(rollout, path, ts))
        return events

    def _session_info(self, rollout: _Rollout, path: str, ts: float | None) -> SessionInfo:
        return SessionInfo(key=session_key(rollout.session_id), session_id=rollout.session_id,
                           agent_id=self.agent_id, model=rollout.model,
                           provider=rollout.provider,
                           label=(rollout.cwd or "")[:LABEL_CHARS] or None, updated_at=ts,
                           origin=f"{path}#session", source=SOURCE)

    def _session_meta(self, rollout: _Rollout, payload: dict, stamp: str, ts: float | None,
                      origin: str) -> list:
        if rollout.meta_seen:
            if _safe_id(payload.get("id")) not in (None, rollout.session_id):
                rollout.copy_second = stamp[:19]          # a parent's meta: its history follows
            return []
        rollout.meta_seen = True
        if not rollout.named:
            rollout.session_id = _safe_id(payload.get("id")) or _safe_id(
                payload.get("session_id")) or rollout.session_id
        rollout.cwd = _text(payload.get("cwd"))
        rollout.provider = _text(payload.get("model_provider"))
        return [SessionStart(rollout.session_id, ts, rollout.cwd, origin)]

    def _copied(self, rollout: _Rollout, line_type: str, payload: dict) -> None:
        """A line of the parent's history copied into this rollout: only its total is kept,
        as the total this rollout starts from."""
        if line_type == "event_msg" and payload.get("type") == "token_count":
            info = payload.get("info")
            total = Counts.of(info.get("total_token_usage")) if isinstance(info, dict) else None
            if total is not None:
                rollout.total = total.highest(rollout.total)

    def _response_item(self, rollout: _Rollout, payload: dict, ts: float | None,
                       origin: str) -> list:
        item = payload.get("type")
        if item in CALL_ITEMS:
            return self._call(rollout, item, payload, ts, origin)
        if item in OUTPUT_ITEMS:
            call_id = _text(payload.get("call_id")) or ""
            name = self._calls.get(call_id, "?")
            shaped = codex_result(tool_kind(SOURCE, name), payload.get("output"))
            return [ToolResult(rollout.session_id, call_id, name, shaped.is_error,
                               shaped.details, shaped.text, rollout.run_id, ts, origin)]
        if item == "message" and payload.get("role") == "assistant":
            content = payload.get("content")
            rollout.text_chars += sum(len(part["text"]) for part in content
                                      if isinstance(part, dict)
                                      and isinstance(part.get("text"), str)) \
                if isinstance(content, list) else 0
        return []

    def _call(self, rollout: _Rollout, item: str, payload: dict, ts: float | None,
              origin: str) -> list:
        call_id = _text(payload.get("call_id")) or _text(payload.get("id")) or origin
        if item == "local_shell_call":
            name, arguments, given = "local_shell", payload.get("action"), "action" in payload
        elif item == "web_search_call":
            name, arguments, given = "web_search", payload.get("action"), "action" in payload
        elif item == "custom_tool_call":
            name, arguments, given = tool_name(_text(payload.get("name")) or "?"), \
                payload.get("input"), "input" in payload
        else:
            name = tool_name((_text(payload.get("namespace")) or "")
                             + (_text(payload.get("name")) or "?"))
            arguments, given = parse_arguments(payload.get("arguments")), "arguments" in payload
        if call_id in self._calls or not self._calls_seen.add(key_digest(call_id)):
            return []
        self._remember_call(call_id, name)
        rollout.calls += 1
        shape = openclaw_tool(SOURCE, name) if tool_kind(SOURCE, name) else None
        return [ToolCall(rollout.session_id, call_id, name, arguments, rollout.run_id, ts,
                         origin, given, shape)]

    def _remember_call(self, call_id: str, name: str) -> None:
        self._calls[call_id] = name
        while len(self._calls) > CALLS_KEPT:
            self._calls.popitem(last=False)

    def _event(self, rollout: _Rollout, payload: dict, ts: float | None, origin: str) -> list:
        kind = payload.get("type")
        if kind == "token_count":
            return self._token_count(rollout, payload, ts, origin)
        if kind == "task_started":
            rollout.run_id = _safe_id(payload.get("turn_id")) or rollout.run_id
        elif kind == "user_message":
            return self._prompt(rollout, _text(payload.get("message")) or "", ts, origin)
        elif kind == "item_completed":
            item = payload.get("item")
            if isinstance(item, dict) and item.get("type") == "UserMessage":
                content = item.get("content")
                text = "\n".join(part["text"] for part in content if isinstance(part, dict)
                                 and isinstance(part.get("text"), str)) \
                    if isinstance(content, list) else ""
                return self._prompt(rollout, text, ts, origin)
        elif kind in ("error", "turn_aborted"):
            reason = _text(payload.get("message")) or _text(payload.get("reason")) or kind
            return [self._reply(rollout, Usage(), ts, origin,
                                "error" if kind == "error" else "aborted", reason[:ERROR_CHARS])]
        return []

    def _prompt(self, rollout: _Rollout, text: str, ts: float | None, origin: str) -> list:
        """A ``UserMessage``, once: versions that record a prompt both as ``user_message`` and
        as a completed ``UserMessage`` item give it once (the same text, no reply between)."""
        mark = f"{rollout.replies}:{_digest(text)}"
        if mark == rollout.prompt:
            return []
        rollout.prompt = mark
        return [UserMessage(rollout.session_id, rollout.run_id, ts, len(text), origin)]

    def _token_count(self, rollout: _Rollout, payload: dict, ts: float | None,
                     origin: str) -> list:
        info = payload.get("info")
        if not isinstance(info, dict):
            return []
        total = Counts.of(info.get("total_token_usage"))
        previous = rollout.total
        if total is not None:
            rollout.total = total.highest(previous)
            if rollout.total == previous:
                return []
        moved = share(total, Counts.of(info.get("last_token_usage")), previous)
        if moved is None or not (moved.input or moved.cached or moved.output or moved.reasoning):
            return []
        return [self._reply(rollout, moved.as_usage(), ts, origin, None, None)]

    def _reply(self, rollout: _Rollout, usage: Usage, ts: float | None, origin: str,
               stop_reason: str | None, error: str | None) -> AssistantMessage:
        calls, text_chars = rollout.calls, rollout.text_chars
        rollout.calls = rollout.text_chars = 0
        rollout.replies += 1
        if stop_reason is None:
            stop_reason = "tool_use" if calls else "end_turn"
        return AssistantMessage(session_id=rollout.session_id, run_id=rollout.run_id, ts=ts,
                                usage=usage, stop_reason=stop_reason, error_message=error,
                                model=rollout.model, provider=rollout.provider,
                                tool_call_count=calls, text_chars=text_chars, origin=origin)

    def forget_file(self, path: str) -> None:
        self._rollouts.pop(path, None)
        self._saved.pop(path, None)

    # -------------------------------------------------------------- checkpoint

    def parse_state(self) -> dict:
        files = dict(self._saved)
        files.update({path: rollout.state() for path, rollout in self._rollouts.items()})
        return {"files": files, "calls": list(self._calls.items())[-IDS_CHECKPOINTED:],
                "seen": digests_state({"calls": self._calls_seen})}

    def restore_parse_state(self, saved: dict) -> None:
        restore_digests({"calls": self._calls_seen}, saved.get("seen"))
        files = saved.get("files")
        if isinstance(files, dict):
            self._saved = {path: value for path, value in files.items()
                           if isinstance(path, str) and isinstance(value, dict)}
        calls = saved.get("calls")
        for row in calls if isinstance(calls, list) else []:
            if isinstance(row, list) and len(row) == 2 and all(isinstance(v, str) for v in row):
                self._calls_seen.add(key_digest(row[0]))
                self._remember_call(row[0], row[1])


def _digest(text: str) -> str:
    """A short digest of a prompt's text, which JSON may give a lone surrogate."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]

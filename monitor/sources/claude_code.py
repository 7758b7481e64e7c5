"""Claude Code transcripts: ``<projects>/<encoded-cwd>/<sessionId>.jsonl``.

Claude Code (``claude``, ``claude -p``) appends one JSON line per event to a file named after
the session, in a directory named after the working directory (``/tmp/w`` -> ``-tmp-w``).
A sub-agent (the ``Agent``/``Task`` tool) writes its own transcript: since 2.1 in
``<sessionId>/subagents/agent-<agentId>.jsonl`` beside the session's file (without that file
beside it, a session of its own; every line ``isSidechain: true`` with ``agentId``), before
that as ``agent-<id>.jsonl`` in the project directory (lines naming the parent's
``sessionId``, whose file is beside it: one naming a session not beside it is a session of
its own, its file's name), and in the oldest versions inline in the session's own file. All
three are the parent session's: its key, ``claude-code:<sessionId>``, and its session id; a
sub-agent's calls and replies form their own run (``run_id = "agent:<agentId>"``) so the
loop detectors, which judge one run at a time, never mix a sub-agent's calls with its
parent's. The main thread's run is the prompt that started it (``promptId``, or the prompt
line's ``uuid`` in versions without it).

Lines become events:

* ``assistant``: one ``AssistantMessage`` per reply (``message.id`` + ``requestId``; a reply
  is streamed as one line per content block) and a ``ToolCall`` per ``tool_use`` block. A
  reply's tokens are counted as ccusage counts them (``claude_usage``); a later line of the
  same reply that ccusage would count instead adds only its extra tokens (an
  ``AssistantMessage`` with ``tool_call_count`` of that line). A ``tool_use`` id already seen
  (a sidechain replaying its parent's lines, a resumed session's file starting with copies of
  the earlier one's) is not called again, nor a ``tool_result`` id answered again, however
  long ago it was read: the recent ids are kept with their names, every id as a digest
  (``seen_digests``; a checkpoint keeps the newest digests and the last ``IDS_CHECKPOINTED`` names).
  ``isApiErrorMessage`` lines are failed replies (``stop_reason "error"``, the API error as
  ``error_message``).
* ``user``: a ``ToolResult`` per ``tool_result`` block, shaped by ``cli_tools``; a typed
  prompt (not a tool result, not ``isMeta``/``isCompactSummary``, not an interruption
  marker) is a ``UserMessage`` and starts a run.
* ``system`` with ``subtype: compact_boundary`` is a ``Compaction`` (``compactMetadata.preTokens``).
* Everything else (``summary``, ``attachment``, ``queue-operation``, ``last-prompt``,
  ``file-history-snapshot``, ``api-request``, ``cost-state`` and the many types new versions add)
  carries no tool call or usage and is skipped without counting as an error. A line that is
  not a JSON object, or an ``assistant``/``user`` line without a ``message`` object, is an error.

Each session gets one ``SessionInfo`` (agent ``claude-code``: one agent id for every
Claude Code session, so ``agents.claude-code`` in the config sets this source's thresholds and
budgets; the project's working directory is the ``label``) before its first event.
"""

from __future__ import annotations

import os
import re
from collections import OrderedDict
from typing import Any

from monitor import untrusted_json
from monitor.events import (
    AssistantMessage,
    Compaction,
    SessionInfo,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
)
from monitor.sources.claude_usage import UsageLedger, counted_usage, usage_key
from monitor.sources.cli_tools import claude_result, claude_text, openclaw_tool, tool_kind
from monitor.sources.jsonl_tree import JsonlTreeSource
from monitor.sources.regular import open_regular_file
from monitor.sources.seen_digests import SeenDigests, digests_state, key_digest, restore_digests
from monitor.sources.transcript import parse_timestamp, sane_cost, sane_count, tool_name
from monitor.sources.transcript import text_or_none as _text

SOURCE = "claude-code"
AGENT_ID = "claude-code"
SUBAGENTS_DIR = "subagents"
#: Tool calls remembered (id -> name) to name their results and to skip replayed copies.
CALLS_KEPT = 8192
RESULTS_KEPT = 8192
#: Of those, written into a checkpoint.
IDS_CHECKPOINTED = 256
_SAFE_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}\Z", re.ASCII)
INTERRUPTED = "[Request interrupted by user"
LABEL_CHARS = 512
PEEK_BYTES = 64 << 10
PEEK_LINES = 8


def _shape(name: str) -> str | None:
    """The OpenClaw tool whose outcome rules apply to this Claude Code tool (None: unknown)."""
    return openclaw_tool(SOURCE, name) if tool_kind(SOURCE, name) else None


def session_key(session_id: str) -> str:
    return f"{SOURCE}:{session_id}"


def _safe_id(value: Any) -> str | None:
    return value if isinstance(value, str) and _SAFE_ID.match(value) else None


def _first_session_id(path: str) -> str | None:
    """The ``sessionId`` named by the first lines of a pre-2.1 ``agent-<id>.jsonl`` (its
    parent's), read from at most ``PEEK_BYTES``."""
    try:
        with open_regular_file(path) as handle:
            head = handle.read(PEEK_BYTES)
    except OSError:
        return None
    for line in head.split(b"\n")[:PEEK_LINES]:
        try:
            entry = untrusted_json.loads(line)
        except ValueError:
            continue
        session_id = _safe_id(entry.get("sessionId")) if isinstance(entry, dict) else None
        if session_id:
            return session_id
    return None


def _beside(path: str, session_id: str | None) -> str | None:
    """``session_id`` when that session's transcript is in ``path``'s folder: a pre-2.1
    sub-agent's file names its parent's ``sessionId`` and sits beside the parent's, and one
    naming a session kept elsewhere (another project's, another user's) cannot make its
    calls that session's."""
    if session_id and os.path.isfile(os.path.join(os.path.dirname(path), f"{session_id}.jsonl")):
        return session_id
    return None


def _parent_folder_session(path: str) -> str | None:
    """The session of a 2.1 sub-agent's ``<project>/<session>/subagents/<agent>.jsonl``:
    the folder's name, when ``<project>/<session>.jsonl`` is there too (``_beside``)."""
    session_folder = os.path.dirname(os.path.dirname(path))
    return _beside(session_folder, os.path.basename(session_folder))


def is_claude_code_entry(entry: dict) -> bool:
    """Whether a transcript's first JSON object was written by Claude Code (every line of
    its own names the ``sessionId``; an OpenClaw transcript starts ``{"type": "session"}``,
    a Codex rollout ``{"type": "session_meta", "payload": ...}``)."""
    return isinstance(entry.get("sessionId"), str) or (
        entry.get("type") == "summary" and "leafUuid" in entry)


class _FileContext:
    """What one transcript file's lines share: the session, and the run now going on.
    ``agent_run`` is the fixed run of a sub-agent's own file (None: the session's file)."""

    __slots__ = ("agent_run", "run_id", "session_id")

    def __init__(self, session_id: str | None, agent_run: str | None) -> None:
        self.session_id = session_id
        self.agent_run = agent_run
        self.run_id: str | None = agent_run

    def state(self) -> dict | None:
        """What a restart needs: the main thread's run, a session learned from the lines."""
        if self.agent_run is None and self.run_id is not None:
            return {"run": self.run_id}
        if self.agent_run is not None and self.session_id is not None:
            return {"session": self.session_id}
        return None


class ClaudeCodeSource(JsonlTreeSource):
    """Every Claude Code transcript under ``projects_dir`` (``~/.claude/projects``)."""

    source_name = SOURCE
    max_depth = 4

    def __init__(self, projects_dir: str, *, agent_id: str = AGENT_ID,
                 resume: dict | None = None, only_files: set[str] | None = None) -> None:
        self._files: dict[str, _FileContext] = {}
        self._saved_files: dict[str, dict] = {}
        self._ledger = UsageLedger()
        self._calls: OrderedDict[str, str] = OrderedDict()
        self._results: OrderedDict[str, None] = OrderedDict()
        self._calls_seen = SeenDigests()
        self._results_seen = SeenDigests()
        self._announced: set[str] = set()
        super().__init__(projects_dir, agent_id, resume=resume, only_files=only_files)

    @classmethod
    def for_file(cls, path: str, **options) -> ClaudeCodeSource:
        """A source reading only the transcript ``path``, seen from its projects dir
        (``<projects>/<project>/<file>``, or four levels up for ``subagents/<file>``)."""
        path = os.path.abspath(path)
        up = 4 if os.path.basename(os.path.dirname(path)) == SUBAGENTS_DIR else 2
        root = path
        for _ in range(up):
            root = os.path.dirname(root)
        return cls(root, only_files={path}, **options)

    # ------------------------------------------------------------------ layout

    def wants_dir(self, parts: tuple[str, ...]) -> bool:
        return len(parts) in (1, 2) or (len(parts) == 3 and parts[2] == SUBAGENTS_DIR)

    def wants_file(self, parts: tuple[str, ...]) -> bool:
        if not parts[-1].endswith(".jsonl"):
            return False
        return len(parts) == 2 or (len(parts) == 4 and parts[2] == SUBAGENTS_DIR)

    def session_of(self, path: str) -> str:
        context = self._files.get(path)
        if context is not None and context.session_id is not None:
            return context.session_id
        parts = os.path.relpath(path, self.path).split(os.sep)
        stem = parts[-1][: -len(".jsonl")]
        if len(parts) == 4:
            return _parent_folder_session(path) or stem
        if stem.startswith("agent-"):
            return _beside(path, _first_session_id(path)) or stem
        return stem

    def _context(self, path: str) -> _FileContext:
        context = self._files.get(path)
        if context is not None:
            return context
        parts = os.path.relpath(path, self.path).split(os.sep)
        stem = parts[-1][: -len(".jsonl")]
        if len(parts) == 4:                       # <project>/<session>/subagents/<agent>.jsonl
            context = _FileContext(_parent_folder_session(path) or stem,
                                   f"agent:{stem.removeprefix('agent-')}")
        elif stem.startswith("agent-"):           # <project>/agent-<id>.jsonl (before 2.1)
            context = _FileContext(None, f"agent:{stem.removeprefix('agent-')}")
        else:
            context = _FileContext(stem, None)
        saved = self._saved_files.pop(path, None)
        if saved:
            if context.agent_run is None:
                context.run_id = _safe_id(saved.get("run"))
            context.session_id = context.session_id or _safe_id(saved.get("session"))
        self._files[path] = context
        return context

    # ------------------------------------------------------------------- lines

    def read_entry(self, path: str, offset: int, entry: dict, text: str) -> list:
        entry_type = entry.get("type")
        if entry_type is not None and not isinstance(entry_type, str):
            raise ValueError("entry type is not a string")
        message = entry.get("message")
        if entry_type is None and isinstance(message, dict) \
                and message.get("role") == "assistant":
            entry_type = "assistant"
        if entry_type not in ("assistant", "user", "system"):
            return []
        context = self._context(path)
        if context.session_id is None:
            context.session_id = _beside(path, _first_session_id(path)) \
                or _beside(path, _safe_id(entry.get("sessionId"))) \
                or os.path.basename(path)[: -len(".jsonl")]
        origin = f"{path}@{offset}"
        if entry_type == "system":
            events = self._system(context, entry, origin)
        elif not isinstance(message, dict):
            raise ValueError(f"{entry_type} entry without a message object")
        elif entry_type == "assistant":
            events = self._assistant(context, entry, message, text, origin)
        else:
            events = self._user(context, entry, message, origin)
        if events and context.session_id not in self._announced:
            self._announced.add(context.session_id)
            events.insert(0, self._session_info(context.session_id, path, entry))
        return events

    def _session_info(self, session_id: str, path: str, entry: dict) -> SessionInfo:
        project = os.path.relpath(path, self.path).split(os.sep)[0]
        return SessionInfo(key=session_key(session_id), session_id=session_id,
                           agent_id=self.agent_id, provider="anthropic",
                           label=(_text(entry.get("cwd")) or project)[:LABEL_CHARS],
                           updated_at=parse_timestamp(entry.get("timestamp")),
                           origin=f"{path}#session", source=SOURCE)

    def _run(self, context: _FileContext, entry: dict) -> str | None:
        if context.agent_run is None and entry.get("isSidechain") is True:
            agent = _safe_id(entry.get("agentId"))
            return f"agent:{agent}" if agent else "sidechain"
        return context.run_id

    def _assistant(self, context: _FileContext, entry: dict, message: dict, text: str,
                   origin: str) -> list:
        session_id = context.session_id
        ts = parse_timestamp(entry.get("timestamp"))
        run_id = self._run(context, entry)
        content = message.get("content")
        calls: list[ToolCall] = []
        text_chars = 0
        for index, block in enumerate(content if isinstance(content, list) else []):
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use":
                call_id = _text(block.get("id")) or f"{origin}#{index}"
                if call_id in self._calls or not self._calls_seen.add(key_digest(call_id)):
                    continue
                name = tool_name(_text(block.get("name")) or "?")
                self._remember_call(call_id, name)
                calls.append(ToolCall(session_id, call_id, name, block.get("input"), run_id, ts,
                                      f"{origin}#{index}", "input" in block,
                                      _shape(name)))
            elif block.get("type") == "text" and isinstance(block.get("text"), str):
                text_chars += len(block["text"])
        first, added = self._ledger.offer(usage_key(entry), counted_usage(entry, text))
        if not first and added is None:
            return list(calls)
        stop_reason = _text(message.get("stop_reason"))
        error = None
        if entry.get("isApiErrorMessage") is True:
            stop_reason = "error"
            error = claude_text(content) or "API error"
        model = _text(message.get("model"))
        cost = (sane_cost(entry.get("costUSD")) or 0.0) if first else 0.0
        usage = added.as_usage(cost) if added is not None else Usage()
        tool_count = len(calls) or (1 if stop_reason == "tool_use" and first else 0)
        reply = AssistantMessage(session_id=session_id, run_id=run_id, ts=ts, usage=usage,
                                 stop_reason=stop_reason, error_message=error,
                                 model=None if model == "<synthetic>" else model,
                                 provider="anthropic", tool_call_count=tool_count,
                                 text_chars=text_chars, origin=origin,
                                 mid_reply=stop_reason is None)
        return [reply, *calls]

    def _user(self, context: _FileContext, entry: dict, message: dict, origin: str) -> list:
        session_id = context.session_id
        ts = parse_timestamp(entry.get("timestamp"))
        prompt_id = _safe_id(entry.get("promptId"))
        main_thread = context.agent_run is None and entry.get("isSidechain") is not True
        if main_thread and prompt_id:
            context.run_id = prompt_id
        content = message.get("content")
        results: list[ToolResult] = []
        prompt_parts: list[str] = [content] if isinstance(content, str) else []
        for index, block in enumerate(content if isinstance(content, list) else []):
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_result":
                result = self._tool_result(context, entry, block, f"{origin}#{index}", ts)
                if result is not None:
                    results.append(result)
            elif block.get("type") == "text" and isinstance(block.get("text"), str):
                prompt_parts.append(block["text"])
        if isinstance(content, list) and any(isinstance(block, dict)
                                             and block.get("type") == "tool_result"
                                             for block in content):
            return list(results)
        prompt = "\n".join(prompt_parts)
        if not prompt or entry.get("isMeta") is True or entry.get("isCompactSummary") is True \
                or prompt.startswith(INTERRUPTED):
            return []
        if main_thread:
            context.run_id = prompt_id or _safe_id(entry.get("uuid")) or context.run_id
        return [UserMessage(session_id, self._run(context, entry), ts, len(prompt), origin)]

    def _tool_result(self, context: _FileContext, entry: dict, block: dict, origin: str,
                     ts: float | None) -> ToolResult | None:
        call_id = _text(block.get("tool_use_id")) or ""
        if call_id:
            if call_id in self._results or not self._results_seen.add(key_digest(call_id)):
                return None
            self._remember_result(call_id)
        name = self._calls.get(call_id, "?")
        text = claude_text(block.get("content"))
        is_error = block.get("is_error") is True
        details = claude_result(tool_kind(SOURCE, name), text, is_error,
                                entry.get("toolUseResult"))
        return ToolResult(context.session_id, call_id, name, is_error, details, text,
                          self._run(context, entry), ts, origin)

    def _system(self, context: _FileContext, entry: dict, origin: str) -> list:
        if entry.get("subtype") != "compact_boundary":
            return []
        metadata = entry.get("compactMetadata")
        before = sane_count(metadata.get("preTokens")) if isinstance(metadata, dict) else None
        return [Compaction(context.session_id, "compaction", before,
                           parse_timestamp(entry.get("timestamp")), origin)]

    def _remember_call(self, call_id: str, name: str) -> None:
        self._calls[call_id] = name
        while len(self._calls) > CALLS_KEPT:
            self._calls.popitem(last=False)

    def _remember_result(self, call_id: str) -> None:
        self._results[call_id] = None
        while len(self._results) > RESULTS_KEPT:
            self._results.popitem(last=False)

    def forget_file(self, path: str) -> None:
        self._files.pop(path, None)
        self._saved_files.pop(path, None)

    # -------------------------------------------------------------- checkpoint

    def parse_state(self) -> dict:
        files = dict(self._saved_files)
        for path, context in self._files.items():
            state = context.state()
            if state is not None:
                files[path] = state
        return {"usage": self._ledger.state(),
                "calls": list(self._calls.items())[-IDS_CHECKPOINTED:],
                "results": list(self._results)[-IDS_CHECKPOINTED:],
                "seen": digests_state(self._seen_sets()),
                "files": files}

    def _seen_sets(self) -> dict[str, SeenDigests]:
        """The digests of every key read, by the name a checkpoint saves them under."""
        return {"replies": self._ledger.seen, "calls": self._calls_seen,
                "results": self._results_seen}

    def restore_parse_state(self, saved: dict) -> None:
        restore_digests(self._seen_sets(), saved.get("seen"))
        self._ledger.restore(saved.get("usage"))
        for row in saved.get("calls") or [] if isinstance(saved.get("calls"), list) else []:
            if isinstance(row, list) and len(row) == 2 and all(isinstance(v, str) for v in row):
                self._calls_seen.add(key_digest(row[0]))
                self._remember_call(row[0], row[1])
        for call_id in saved.get("results") or [] if isinstance(saved.get("results"),
                                                                 list) else []:
            if isinstance(call_id, str):
                self._results_seen.add(key_digest(call_id))
                self._remember_result(call_id)
        files = saved.get("files")
        if isinstance(files, dict):
            self._saved_files = {path: value for path, value in files.items()
                                 if isinstance(path, str) and isinstance(value, dict)}

"""A tool call as OpenClaw's loop detection sees it: ``hashToolCall`` of its normalised tool
name and params, and the calls it treats apart (known polls, and calls agent-core refused
before loop admission, which OpenClaw never records).
"""

from __future__ import annotations

from typing import Any

from monitor.detect.jsstable import UNDEFINED, js_lower, js_trim, stable_digest
from monitor.detect.memo import BoundedMemo
from monitor.detect.remembered_digests import remembered_digest

#: ``TOOL_NAME_ALIASES`` of OpenClaw's ``tool-policy-shared``: one tool under two names.
TOOL_NAME_ALIASES = {"bash": "exec", "apply-patch": "apply_patch", "cron": "automations"}
#: Up to this many tool names of at most this many characters are remembered.
REMEMBERED_NAMES = 256
REMEMBERED_NAME_CHARS = 256
_NORMALIZED_NAMES = BoundedMemo(REMEMBERED_NAMES)


def normalize_tool_name(name: str | None) -> str:
    """The name OpenClaw's loop detection keys a call by:
    ``normalizeToolPolicyName(name || "tool")`` of ``tool-policy-shared`` — trimmed,
    lowercased, an alias made the tool it stands for (``bash`` is ``exec``). Any text is a
    name; none is refused. Names up to ``REMEMBERED_NAME_CHARS`` long are remembered (an
    agent calls a few tools over and over)."""
    normalized = _NORMALIZED_NAMES.get(name)
    if normalized is None:
        normalized = _normalize_tool_name(name)
        if name is not None and len(name) <= REMEMBERED_NAME_CHARS:
            _NORMALIZED_NAMES.keep(name, normalized)
    return normalized


def _normalize_tool_name(name: str | None) -> str:
    folded = js_lower(js_trim(name or "tool"))
    return TOOL_NAME_ALIASES.get(folded, folded)


def tool_params(arguments: Any, has_arguments: bool = True) -> Any:
    """The params OpenClaw hashes: ``undefined`` when the call stored no arguments."""
    return arguments if has_arguments else UNDEFINED


def hash_tool_call(tool: str, params: Any) -> str:
    """``hashToolCall``; the digest of small flat params is remembered
    (``remembered_digest``)."""
    return f"{tool}:{remembered_digest('call', params, stable_digest)}"


def is_not_admitted(tool_name: str, text: str) -> bool:
    """Results agent-core produces before loop admission; OpenClaw never records these calls."""
    return text == f"Tool {tool_name} not found" or text.startswith(
        'Validation failed for tool "')


def is_known_poll(tool: str, params: Any) -> bool:
    if tool == "command_status":
        return True
    return tool == "process" and isinstance(params, dict) and params.get("action") in (
        "poll", "log")

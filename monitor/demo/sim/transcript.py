"""Builders for OpenClaw 2026.9.6 transcript events, shaped like the real ones.

Key order, field names and nesting follow events read from a real agent database
(``transcript_events`` of schema v23), so a reader tested against these sees what it
will see in production. Ids come from an :class:`IdSource` so that a seeded simulator
writes the same transcript every time.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import uuid
from datetime import UTC, datetime
from typing import Any

EXEC_FOLLOW_UP = (
    "Use process (list/poll/log/write/send-keys/submit/paste/kill/clear/remove) for follow-up."
)


def dumps(obj: Any) -> str:
    """Serialise like the gateway (``JSON.stringify``): compact, non-ASCII kept as is."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def to_ms(ts: float) -> int:
    return round(ts * 1000)


def iso_ms(ts: float) -> str:
    """``2026-11-29T13:57:11.540Z``: the ``timestamp`` format of transcript events."""
    dt = datetime.fromtimestamp(to_ms(ts) / 1000, tz=UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def source_hash(texts: list[str]) -> str:
    """The ``sourceHash`` of a frozen tool result: base64url(sha256(JSON of its text blocks))."""
    digest = hashlib.sha256(dumps(texts).encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


class IdSource:
    """Deterministic ids in the formats OpenClaw uses."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def hex(self, chars: int) -> str:
        return f"{self.rng.getrandbits(chars * 4):0{chars}x}"

    def call_id(self) -> str:
        return "call_" + self.hex(16)

    def response_id(self) -> str:
        return "chatcmpl-" + self.hex(12)


def usage(input_tokens: int, output_tokens: int) -> dict[str, Any]:
    zero_cost = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
    return {
        "input": input_tokens,
        "output": output_tokens,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": input_tokens + output_tokens,
        "cost": zero_cost,
    }


def session_header(session_id: str, ts: float, cwd: str, version: int = 4) -> dict[str, Any]:
    return {"type": "session", "version": version, "id": session_id, "timestamp": iso_ms(ts),
            "cwd": cwd}


def user_message(
    event_id: str, ts: float, text: str, run_id: str, received_ts: float
) -> dict[str, Any]:
    return {
        "type": "message",
        "id": event_id,
        "parentId": None,
        "timestamp": iso_ms(ts),
        "message": {
            "role": "user",
            "content": text,
            "timestamp": to_ms(received_ts),
            "idempotencyKey": f"{run_id}:user",
            "__openclaw": {
                "senderIsOwner": True,
                "transport": {"clients": [{"id": "gateway-client", "mode": "backend"}]},
            },
        },
    }


def thinking_level_change(event_id: str, parent_id: str, ts: float, level: str = "off") -> dict:
    return {"type": "thinking_level_change", "thinkingLevel": level, "id": event_id,
            "parentId": parent_id, "timestamp": iso_ms(ts)}


def custom(
    event_id: str, parent_id: str | None, ts: float, custom_type: str, data: dict[str, Any]
) -> dict[str, Any]:
    return {"type": "custom", "customType": custom_type, "data": data, "id": event_id,
            "parentId": parent_id, "timestamp": iso_ms(ts)}


def model_snapshot(
    event_id: str, parent_id: str, ts: float, provider: str, api: str, model: str
) -> dict[str, Any]:
    data = {"timestamp": to_ms(ts), "provider": provider, "modelApi": api, "modelId": model}
    return custom(event_id, parent_id, ts, "model-snapshot", data)


def cache_ttl(event_id: str, parent_id: str, ts: float, frozen: list[dict]) -> dict[str, Any]:
    """The ``openclaw.cache-ttl`` entry; ``frozen`` grows by one tool result per turn."""
    data = {"prunedToolResults": [], "ambiguousToolResultBaseKeys": [],
            "frozenToolResults": list(frozen)}
    return custom(event_id, parent_id, ts, "openclaw.cache-ttl", data)


def bootstrap_context(
    event_id: str, parent_id: str, ts: float, run_id: str, session_id: str
) -> dict[str, Any]:
    data = {"timestamp": to_ms(ts), "runId": run_id, "sessionId": session_id}
    return custom(event_id, parent_id, ts, "openclaw:bootstrap-context:full", data)


def assistant_message(
    event_id: str,
    parent_id: str,
    ts: float,
    *,
    content: list[dict[str, Any]],
    model_usage: dict[str, Any],
    stop_reason: str,
    started_ts: float,
    response_id: str,
    run_id: str,
    provider: str,
    model: str,
    api: str,
) -> dict[str, Any]:
    """An assistant reply: ``toolCall`` items (stopReason ``toolUse``) or text (``stop``)."""
    return {
        "type": "message",
        "id": event_id,
        "parentId": parent_id,
        "timestamp": iso_ms(ts),
        "message": {
            "role": "assistant",
            "content": content,
            "api": api,
            "provider": provider,
            "model": model,
            "usage": model_usage,
            "stopReason": stop_reason,
            "timestamp": to_ms(started_ts),
            "responseId": response_id,
            "__openclaw": {"runId": run_id},
        },
    }


def assistant_error(
    event_id: str,
    parent_id: str,
    ts: float,
    *,
    error: str,
    started_ts: float,
    run_id: str,
    provider: str,
    model: str,
    api: str,
) -> dict[str, Any]:
    """The terminal error turn OpenClaw writes when it stops a run itself."""
    return {
        "type": "message",
        "id": event_id,
        "parentId": parent_id,
        "timestamp": iso_ms(ts),
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": error}],
            "api": api,
            "provider": provider,
            "model": model,
            "stopReason": "error",
            "errorMessage": error,
            "timestamp": to_ms(started_ts),
            "usage": usage(0, 0),
            "idempotencyKey": f"{run_id}:terminal-error",
            "__openclaw": {"runId": run_id},
        },
    }


def tool_call_item(call_id: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "toolCall", "id": call_id, "name": tool, "arguments": arguments}


def tool_result(
    event_id: str,
    parent_id: str,
    ts: float,
    *,
    call_id: str,
    tool: str,
    text: str,
    details: dict[str, Any] | None,
    is_error: bool,
    run_id: str,
) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": tool,
        "content": [{"type": "text", "text": text}],
    }
    if details is not None:
        message["details"] = details
    message.update({"isError": is_error, "timestamp": to_ms(ts), "__openclaw": {"runId": run_id}})
    return {"type": "message", "id": event_id, "parentId": parent_id, "timestamp": iso_ms(ts),
            "message": message}


def exec_details(
    output: str, exit_code: int, duration_ms: int, cwd: str
) -> tuple[str, dict[str, Any]]:
    """Text and ``details`` of a finished foreground ``exec``, as the 2026.9.6 tool builds them."""
    if exit_code == 0:
        aggregated = output
        text = output or "(no output)"
    else:
        aggregated = f"{output}\n(Command exited with code {exit_code})"
        text = aggregated
    details = {
        "status": "completed",
        "exitCode": exit_code,
        "exitSignal": None,
        "exitReason": "exit",
        "durationMs": duration_ms,
        "aggregated": aggregated,
        "noOutputTimedOut": False,
        "cwd": cwd,
    }
    return text, details


def navigation(event: dict[str, Any], utf8_bytes: int) -> dict[str, Any]:
    """The ``navigation_json`` stored beside a zstd-compressed event.

    Shape copied from real rows (all of them ``custom`` entries); for ``message``
    events the ``message.role`` in ``navigation``/``model`` is an extrapolation.
    """
    nav = {k: event[k] for k in ("type", "customType", "id", "parentId", "timestamp")
           if k in event}
    role = event.get("message", {}).get("role") if event.get("type") == "message" else None
    if role is not None:
        nav["message"] = {"role": role}
    reset = dict(nav)
    reset["message"] = {"role": role}
    without_data = {k: v for k, v in event.items() if k != "data"}
    entry = {k: event.get(k) for k in ("id", "parentId", "timestamp", "type")}
    return {
        "version": 1,
        "report": {"kind": "canonical", "hasParentId": event.get("parentId") is not None,
                   "entry": entry},
        "navigation": nav,
        "reset": reset,
        "model": dict(nav),
        "modelBytes": utf8_bytes,
        "modelWithoutCheckpointBytes": utf8_bytes,
        "withoutCustomDataBytes": len(dumps(without_data).encode()),
    }

"""Sends whose results OpenClaw hashes without their volatile ids: a message sent twice gets a
new message id, receipt and timestamp each time, so they are dropped before hashing, or a
send repeated in a loop would never look like a repeat.
"""

from __future__ import annotations

from typing import Any

SEND_LIKE_MESSAGE_ACTIONS = frozenset({
    "send", "broadcast", "reply", "thread-reply", "sendWithEffect", "sendAttachment",
    "upload-file", "sticker", "poll",
})
VOLATILE_SEND_RESULT_KEYS = frozenset({
    "messageId", "message_id", "messageIds", "platformMessageId", "platformMessageIds",
    "fileId", "file_id", "fileKey", "pollId", "poll_id", "receipt", "runId",
    "idempotencyKey", "ts", "timestamp", "sentAt", "deliveredAt", "createdAt",
})
SEND_TOOLS = frozenset({"sessions_send", "conversations_send", "conversations_turn"})
# Channel plugins decide "is this a send" themselves; a target in ``to`` is the common shape.
CHANNEL_TOOLS = frozenset({
    "telegram", "discord", "slack", "whatsapp", "signal", "imessage", "googlechat", "msteams",
    "matrix", "mattermost", "line", "feishu", "zalo", "nostr", "irc",
})


def _is_message_delivery(value: dict) -> bool:
    return isinstance(value.get("id"), str) and isinstance(value.get("text"), str) and (
        isinstance(value.get("direction"), str) or isinstance(value.get("senderId"), str)
        or isinstance(value.get("accountId"), str) or isinstance(value.get("conversation"), dict)
    )


def strip_volatile_send_ids(value: Any) -> Any:
    if isinstance(value, list):
        return [strip_volatile_send_ids(item) for item in value]
    if not isinstance(value, dict):
        return value
    drop_id = _is_message_delivery(value)
    return {key: strip_volatile_send_ids(nested) for key, nested in value.items()
            if key not in VOLATILE_SEND_RESULT_KEYS and not (key == "id" and drop_id)}


def is_volatile_send(tool: str, params: Any) -> bool:
    if tool in SEND_TOOLS:
        return True
    args = params if isinstance(params, dict) else {}
    action = args.get("action")
    if tool == "message":
        return isinstance(action, str) and action in SEND_LIKE_MESSAGE_ACTIONS
    target = args.get("to")
    return tool in CHANNEL_TOOLS and isinstance(target, str) and bool(target.strip())

"""OpenClaw 2026.9.6's call and outcome hashing, rebuilt from transcript records.

``hash_tool_call`` and ``outcome_of`` reproduce ``hashToolCall`` and
``hashToolOutcome`` of ``dist/tool-loop-detection-*.mjs``. OpenClaw hashes the
result object the tool returned; the transcript stores that object with, at
most, a ``[System note: Tool-loop warning …]`` text part appended by the loop
guard, which is removed here before hashing. Thrown errors reach the
transcript as ``isError`` results whose text is the error message.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from monitor.detect.jsstable import UNDEFINED, js_float, js_number, js_trim, stable_digest
from monitor.detect.memo import BoundedMemo

VETO_KIND = "tool-loop-veto"
TERMINAL_EXEC_FAILURE = "terminal-exec-failure"

_LOOP_NOTE = re.compile(
    r"\n?\[System note: Tool-loop warning after \d+ repeated calls\. Change your approach or"
    r" stop if you are not making progress\.\]\Z"
)
_LOOP_NOTE_END = " repeated calls. Change your approach or stop if you are not making progress.]"
# An untrusted-content block whose END marker repeats the start marker's id. The body runs
# to the first start or END marker; it is scanned in runs of non-``<`` characters and
# possessively (the body can only end at that first marker, so backtracking never helps),
# which keeps the match linear in the page length.
_MARKER = re.compile(
    r'(<<<EXTERNAL_UNTRUSTED_CONTENT id=(\\*+)")([a-f0-9]{16})(\2">>>'
    r'(?:[^<]++|<(?!<<(?:END_)?EXTERNAL_UNTRUSTED_CONTENT))*+'
    r'<<<END_EXTERNAL_UNTRUSTED_CONTENT id=\2")\3(\2">>>)'
)
_WS = "[\t\n\x0b\x0c\r \xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]"
# OpenClaw's volatile-value masks for a terminal exec failure, each with a gate: a cheap
# test that holds whenever the regex can match (a ``memchr``, a search of the lowercased
# text, a literal search of a shape), so an output without what a regex needs skips it;
# three of them scan at 10-25 ns a character when run. The duration's number is
# possessive (what follows it, ``.``, whitespace or a unit, is never a digit, so giving
# digits back never helps): one long run of digits is read once, not once per digit.
_ISO_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[t ]\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?"
                       r"(?:z|[+-]\d{2}:\d{2})?", re.ASCII | re.IGNORECASE)
_CLOCK_TIME = re.compile(r"\d{1,2}:\d{2}:\d{2}(?:\.\d{1,6})?", re.ASCII)
_ATTEMPT = re.compile(rf"\b(?:attempt|retry)\b(?:{_WS}|[#:=])*\d+", re.ASCII | re.IGNORECASE)
_DURATION = re.compile(rf"\b\d++(?:\.\d++)?{_WS}?(?:ns|us|ms|seconds?|minutes?|hours?|s)\b",
                       re.ASCII | re.IGNORECASE)
_PID = re.compile(rf"\b(?:pid|ppid)\b(?:{_WS}|[#:=])*\d+", re.ASCII | re.IGNORECASE)
# An ASCII text's shape for ``_DURATION``: digits ``9``, whitespace a space, the first
# letters of the units (either case) ``u``. A match ends in a digit followed by a unit,
# directly or after one whitespace character, so ``9 ?u`` occurs in the shape.
_UNIT_SHAPE = bytes.maketrans(b"0123456789\t\n\x0b\x0c\rnNuUmMsShH",
                              b"9999999999     uuuuuuuuuu")
_UNIT_PROBE = re.compile(rb"9 ?u")
#: Units ``_may_hold_duration`` looks at one by one (each a ``memchr``) before it hands the
#: rest of the shape to ``_UNIT_PROBE``: a regex with a literal start still tries every
#: position of a run of digits.
_UNIT_TRIES = 64


def _may_hold_duration(text: str) -> bool:
    if not text.isascii():  # whitespace beyond ASCII: let the regex decide
        return True
    shaped = text.encode("ascii").translate(_UNIT_SHAPE)
    at = shaped.find(b"u")
    for _ in range(_UNIT_TRIES):
        if at < 0:
            return False
        if shaped[at - 1:at] == b"9" or shaped[max(0, at - 2):at] == b"9 ":
            return True
        at = shaped.find(b"u", at + 1)
    return _UNIT_PROBE.search(shaped, at) is not None


def _holds(words: tuple[str, ...]):
    """A gate: the lowercased text holds one of ``words`` (each first looked for by its last
    letter alone, a ``memchr``: a search for a word crawls through a long run of digits)."""
    def may_match(text: str) -> bool:
        lower = text.lower()
        return any(word[-1] in lower and word in lower for word in words)
    return may_match


_VOLATILE_EXEC_FAILURE: tuple[tuple[re.Pattern, Callable[[str], bool]], ...] = (
    (_ISO_TIME, lambda text: "-" in text and ":" in text),
    (_CLOCK_TIME, lambda text: ":" in text),
    (_ATTEMPT, _holds(("attempt", "retry"))),
    (_DURATION, _may_hold_duration),
    (_PID, _holds(("pid",))),
)
_UNKNOWN_TOOL = (
    re.compile(r"""unknown tool[:\s]+["']?([a-z0-9_.-]+)["']?""", re.IGNORECASE),
    re.compile(r"""tool\s+["']?([a-z0-9_.-]+)["']?\s+(?:not found|is not available)""",
               re.IGNORECASE),
)
_TOOL_NAME = re.compile(r"^[a-z0-9._-]+$")
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


@dataclass(slots=True)
class Outcome:
    """What ``recordToolCallOutcome`` stores on a history record (each hash a string, or
    what ``outcome_of``'s ``defer`` gave for it)."""

    result_hash: Any = None
    kind: str | None = None
    failure_identity: Any = None
    no_progress: bool = False
    unknown_tool_name: str | None = None


def normalize_tool_name(name: str | None) -> str:
    """``normalizeToolPolicyName(name || "tool")``; invalid names become ``undefined`` as in JS."""
    normalized = js_trim(name or "tool").lower()
    if not normalized or len(normalized) > 128 or not _TOOL_NAME.match(normalized):
        return "undefined"
    return normalized


def tool_params(arguments: Any, has_arguments: bool = True) -> Any:
    """The params OpenClaw hashes: ``undefined`` when the call stored no arguments."""
    return arguments if has_arguments else UNDEFINED


def hash_tool_call(tool: str, params: Any) -> str:
    """``hashToolCall``; the digest of small flat params is remembered (``_remembered``)."""
    return f"{tool}:{_remembered('call', params, stable_digest)}"


def _canonical_markers(text: str) -> str:
    if "<<<EXTERNAL_UNTRUSTED_CONTENT" not in text:
        return text

    def replace(match: re.Match) -> str:
        start, escapes, _id, middle, end = match.groups()
        width = len(escapes)
        if (width & (width + 1)) != 0 or not _quotes_escaped_like_marker(middle, width):
            return match.group(0)
        return start + "0" * 16 + middle + "0" * 16 + end

    return _MARKER.sub(replace, text)


def _quotes_escaped_like_marker(middle: str, width: int) -> bool:
    """True when every ``"`` in ``middle``, with the backslashes right before it, is a
    multiple of ``width + 1`` characters long (OpenClaw's check that the block sits at the
    marker's own JSON-escaping depth). Always true for an unescaped marker (``width`` 0)."""
    if width == 0 or '"' not in middle:
        return True
    step = width + 1
    for before_quote in middle.split('"')[:-1]:
        backslashes = len(before_quote) - len(before_quote.rstrip("\\"))
        if (backslashes + 1) % step:
            return False
    return True


def digest_outcome(value: Any) -> str:
    """``digestToolOutcome``: untrusted-content marker ids are canonicalised first. The
    digest of a flat value is remembered (``_remembered``)."""
    return _remembered("digest", value, _digest_outcome)


def _digest_outcome(value: Any) -> str:
    return stable_digest(value, _canonical_markers, "<<<EXTERNAL_UNTRUSTED_CONTENT")


#: Up to this many digests of flat values of at most this many entries and characters are
#: remembered (then it starts over; a few MB at most): a looping agent gets the same outcome
#: again and again, and a digest is most of what comparing two outcomes costs.
REMEMBERED_DIGESTS = 512
REMEMBERED_ENTRIES = 16
REMEMBERED_CHARS = 2048
_REMEMBERED = BoundedMemo(REMEMBERED_DIGESTS)
#: Floats, rare in outcomes, are left out (their JSON text is JavaScript's number text).
_FLAT_TYPES = frozenset((str, int, bool, type(None), type(UNDEFINED)))


def _remembered(kind: str, value: Any, make: Callable[[Any], str]) -> str:
    """``make(value)`` remembered under ``kind`` when ``value`` is a short string or a
    small flat dict of short strings and scalars. Each scalar is keyed with its type: ``1``
    and ``True`` are equal keys in Python, not in JSON."""
    if type(value) is str:
        if len(value) > REMEMBERED_CHARS:
            return make(value)
        key: tuple = (kind, value)
    elif type(value) is dict and len(value) <= REMEMBERED_ENTRIES:
        parts: list = [kind]
        chars = 0
        for name, item in value.items():
            item_type = type(item)
            if item_type is str:
                chars += len(item)
            elif item_type not in _FLAT_TYPES:
                return make(value)
            chars += len(name) if type(name) is str else REMEMBERED_CHARS
            parts += (name, item_type, item)
        if chars > REMEMBERED_CHARS:
            return make(value)
        key = tuple(parts)
    else:
        return make(value)
    digest = _REMEMBERED.get(key)
    if digest is None:
        digest = _REMEMBERED.keep(key, make(value))
    return digest


def strip_loop_note(text: str) -> str:
    """Remove the warning text part OpenClaw appends after hashing the real result. Only a
    text that ends as the note ends can hold it: the rest are not searched."""
    return _LOOP_NOTE.sub("", text) if text.endswith(_LOOP_NOTE_END) else text


def unknown_tool_name(message: str) -> str | None:
    raw = js_trim(message)
    if not raw:
        return None
    for pattern in _UNKNOWN_TOOL:
        match = pattern.search(raw)
        if match:
            return js_trim(match.group(1)).lower() or None
    return None


def is_not_admitted(tool_name: str, text: str) -> bool:
    """Results agent-core produces before loop admission; OpenClaw never records these calls."""
    return text == f"Tool {tool_name} not found" or text.startswith(
        'Validation failed for tool "')


def is_known_poll(tool: str, params: Any) -> bool:
    if tool == "command_status":
        return True
    return tool == "process" and isinstance(params, dict) and params.get("action") in (
        "poll", "log")


def _string_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _nullable_string(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    trimmed = js_trim(value)
    return trimmed or None


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def made_now(make: Callable[..., str], *args: Any) -> str:
    """``outcome_of``'s ``defer`` when nothing is deferred: the digest, made now."""
    return make(*args)


def _exec_hash(details: dict, text: str, defer: Callable = made_now) -> Any:
    status = _string_or_none(details.get("status"))
    if not status:
        return None
    if status == "running":
        tail = _string_or_none(details.get("tail")) or ""
        return defer(digest_outcome, {"status": status, "tail": tail})
    if status in ("completed", "failed"):
        exit_code = details.get("exitCode")
        return defer(digest_outcome, {
            "status": status,
            "exitCode": exit_code if _is_number(exit_code) else None,
            "timedOut": details.get("timedOut") is True,
            "output": _nullable_string(details.get("aggregated")) or text,
        })
    if status in ("approval-pending", "approval-unavailable"):
        return defer(digest_outcome, {
            "status": status,
            "reason": _string_or_none(details.get("reason")),
            "host": _string_or_none(details.get("host")),
            "command": _string_or_none(details.get("command")) or "",
            "warningText": _string_or_none(details.get("warningText")) or "",
        })
    return None


def mask_exec_output(output: str) -> str:
    """``output`` with OpenClaw's volatile values of an exec failure masked, in order."""
    for pattern, may_match in _VOLATILE_EXEC_FAILURE:
        if may_match(output):
            output = pattern.sub("#", output)
    return output


def _exec_failure_identity(details: dict, exit_code: Any, output: str) -> str:
    failure = {
        "status": details.get("status", UNDEFINED),
        "exitCode": exit_code,
        "timedOut": details.get("timedOut") is True,
        "output": output,
    }
    return _remembered("exec failure", failure, _masked_failure_digest)


def _masked_failure_digest(failure: dict) -> str:
    return _digest_outcome({**failure, "output": mask_exec_output(failure["output"])})


def _exec_outcome(details: dict, text: str, defer: Callable = made_now) -> Outcome | None:
    exec_hash = _exec_hash(details, text, defer)
    if not exec_hash:
        return None
    exit_code = details.get("exitCode")
    output = _nullable_string(details.get("aggregated")) or text
    if (details.get("status") in ("completed", "failed") and _is_number(exit_code)
            and math.isfinite(js_float(exit_code)) and exit_code != 0
            and details.get("timedOut") is not True and output != ""
            and output != f"(Command exited with code {js_number(exit_code)})"):
        return Outcome(exec_hash, TERMINAL_EXEC_FAILURE,
                       defer(_exec_failure_identity, details, exit_code, output))
    return Outcome(exec_hash)


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


# The params ``outcome_of`` reads (``process``'s ``action``; ``is_volatile_send``'s
# ``action`` and ``to``).
OUTCOME_PARAM_KEYS = ("action", "to")


def outcome_params(params: Any) -> dict[str, Any] | None:
    """The part of a call's params that ``outcome_of`` reads, for ``outcome_of`` to be
    given instead of the whole params with the same result.

    A call waiting for its result keeps only this: its arguments can be large (a
    ``write`` carries the file) and a result may never come (an aborted run).
    """
    if not isinstance(params, dict):
        return None
    return {key: params[key] for key in OUTCOME_PARAM_KEYS if key in params}


def _error_hash(message: str) -> str:
    return f"error:{digest_outcome(message)}"


def error_outcome(message: str, defer: Callable = made_now) -> Outcome:
    return Outcome(defer(_error_hash, message), no_progress=True,
                   unknown_tool_name=unknown_tool_name(message))


def outcome_of(tool: str, params: Any, *, is_error: bool, details: Any, text: str,
               is_veto: bool, defer: Callable = made_now) -> Outcome:
    """``hashToolOutcome`` for one transcript tool result (``text`` = joined text parts).

    Each hash is ``defer(make, *args)``: made now by default, or a value that makes it when
    compared (``outcome_keys.LazyDigest``)."""
    if is_veto:
        return Outcome(kind=VETO_KIND)
    text = strip_loop_note(text)
    if is_error and not (isinstance(details, dict) and details):
        return error_outcome(text, defer)
    details = details if isinstance(details, dict) else {}
    text = js_trim(text)
    if tool == "exec":
        outcome = _exec_outcome(details, text, defer)
        if outcome is not None:
            return outcome
    if tool == "write" and details.get("changed") is False:
        return Outcome(defer(digest_outcome, {"status": "unchanged"}), no_progress=True)
    if tool == "process" and isinstance(params, dict):
        action = params.get("action")
        if action == "poll":
            return Outcome(defer(digest_outcome, {
                "action": action,
                "status": details.get("status", UNDEFINED),
                "exitCode": details.get("exitCode"),
                "exitSignal": details.get("exitSignal"),
                "aggregated": details.get("aggregated"),
                "text": text,
            }))
        if action == "log":
            return Outcome(defer(digest_outcome, {
                "action": action,
                "status": details.get("status", UNDEFINED),
                "totalLines": details.get("totalLines"),
                "totalChars": details.get("totalChars"),
                "truncated": details.get("truncated"),
                "exitCode": details.get("exitCode"),
                "exitSignal": details.get("exitSignal"),
                "text": text,
            }))
    if is_volatile_send(tool, params):
        return Outcome(defer(digest_outcome, strip_volatile_send_ids(details)))
    return Outcome(defer(digest_outcome, {"details": details, "text": text}))

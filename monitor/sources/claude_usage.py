"""Which tokens a Claude Code assistant line contributes, decided exactly as ccusage does.

Claude Code writes one line per content block of a streamed reply (thinking, text, each
``tool_use``), every line repeating the reply's ``message.id``, ``requestId`` and a ``usage``
that may still grow (older versions copy the usage of ``message_start``, with an
``output_tokens`` of 1). ccusage 20.0.24 (``ccusage claude session``) counts each
``(message.id, requestId)`` once, keeping the line with the largest total, a main-thread line
over a sidechain copy, across all files; lines without ``message.id`` are all counted. It only
counts a line that

* contains ``"usage":{`` as written (no space) and none of ``"<field>":null`` for the fields
  its schema cannot take null (``id``, ``model``, ``requestId``, ...), anywhere in the line;
* has a ``timestamp`` string in the exact form ``YYYY-MM-DDTHH:MM:SS[.mmm](Z|+HH:MM)``;
* has ``input_tokens`` and ``output_tokens`` (and any cache count) as unsigned integers (a
  float, a negative number or a string drops the line; so does, here only, a count above
  ``MAX_COUNT``), a ``speed`` of ``standard``/``fast``,
  a boolean ``isSidechain``/``isApiErrorMessage``, a numeric ``costUSD``;
* has a ``version`` starting ``N.N.N`` and no empty ``sessionId``/``requestId``/``message.id``/
  ``message.model``, when those are present.

The cache-creation count is ``cache_creation.ephemeral_5m_input_tokens +
ephemeral_1h_input_tokens`` when the ``cache_creation`` breakdown is present, else
``cache_creation_input_tokens``; total = input + output + cache creation + cache read.

``UsageLedger`` keeps the counted usage of the most recent ``MAX_KEYS`` replies and answers,
for each new line, what to add: all of it for a new reply, the difference when the line
replaces the one counted (a later, larger line of the same reply), nothing otherwise. Every
key it has read is also in its ``SeenDigests``: a line of a reply no longer among the recent
ones (a resumed session's copy of old lines, read after thousands of other replies) adds
nothing, as ccusage adds nothing for the smaller or equal of two copies (a larger one would
have added its difference, had the reply still been recent). A restart keeps the last
``KEYS_CHECKPOINTED`` keys with their usage, and the source checkpoints the newest digests of
``seen`` (``seen_digests``).
"""

from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from monitor.events import Usage
from monitor.sources.seen_digests import SeenDigests, key_digest
from monitor.sources.transcript import MAX_COUNT

MAX_KEYS = 4096
#: Keys written into a checkpoint: enough for a reply whose lines straddle a restart.
KEYS_CHECKPOINTED = 256
NOT_NULLABLE = ("id", "cwd", "model", "speed", "costUSD", "version", "sessionId", "requestId",
                "isApiErrorMessage", "cache_read_input_tokens", "cache_creation_input_tokens")
_NULL_FIELD = re.compile(r'"(' + "|".join(map(re.escape, NOT_NULLABLE)) + r')":null')
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{3})?(?:Z|[+-]\d{2}:\d{2})\Z",
                        re.ASCII)
_SEMVER_PREFIX = re.compile(r"\d+\.\d+\.\d", re.ASCII)


@dataclass(frozen=True, slots=True)
class LineUsage:
    """The four counts of one line, in ccusage's terms."""

    input: int
    output: int
    cache_creation: int
    cache_read: int
    sidechain: bool

    @property
    def total(self) -> int:
        return self.input + self.output + self.cache_creation + self.cache_read

    def as_usage(self, cost: float = 0.0) -> Usage:
        return Usage(input=self.input, output=self.output, cache_read=self.cache_read,
                     cache_write=self.cache_creation, total=self.total, cost=cost)


def _count(value: Any) -> int | None:
    """An unsigned integer count (serde's ``u64``), or None. Counts above ``MAX_COUNT``
    (which ccusage would still add up to 2**64) are refused like any other forged number."""
    if type(value) is int and 0 <= value <= MAX_COUNT:
        return value
    return None


def _optional(entry: dict, name: str, kind: type) -> bool:
    """True when ``name`` is absent, null, or of ``kind`` (serde's ``Option<kind>``)."""
    value = entry.get(name)
    return value is None or (type(value) is kind if kind is not float
                             else type(value) in (int, float))


def counted_usage(entry: dict, text: str) -> LineUsage | None:
    """The usage ccusage counts for this line, or None when it skips the line."""
    if '"usage":{' not in text or _NULL_FIELD.search(text):
        return None
    message = entry.get("message")
    if not isinstance(message, dict) or not isinstance(message.get("usage"), dict):
        return None
    timestamp = entry.get("timestamp")
    if not isinstance(timestamp, str) or not _TIMESTAMP.match(timestamp):
        return None
    if not (_optional(entry, "isSidechain", bool) and _optional(entry, "isApiErrorMessage", bool)
            and _optional(entry, "costUSD", float) and _optional(entry, "sessionId", str)
            and _optional(entry, "requestId", str) and _optional(entry, "version", str)
            and _optional(message, "model", str) and _optional(message, "id", str)):
        return None
    for name in ("version", "sessionId", "requestId"):
        value = entry.get(name)
        if isinstance(value, str) and (not value or (name == "version"
                                                     and not _SEMVER_PREFIX.match(value))):
            return None
    if message.get("id") == "" or message.get("model") == "":
        return None
    usage = message["usage"]
    input_tokens = _count(usage.get("input_tokens"))
    output_tokens = _count(usage.get("output_tokens"))
    creation = _count(usage.get("cache_creation_input_tokens", 0))
    read = _count(usage.get("cache_read_input_tokens", 0))
    if None in (input_tokens, output_tokens, creation, read):
        return None
    if usage.get("speed") not in (None, "standard", "fast"):
        return None
    breakdown = usage.get("cache_creation")
    if breakdown is not None:
        if not isinstance(breakdown, dict):
            return None
        five = _count(breakdown.get("ephemeral_5m_input_tokens", 0))
        hour = _count(breakdown.get("ephemeral_1h_input_tokens", 0))
        if five is None or hour is None:
            return None
        creation = five + hour
    return LineUsage(input_tokens, output_tokens, creation, read,
                     entry.get("isSidechain") is True)


def usage_key(entry: dict) -> tuple[str, str | None] | None:
    """``(message.id, requestId)``: what ccusage deduplicates by (None: no message id)."""
    message = entry.get("message")
    message_id = message.get("id") if isinstance(message, dict) else None
    if not isinstance(message_id, str):
        return None
    request_id = entry.get("requestId")
    return message_id, request_id if isinstance(request_id, str) else None


def _replaces(candidate: LineUsage, kept: LineUsage) -> bool:
    if candidate.sidechain != kept.sidechain:
        return kept.sidechain
    return candidate.total > kept.total


def _difference(new: LineUsage, old: LineUsage) -> LineUsage:
    """What ``new`` adds to ``old``, field by field (never below zero)."""
    return LineUsage(max(0, new.input - old.input), max(0, new.output - old.output),
                     max(0, new.cache_creation - old.cache_creation),
                     max(0, new.cache_read - old.cache_read), new.sidechain)


class UsageLedger:
    """The counted usage of recent replies, by ``usage_key``."""

    def __init__(self, max_keys: int = MAX_KEYS) -> None:
        self.max_keys = max_keys
        self._kept: OrderedDict[tuple[str, str | None], LineUsage | None] = OrderedDict()
        #: Every key offered, as digests.
        self.seen = SeenDigests()

    def offer(self, key: tuple[str, str | None] | None, usage: LineUsage | None
              ) -> tuple[bool, LineUsage | None]:
        """``(first line of its reply, usage to add)`` for a line with ``key`` and the usage
        ccusage counts for it (None: the line counts nothing)."""
        if key is None:
            return True, usage
        first = key not in self._kept
        if first and not self.seen.add(key_digest(*key)):
            return False, None
        kept = self._kept.get(key)
        self._kept[key] = kept
        self._kept.move_to_end(key)
        while len(self._kept) > self.max_keys:
            self._kept.popitem(last=False)
        if usage is None:
            return first, None
        if kept is None:
            self._kept[key] = usage
            return first, usage
        if not _replaces(usage, kept):
            return first, None
        self._kept[key] = usage
        added = _difference(usage, kept)
        return first, added if added.total else None

    def state(self) -> list:
        rows = []
        for (message_id, request_id), usage in list(self._kept.items())[-KEYS_CHECKPOINTED:]:
            counts = None if usage is None else [usage.input, usage.output,
                                                 usage.cache_creation, usage.cache_read,
                                                 usage.sidechain]
            rows.append([message_id, request_id, counts])
        return rows

    def restore(self, rows: Any) -> None:
        if not isinstance(rows, list):
            return
        for row in rows[-KEYS_CHECKPOINTED:]:
            if not (isinstance(row, list) and len(row) == 3 and isinstance(row[0], str)
                    and (row[1] is None or isinstance(row[1], str))):
                continue
            counts = row[2]
            usage = None
            if isinstance(counts, list) and len(counts) == 5 \
                    and all(_count(c) is not None for c in counts[:4]) \
                    and isinstance(counts[4], bool):
                usage = LineUsage(*counts)
            self._kept[(row[0], row[1])] = usage
            self.seen.add(key_digest(row[0], row[1]))

"""Volatile-insensitive outcome keys, for the detectors that go beyond OpenClaw.

OpenClaw compares raw outcomes, so ``date; ls`` repeated thirty times looks like
thirty different results. Here every string in a result is masked for values
that change without meaning progress (timestamps, clock times, epoch numbers,
durations, pids, UUIDs and long hex ids, temp paths), volatile detail keys are
dropped, and the rest is hashed. Patterns are configurable.
"""

from __future__ import annotations

import json
import re
from typing import Any

from monitor.detect.jsstable import js_trim, sha256_hex
from monitor.detect.outcomes import strip_loop_note

_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*"
_DAY = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*"
_NUM = "(?<![0-9A-Za-z_])[0-9]"
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
# (name, regex, substrings of which one must occur for the regex to be worth running)
BUILTIN_PATTERNS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("iso_timestamp", r"[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2}"
                      r"(?:[.,][0-9]+)?)?(?:Z|[+-][0-9]{2}:?[0-9]{2})?", ("-",)),
    ("date_words", rf"\b(?:{_DAY},?\s+)?{_MONTH}\s+[0-9]{{1,2}}(?:,?\s+[0-9]{{4}})?\b", _MONTHS),
    ("day_month", rf"{_NUM}{{1,2}}\s+{_MONTH}\s+[0-9]{{4}}\b", _MONTHS),
    ("clock_time", rf"{_NUM}{{1,2}}:[0-9]{{2}}:[0-9]{{2}}(?:[.,][0-9]+)?(?:\s?[AP]M)?\b", (":",)),
    ("uuid", r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b",
     ("-",)),
    ("hex_id", r"\b(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{12,}\b", ()),
    ("epoch", r"\b1[0-9]{9}(?:[0-9]{3}|[0-9]{6}|[0-9]{9})?(?:\.[0-9]+)?\b", ()),
    ("duration", rf"{_NUM}+(?:\.[0-9]+)?\s?(?:ns|us|µs|ms|s|sec|secs|seconds?|m|min|mins|"
                 r"minutes?|h|hrs?|hours?)\b", ()),
    ("pid", r"\b(?:pid|ppid|PID|process)\b[\s#:=]*[0-9]+", ("pid", "PID", "process")),
    ("temp_path", r"/(?:private/)?(?:tmp|var/tmp|var/folders/[^\s/]+/[^\s/]+/T)"
                  r"(?:/[^\s/'\"]*?(?:tmp|temp|[0-9])[^\s/'\"]*)+", ("/tmp", "/var/")),
    ("tmp_name", r"\btmp[a-zA-Z0-9_]{6,}\b", ("tmp",)),
)


class Normaliser:
    """Masks volatile values in strings and drops volatile keys from result details."""

    def __init__(self, use_builtin: bool = True, extra_patterns: tuple[str, ...] = (),
                 volatile_keys: tuple[str, ...] = ()) -> None:
        self.patterns: list[tuple[re.Pattern, re.Pattern | None]] = []
        if use_builtin:
            self.patterns.extend(
                (re.compile(p, re.ASCII), re.compile("|".join(map(re.escape, gate))) if gate
                 else None) for _, p, gate in BUILTIN_PATTERNS)
        self.patterns.extend((re.compile(p), None) for p in extra_patterns)
        self.volatile_keys = frozenset(volatile_keys)

    def text(self, value: str) -> str:
        """``value`` with every volatile match replaced by ``#``."""
        for pattern, gate in self.patterns:
            if gate is None or gate.search(value):
                value = pattern.sub("#", value)
        return value

    def strip_keys(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: self.strip_keys(v) for k, v in value.items()
                    if k not in self.volatile_keys}
        if isinstance(value, list):
            return [self.strip_keys(v) for v in value]
        return value

    def digest(self, value: Any) -> str:
        """Hash of the masked, key-sorted JSON text of ``value``."""
        text = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"),
                          default=str)
        return sha256_hex(self.text(text))[:32]


def is_failure(tool: str, is_error: bool, details: Any, text: str) -> bool:
    """A failure whose message says what failed (so it repeats only when nothing changed)."""
    if is_error:
        return True
    if tool != "exec" or not isinstance(details, dict):
        return False
    code = details.get("exitCode")
    if not isinstance(code, int) or isinstance(code, bool) or code == 0:
        return False
    output = details.get("aggregated") if isinstance(details.get("aggregated"), str) else text
    output = js_trim(output or "")
    return bool(output) and output != f"(Command exited with code {code})"


def outcome_key(normaliser: Normaliser, tool: str, args_hash: str, *, is_error: bool,
                details: Any, text: str) -> str:
    """The key ``session_no_progress`` compares: successes keep their arguments, failures
    are keyed on the tool and the masked failure alone (the same failure from a rotated
    command is still the same dead end)."""
    text = js_trim(strip_loop_note(text))
    if tool == "exec" and isinstance(details, dict) and isinstance(details.get("status"), str):
        aggregated = details.get("aggregated")
        body: Any = {
            "status": details.get("status"),
            "exitCode": details.get("exitCode"),
            "timedOut": details.get("timedOut") is True,
            "output": js_trim(aggregated) if isinstance(aggregated, str) and aggregated.strip()
            else text,
        }
    else:
        body = {"details": normaliser.strip_keys(details) if isinstance(details, dict) else None,
                "text": text, "error": is_error}
    digest = normaliser.digest(body)
    if is_failure(tool, is_error, details, text):
        return f"fail:{tool}:{digest}"
    return f"ok:{args_hash}:{digest}"

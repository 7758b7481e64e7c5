"""Ids a megabyte long in a state dir: every output keeps a bounded start and a digest.

A session key, a tool call id and a run id are data: a crafted one can be any length, and
each output record carrying it was redacted whole (seconds per megabyte for flag-like text),
so ten tool calls held ``watch --seconds 8`` for 64 s and printed 20 MB. Now no output
text is longer than ``OUTPUT_TEXT_CHARS``; two long ids that differ stay two.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from test_hostile_cli import clawwatch

from monitor.redaction import REDACTED, redact_text
from monitor.redaction.clipping import OUTPUT_TEXT_CHARS, bounded_output
from monitor.shown import shown_redacted

LONG = "--x-token-" * 100_000          # the slowest shape for the flag rule: 1 MB
KEY = "agent:main:" + LONG


def write_state(root: Path) -> Path:
    sessions = root / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / "sessions.json").write_text(json.dumps(
        {KEY: {"sessionId": "s1", "updatedAt": 1_764_900_000_000}}))
    lines = []
    for n in range(10):
        lines.append({"type": "message", "timestamp": "2026-12-01T00:00:01Z", "message": {
            "role": "assistant", "usage": {"input": 1, "output": 1, "totalTokens": 2},
            "__openclaw": {"runId": LONG},
            "content": [{"type": "toolCall", "id": f"{LONG}{n}", "name": "exec",
                         "arguments": {"command": "ls"}}]}})
        lines.append({"type": "message", "timestamp": "2026-12-01T00:00:02Z", "message": {
            "role": "toolResult", "toolCallId": f"{LONG}{n}", "toolName": "exec",
            "content": [{"type": "text", "text": "same"}]}})
    (sessions / "s1.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return root


def strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for key, item in value.items() for s in strings(key) + strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in strings(item)]
    return []


def test_bounded_output_keeps_short_texts_and_a_start_and_digest_of_long_ones():
    assert bounded_output("ok ghp_" + "a" * 36) == "ok " + REDACTED
    first, second = bounded_output(LONG + "1"), bounded_output(LONG + "2")
    assert first != second
    assert len(first) <= OUTPUT_TEXT_CHARS and first.startswith(redact_text(LONG[:100]))
    leaked = "ghp_" + "b" * 36 + " " + "x" * 10_000
    assert "ghp_" not in bounded_output(leaked)


def test_replay_and_watch_keep_every_output_text_bounded(tmp_path):
    state = write_state(tmp_path / "state")
    done = clawwatch("replay", "--state-dir", str(state), "--json", home=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    document = json.loads(done.stdout)
    assert max(map(len, strings(document))) <= OUTPUT_TEXT_CHARS
    (session,) = document["sessions"]
    assert session["key"].startswith("agent:main:") and session["tool_calls"] == 10

    started = time.monotonic()
    done = clawwatch("watch", "--state-dir", str(state), "--headless", "--json",
                     "--from-start", "--no-checkpoint", "--seconds", "8", home=tmp_path)
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-2000:]
    assert took < 30, f"watch --seconds 8 took {took:.1f} s"
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert max(len(text) for record in records for text in strings(record)) \
        <= OUTPUT_TEXT_CHARS
    calls = [record["call_id"] for record in records if record["type"] == "tool_call"]
    assert len(calls) == len(set(calls)) == 10


def test_a_long_label_whose_secret_shrank_it_still_shows_its_cut():
    """The board, the panes and the dialogs show a label through one function: a key past
    the redacted view reads as cut (``…``) even when the secret in view shrank it below
    the limit, so it does not read like the short key with the same start."""
    short, long = "agent:main:ghp_" + "A" * 40, "agent:main:ghp_" + "A" * 3000
    assert shown_redacted(short, 200) == "agent:main:" + REDACTED
    assert shown_redacted(long, 200) == "agent:main:" + REDACTED + "…"

"""A session resumed after ``watch`` restarted from its checkpoint counts none of its copies.

A resumed Claude Code session's new file starts with copies of the earlier file's lines, and
a forked Codex rollout with copies of its parent's items: the same reply keys, tool call ids
and tool result ids, whose originals were read before the restart. A plain restart reads every
transcript again from its start and so meets the originals again; ``--from-start`` resumes at
the checkpoint's positions and knows of the originals only what the checkpoint kept
(``seen_digests``). Every original session here holds more replies and calls than the ids the
checkpoint keeps with their names (256), so only the saved digests can know its copies.
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest
from test_cli_sources import run_clawwatch
from test_source_claude_code import SESSION_A, SESSION_B, _turn, _write_session

from monitor.events import AssistantMessage, ToolCall, ToolResult
from monitor.sources import claude_code, seen_digests
from monitor.sources.checkpoint import CheckpointStore
from monitor.sources.seen_digests import SeenDigests
from monitor.sources.sourceset import SourceSet

ORIGINALS = 300
NEW_CALL = f"toolu_{ORIGINALS:08d}"
PARENT = "11111111-0000-7000-8000-000000000001"
FORK = "22222222-0000-7000-8000-000000000002"


def same_file_every_turn(lines: list[str]) -> list[str]:
    """Every turn reads the same file: copies counted again would be a loop, and a finding."""
    return [re.sub(r"/tmp/p/f\d+\.py", "/tmp/p/f.py", line) for line in lines]


def claude_turns(session: str, turns: range) -> list[str]:
    return same_file_every_turn([line for n in turns for line in _turn(session, n)])


def write_original_session(projects: Path) -> list[str]:
    lines = claude_turns(SESSION_A, range(ORIGINALS))
    _write_session(projects / "-tmp-p", SESSION_A, lines)
    return lines


def write_resumed_session(projects: Path, copied: list[str]) -> None:
    """B: ``claude --resume`` of A, its file starting with copies of all of A's lines."""
    _write_session(projects / "-tmp-p", SESSION_B,
                   copied + claude_turns(SESSION_B, range(ORIGINALS, ORIGINALS + 1)))


def rollout_lines(thread: str, calls: range) -> list[str]:
    lines = [{"timestamp": "2026-12-01T00:00:00.000Z", "type": "session_meta",
              "payload": {"id": thread, "cwd": "/tmp/p"}}]
    for n in calls:
        lines += [{"timestamp": "2026-12-01T00:00:01.000Z", "type": "response_item",
                   "payload": {"type": "function_call", "name": "exec_command",
                               "arguments": json.dumps({"cmd": "cat f"}),
                               "call_id": f"call_{n:06d}"}},
                  {"timestamp": "2026-12-01T00:00:01.500Z", "type": "response_item",
                   "payload": {"type": "function_call_output", "call_id": f"call_{n:06d}",
                               "output": "x = 1"}}]
    return [json.dumps(line) for line in lines]


def write_rollout(sessions: Path, thread: str, lines: list[str]) -> None:
    day = sessions / "2026" / "12" / "01"
    day.mkdir(parents=True, exist_ok=True)
    (day / f"rollout-2026-12-01T00-00-00-{thread}.jsonl").write_text(
        "".join(line + "\n" for line in lines))


def watch(home: Path, *args: str) -> list[dict]:
    result = run_clawwatch("watch", "--headless", "--json", "--seconds", "0.5",
                           "--checkpoint", str(home / "checkpoint.json"), *args, home=home)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def reported_on(records: list[dict], key: str) -> tuple[list[str], list[str]]:
    """The call ids and the finding detectors ``watch`` reported on the session ``key``."""
    calls = [r["call_id"] for r in records if r["type"] == "tool_call" and r["key"] == key]
    findings = [r["detector"] for r in records if r["type"] == "finding" and r["key"] == key]
    return calls, findings


RESTARTS = pytest.mark.parametrize("mode", [(), ("--from-start",)],
                                   ids=["read-again-from-the-start", "from-start-at-positions"])


@RESTARTS
def test_a_claude_code_session_resumed_after_a_restart_reports_only_its_new_call(
        tmp_path, mode):
    projects = tmp_path / "claude" / "projects"
    copied = write_original_session(projects)
    source = ("--claude-dir", str(tmp_path / "claude"), "--source", "claude-code", *mode)
    watch(tmp_path, *source)
    write_resumed_session(projects, copied)
    records = watch(tmp_path, *source)
    assert reported_on(records, f"claude-code:{SESSION_B}") == ([NEW_CALL], [])


@RESTARTS
def test_a_codex_rollout_forked_after_a_restart_reports_only_its_new_call(tmp_path, mode):
    sessions = tmp_path / "codex" / "sessions"
    parent = rollout_lines(PARENT, range(ORIGINALS))
    write_rollout(sessions, PARENT, parent)
    source = ("--codex-dir", str(sessions), "--source", "codex", *mode)
    watch(tmp_path, *source)
    forked = rollout_lines(FORK, range(ORIGINALS, ORIGINALS + 1))
    write_rollout(sessions, FORK, forked[:1] + parent + forked[1:])
    records = watch(tmp_path, *source)
    assert reported_on(records, f"codex:{FORK}") == ([f"call_{ORIGINALS:06d}"], [])


# ------------------------------------------- what a restart at the saved positions is given

def read_through(sources: SourceSet) -> list:
    events = []
    while True:
        events += sources.poll()
        if not sources.behind:
            return events


def checkpointed_after_reading(projects: Path, store: CheckpointStore) -> dict:
    """The checkpoint ``watch`` saves once it has read what is under ``projects``."""
    before = SourceSet(claude_dirs=(str(projects),))
    try:
        read_through(before)
        store.save(before.checkpoint())
    finally:
        before.close()
    return store.load()


def events_after_restart(projects: Path, checkpoint: dict) -> list:
    """What the sources ``watch --from-start`` builds from ``checkpoint`` read."""
    after = SourceSet(claude_dirs=(str(projects),), resume=checkpoint)
    try:
        return read_through(after)
    finally:
        after.close()


def test_copies_read_at_the_saved_positions_add_no_tokens_calls_or_results(tmp_path):
    projects = tmp_path / "projects"
    copied = write_original_session(projects)
    checkpoint = checkpointed_after_reading(projects, CheckpointStore(str(tmp_path / "cp")))
    write_resumed_session(projects, copied)
    events = events_after_restart(projects, checkpoint)
    assert not [e for e in events if getattr(e, "session_id", None) == SESSION_A]
    replies = [e for e in events if isinstance(e, AssistantMessage)]
    assert [(r.session_id, r.usage.total) for r in replies] == [(SESSION_B, 2)]
    assert [c.call_id for c in events if isinstance(c, ToolCall)] == [NEW_CALL]
    assert [r.call_id for r in events if isinstance(r, ToolResult)] == [NEW_CALL]


def test_a_checkpoint_without_digests_still_loads_and_knows_the_ids_it_names(tmp_path):
    """A checkpoint an earlier version wrote has no ``seen``: the sources resume at its
    positions, and the copies of the ids it keeps with their names are still copies."""
    projects = tmp_path / "projects"
    copied = write_original_session(projects)
    checkpoint = checkpointed_after_reading(projects, CheckpointStore(str(tmp_path / "cp")))
    (saved,) = checkpoint.values()
    del saved["parse"]["seen"]
    write_resumed_session(projects, copied)
    events = events_after_restart(projects, checkpoint)
    assert not [e for e in events if getattr(e, "session_id", None) == SESSION_A]
    calls = [c.call_id for c in events if isinstance(c, ToolCall)]
    assert len(calls) == ORIGINALS - claude_code.IDS_CHECKPOINTED + 1
    assert calls[-1] == NEW_CALL


def test_a_checkpoint_keeps_the_newest_digests_of_each_kind_up_to_its_bound(tmp_path,
                                                                            monkeypatch):
    monkeypatch.setattr(seen_digests, "DIGESTS_CHECKPOINTED", 64)
    projects = tmp_path / "projects"
    write_original_session(projects)
    checkpoint = checkpointed_after_reading(projects, CheckpointStore(str(tmp_path / "cp")))
    (saved,) = checkpoint.values()
    assert {kind: len(base64.b64decode(text)) for kind, text in saved["parse"]["seen"].items()
            } == {"replies": 64 * 8, "calls": 64 * 8, "results": 64 * 8}


def test_seen_digests_checkpoint_the_newest_in_order_and_refuse_anything_else():
    seen = SeenDigests(recent_limit=4, checkpointed=5)
    digests = [seen_digests.key_digest(f"toolu_{n}") for n in range(12)]
    for digest in digests:
        seen.add(digest)
    restored = SeenDigests(checkpointed=5)
    restored.restore_checkpoint_text(seen.checkpoint_text())
    assert restored.checkpoint_text() == seen.checkpoint_text()
    assert [d in restored for d in digests] == [False] * 7 + [True] * 5
    fewer = SeenDigests(checkpointed=2)
    fewer.restore_checkpoint_text(seen.checkpoint_text())
    assert [d in fewer for d in digests] == [False] * 10 + [True] * 2
    for hostile in (None, 7, [1], {"a": 1}, "!!", "AAAA", "é", "\udc80", "A" * 12):
        untouched = SeenDigests()
        untouched.restore_checkpoint_text(hostile)
        assert len(untouched) == 0, hostile
    old = SeenDigests()
    seen_digests.restore_digests({"calls": old}, None)
    seen_digests.restore_digests({"calls": old}, {"calls": ["x"]})
    assert len(old) == 0

"""A Codex thread started from another's history counts only what it spent itself.

Fixtures (``tests/fixtures/codex/forks``), written by the real Codex CLI 0.171.0 against the
scripted model (tests/e2e/scripted_models.py, usage = request bytes / 4, 120 cached, 23 out):

* ``paginated/``: ``codex exec`` (three ``ls`` calls, then text: total 41,520), then
  ``codex exec fork <it> "Check twice more."`` (two calls, then text). Its parent is paginated,
  so the fork copies no line: its ``session_meta`` names ``forked_from_id`` and
  ``history_base``, and its first ``token_count`` total (52,246) is the parent's 41,520 plus
  its own first reply (10,726): its own replies come to 74,171 - 41,520 = 32,651.
* ``legacy/``: the 0.36.0 rollout of ``tests/fixtures/codex/sessions/2025/09/14`` (no
  ``history_mode``: legacy) and ``codex exec fork`` of it (two calls, then text). The fork
  copies its parent's lines after a second ``session_meta``, all stamped with the instant of the
  fork, the parent's nine cumulative ``token_count`` lines among them (64,050 at the last), and
  its own totals continue from there: its own replies come to 95,195 - 64,050 = 31,145.

Only paths were scrubbed and ``base_instructions`` shortened; ids, stamps and counts are the
run's own.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from restart_reads import read_across_a_restart
from test_cli_sources import replay_documents
from test_source_claude_code import run_ccusage
from test_source_codex import FIXTURES, LOOP_FILE, SESSIONS, copy_rollout, last_total, of, tokens

from monitor.detect.engine import DetectionEngine
from monitor.events import AssistantMessage, SessionInfo, SessionStart, ToolCall, ToolResult
from monitor.sources.codex import CodexSource
from monitor.sources.codex_copies import still_copied, uuid7_millis
from monitor.sources.codex_usage import Counts, share
from monitor.sources.tail_state import complete_files

FORKS = FIXTURES / "forks"
PAGINATED = FORKS / "paginated" / "sessions"
PAGINATED_PARENT = "01a24ef6-79df-7f73-9ba6-718b80c486b0"
PAGINATED_FORK = "01a24ef6-84b3-7462-b26c-d5e3fa21ce3e"
LEGACY = FORKS / "legacy" / "sessions"
LEGACY_PARENT = "0199495a-7c1e-7d32-b0f4-3a9e6c2d8b17"
LEGACY_FORK = "01a24ef6-e73b-72d3-a5c6-5d685d1ae15b"
LEGACY_FORK_FILE = LEGACY / "2026" / "12" / "07" / \
    f"rollout-2026-12-07T05-25-33-{LEGACY_FORK}.jsonl"


def read(root: Path) -> list:
    source = CodexSource(str(root))
    with complete_files():
        return source.poll()


def own_events(events: list, session_id: str) -> list:
    return [e for e in events if getattr(e, "session_id", None) == session_id
            and not isinstance(e, SessionInfo)]


def findings_of(events: list, session_id: str) -> list[tuple[str, str]]:
    engine = DetectionEngine()
    return [(f.detector, f.level) for event in own_events(events, session_id)
            for f in engine.observe(f"codex:{session_id}", "codex", event)]


def ccusage_sessions(root: Path, home: Path) -> dict[str, tuple]:
    report = run_ccusage("codex", "session", home=home, env={"CODEX_HOME": str(root.parent)})
    return {"-".join(s["sessionFile"].split("-")[-5:]): (
        s["inputTokens"], s["outputTokens"], s["cacheCreationTokens"], s["cacheReadTokens"],
        s["totalTokens"]) for s in report["sessions"]}


def synthetic_fork(root: Path) -> str:
    """The loop fixture and a fork of it in the legacy layout (its lines copied after the
    parent's meta, as they were stamped), under a thread id created after the parent's."""
    fork = "01a22fb7-ffff-7723-86b7-4a2c25a78eef"
    lines = LOOP_FILE.read_text().splitlines()
    meta = json.loads(lines[0])
    meta["payload"].update(id=fork, session_id=fork, forked_from_id=meta["payload"]["id"])
    copy_rollout(root, LOOP_FILE, LOOP_FILE.read_bytes())
    name = f"rollout-2026-12-01T04-00-00-{fork}.jsonl"
    (root / "sessions" / LOOP_FILE.relative_to(SESSIONS).parent / name).write_text(
        "\n".join([json.dumps(meta), *lines]) + "\n")
    return fork


# --------------------------------------------------------------------- real forks

def test_a_legacy_forks_copied_lines_are_no_event_of_it_and_its_replies_count_once(tmp_path):
    events = read(LEGACY)
    fork = own_events(events, LEGACY_FORK)
    assert len(of(fork, AssistantMessage)) == 3
    assert tokens(events, LEGACY_FORK) == {"input": 30716, "output": 69, "cache_write": 0,
                                           "cache_read": 360, "total": 31145}
    assert tokens(events, LEGACY_FORK)["total"] == \
        last_total(LEGACY_FORK_FILE)["total_tokens"] - 64050
    assert Counter(type(e).__name__ for e in fork) == {
        "SessionStart": 1, "UserMessage": 1, "ToolCall": 2, "ToolResult": 2,
        "AssistantMessage": 3}
    assert tokens(events, LEGACY_PARENT)["total"] == 64050
    ours = {sid: tuple(tokens(events, sid).values()) for sid in (LEGACY_PARENT, LEGACY_FORK)}
    assert ours == ccusage_sessions(LEGACY, tmp_path)


def test_a_paginated_forks_first_reply_counts_without_its_parents_total(tmp_path):
    """ccusage 20.0.24 leaves this fork out: its parent's stream does not match the fork's
    first usage, so it skips the fork's usage lines written less than a second apart as a
    copied burst, which the scripted model's quick replies are. A real model's replies are
    seconds apart; what the fork spent is 32,651 either way."""
    events = read(PAGINATED)
    fork_file = next(PAGINATED.rglob(f"*{PAGINATED_FORK}.jsonl"))
    parent_file = next(PAGINATED.rglob(f"*{PAGINATED_PARENT}.jsonl"))
    assert tokens(events, PAGINATED_FORK)["total"] == 32651 == \
        last_total(fork_file)["total_tokens"] - last_total(parent_file)["total_tokens"]
    assert [r.usage.total for r in of(events, AssistantMessage, PAGINATED_FORK)] == \
        [10726, 10884, 11041]
    theirs = ccusage_sessions(PAGINATED, tmp_path)
    assert theirs == {PAGINATED_PARENT: tuple(tokens(events, PAGINATED_PARENT).values())}


def test_replay_counts_each_fork_once_with_one_job_or_two(tmp_path, monkeypatch):
    documents = replay_documents(tmp_path, monkeypatch, "--codex-dir", str(LEGACY),
                                 "--codex-dir", str(PAGINATED))
    assert documents[0] == documents[1]
    totals = {s["key"]: s["tokens"]["total"] for s in documents[0]["sessions"]}
    assert totals == {f"codex:{LEGACY_PARENT}": 64050, f"codex:{LEGACY_FORK}": 31145,
                      f"codex:{PAGINATED_PARENT}": 41520, f"codex:{PAGINATED_FORK}": 32651}


# --------------------------------------------------------------- copies of a loop

def test_a_forks_copy_of_a_loop_is_no_event_of_the_fork_and_raises_nothing(tmp_path):
    """A copy of the 143,608-token loop: neither its calls, outputs nor totals are the fork's,
    so no token finding (nor any other) is raised for the fork, and the parent's are its own."""
    fork = synthetic_fork(tmp_path)
    events = read(tmp_path / "sessions")
    assert {type(e) for e in own_events(events, fork)} == {SessionStart}
    assert tokens(events, fork)["total"] == 0
    assert findings_of(events, fork) == []
    loop = json.loads(LOOP_FILE.read_text().partition("\n")[0])["payload"]["id"]
    assert tokens(events, loop)["total"] == 143608
    assert findings_of(events, loop) == findings_of(read(SESSIONS), loop) != []


def test_a_restart_inside_a_copy_keeps_reading_it_as_a_copy(tmp_path):
    """The checkpoint holds that a copied turn is under way, so the copied lines after a
    restart are no more the fork's than before it (the copied meta is stamped a second before
    them here, so that only the copied turn tells)."""
    fork = synthetic_fork(tmp_path)
    target = next((tmp_path / "sessions").rglob(f"*{fork}.jsonl"))
    lines = target.read_text().splitlines(keepends=True)
    parent_meta = json.loads(lines[1])
    parent_meta["timestamp"] = "2026-12-01T03:48:21.000Z"
    data = "".join([lines[0], json.dumps(parent_meta) + "\n", *lines[2:]]).encode()
    cut = data.index(b"\n", len(data) // 2) + 20
    target.write_bytes(data[:cut])
    first, second = read_across_a_restart(
        lambda saved: CodexSource(str(tmp_path / "sessions"), resume=saved), target, data[cut:])
    assert of(first + second, AssistantMessage, fork) == []
    assert of(first + second, ToolResult, fork) == []


def test_a_restart_inside_a_legacy_forks_copy_counts_its_own_replies_once(tmp_path):
    data = LEGACY_FORK_FILE.read_bytes()
    lines = data.splitlines(keepends=True)
    for cut in (sum(map(len, lines[:12])) + 40, sum(map(len, lines[:47])) + 40):
        root = tmp_path / str(cut)
        target = root / LEGACY_FORK_FILE.relative_to(LEGACY)
        target.parent.mkdir(parents=True)
        target.write_bytes(data[:cut])
        first, second = read_across_a_restart(
            lambda saved, root=root: CodexSource(str(root), resume=saved), target, data[cut:])
        assert tokens(first + second, LEGACY_FORK)["total"] == 31145
        assert len(of(first + second, ToolCall, LEGACY_FORK)) == 2


# ------------------------------------------------------------ where a copy ends

def test_a_turn_is_a_copy_when_it_began_before_the_thread():
    fork, parent_turn, own_turn = (LEGACY_FORK, "01a24ef6-79f9-7bb1-9fa1-ffd4bab97e17",
                                   "01a24ef6-e75a-7073-ae77-332cb8f70477")
    assert uuid7_millis(fork) == 0x01a24ef6e73b and uuid7_millis("not-a-uuid") is None
    started = {"type": "task_started", "turn_id": parent_turn}
    assert still_copied(fork, "event_msg", started, False, False) == (True, True)
    assert still_copied(fork, "event_msg", {"type": "token_count"}, False, True) == (True, True)
    own = {"type": "turn_context", "turn_id": own_turn}
    assert still_copied(fork, "turn_context", own, True, True) == (False, False)


def test_where_ids_tell_nothing_the_copy_is_the_burst_of_its_second():
    v4 = "6f1c2b3a-1d2e-4f3a-8b4c-5d6e7f8a9b0c"
    line = {"type": "task_started", "turn_id": "turn-1"}
    assert still_copied(v4, "event_msg", line, True, False) == (True, False)
    assert still_copied(v4, "event_msg", line, False, False) == (False, False)
    assert still_copied(LEGACY_FORK, "response_item", {"type": "message"}, False, False) == \
        (False, False)


def test_a_rollouts_first_share_is_its_last_usage_never_above_its_total():
    total, last = Counts(input=500, output=20, total=520), Counts(input=90, output=30, total=120)
    assert share(total, last, None) == Counts(input=90, output=20, total=120)
    assert share(total, None, None) == total
    assert share(total, last, Counts(input=400, output=10, total=410)) == \
        Counts(input=100, output=10, total=110)
    assert share(None, last, total) == last

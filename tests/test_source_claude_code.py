"""ClaudeCodeSource on transcripts in Claude Code's own format (issue 14).

Fixtures (``tests/fixtures/claude_code/projects``):

* ``-tmp-cap-work/c00b08a2-...jsonl``: written by the real Claude Code 2.1.332 (``claude -p``)
  against a scripted Messages API endpoint that answers every turn with the same Bash call,
  twelve times; only the payloads of ``attachment``/``api-request-*`` lines were shortened.
* ``-tmp-cap-w2/e1c79469-...jsonl`` and ``e1c79469-.../subagents/agent-a29a11b5522fd6c53.jsonl``:
  the same client doing Read, a failing Bash, Edit, a background Agent (its own transcript in
  ``subagents/``), parallel Glob+Grep (both refused), Write, WebFetch (refused offline), Bash.
* ``-home-dev-api/``: Claude Code 1.0/2.0 shapes: a reply streamed as three lines whose usage
  grows, inline sidechain lines, a sub-agent in ``agent-<id>.jsonl``, ``compact_boundary``, a
  synthetic API error reply, an interruption, and a line cut short by a crash.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections import Counter
from functools import partial
from pathlib import Path

import pytest
from restart_reads import read_across_a_restart

from monitor.detect.engine import DetectionEngine
from monitor.events import (
    AssistantMessage,
    Compaction,
    SessionInfo,
    SourceError,
    ToolCall,
    ToolResult,
    UserMessage,
)
from monitor.sources import claude_code, read_ahead
from monitor.sources.claude_code import ClaudeCodeSource, is_claude_code_entry
from monitor.sources.claude_usage import UsageLedger
from monitor.sources.codex import is_codex_entry
from monitor.sources.jsonl_tree import first_entry
from monitor.sources.seen_digests import SeenDigests, key_digest
from monitor.sources.tail_state import complete_files

FIXTURES = Path(__file__).parent / "fixtures" / "claude_code"
PROJECTS = FIXTURES / "projects"
LOOP = "c00b08a2-3350-4e1a-8ea4-8c22db0e06f5"
LOOP_FILE = PROJECTS / "-tmp-cap-work" / f"{LOOP}.jsonl"
TOUR = "e1c79469-f88b-490f-ac15-e033cd9fd569"
LEGACY = "3f1e9a2c-5b7d-4e8f-9a0b-1c2d3e4f5a6b"
LEGACY_FILE = PROJECTS / "-home-dev-api" / f"{LEGACY}.jsonl"
AGENT = "a29a11b5522fd6c53"
CCUSAGE_VERSION = "20.0.24"
CCUSAGE_BIN = (Path.home() / ".cache" / "clawwatch" / f"ccusage-{CCUSAGE_VERSION}"
               / "node_modules" / ".bin" / "ccusage")


def read_all(root) -> tuple[ClaudeCodeSource, list]:
    source = ClaudeCodeSource(str(root))
    with complete_files():
        events = source.poll()
    return source, events


def of(events, kind, session_id=None) -> list:
    return [e for e in events if isinstance(e, kind)
            and (session_id is None or e.session_id == session_id)]


def tokens(events, session_id) -> dict:
    replies = of(events, AssistantMessage, session_id)
    return {name: sum(getattr(r.usage, name) for r in replies)
            for name in ("input", "output", "cache_write", "cache_read", "total")}


def ccusage_binary() -> Path:
    """The pinned ccusage, installed into ~/.cache/clawwatch as bench/bench_replay.py does."""
    if CCUSAGE_BIN.exists():
        return CCUSAGE_BIN
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip(f"ccusage {CCUSAGE_VERSION} is not installed and npm is not available "
                    "to install it")
    CCUSAGE_BIN.parents[2].mkdir(parents=True, exist_ok=True)
    done = subprocess.run([npm, "install", "--prefix", str(CCUSAGE_BIN.parents[2]), "--no-save",
                           "--fetch-retries", "1", f"ccusage@{CCUSAGE_VERSION}"],
                          capture_output=True, timeout=300)
    if done.returncode != 0 or not CCUSAGE_BIN.exists():
        pytest.skip(f"npm could not install ccusage {CCUSAGE_VERSION}: "
                    f"{done.stderr.decode(errors='replace')[-300:]}")
    return CCUSAGE_BIN


def run_ccusage(*args: str, home: Path, env: dict) -> dict:
    """``ccusage ARGS --json --offline`` seeing only ``env`` (its data dirs) and ``home``."""
    done = subprocess.run([str(ccusage_binary()), *args, "--json", "--offline"],
                          capture_output=True, timeout=120,
                          env={"PATH": os.environ.get("PATH", ""), "NO_COLOR": "1", "TZ": "UTC",
                               "HOME": str(home), **env})
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return json.loads(done.stdout)


# ------------------------------------------------------------- a real loop, read whole

def test_a_real_bash_loop_reads_as_one_session_with_twelve_identical_calls():
    source, events = read_all(PROJECTS)
    infos = [e for e in of(events, SessionInfo) if e.session_id == LOOP]
    assert len(infos) == 1
    info = infos[0]
    assert (info.key, info.agent_id, info.label) == (f"claude-code:{LOOP}", "claude-code",
                                                    "/tmp/cap/work")
    first = events.index(info)
    assert all(events.index(e) > first for e in events
               if getattr(e, "session_id", None) == LOOP and e is not info)
    calls = of(events, ToolCall, LOOP)
    assert [c.name for c in calls] == ["Bash"] * 12
    assert {json.dumps(c.arguments, sort_keys=True) for c in calls} == {json.dumps(
        {"command": "ls /tmp/cap/work", "description": "List the directory again"},
        sort_keys=True)}
    assert len({c.call_id for c in calls}) == 12
    results = of(events, ToolResult, LOOP)
    assert [r.call_id for r in results] == [c.call_id for c in calls]
    assert all(r.details == {"status": "completed", "exitCode": 0, "aggregated": "a.txt"}
               and r.text == "a.txt" and not r.is_error for r in results)
    prompt = "92bee7c6-c03e-4518-8b50-bd6c4ab9d528"
    assert [u.run_id for u in of(events, UserMessage, LOOP)] == [prompt]
    assert {c.run_id for c in calls} == {prompt}
    assert [e.path for e in events if isinstance(e, SourceError)] == [str(LEGACY_FILE)]
    assert source.errors == 1


def test_each_streamed_reply_is_one_assistant_message_and_tokens_match_ccusage_figures():
    _, events = read_all(PROJECTS)
    lines = [json.loads(line) for line in LOOP_FILE.read_text().splitlines()]
    reply_lines = [d for d in lines if d.get("type") == "assistant"]
    assert len(reply_lines) == 25                  # 12 replies as text + tool_use lines, 1 answer
    replies = of(events, AssistantMessage, LOOP)
    assert len(replies) == 13
    assert [r.tool_call_count for r in replies] == [1] * 12 + [0]
    assert tokens(events, LOOP) == {"input": 165623, "output": 299, "cache_write": 0,
                                    "cache_read": 1560, "total": 167482}


def test_sub_agent_transcripts_join_their_session_in_a_run_of_their_own():
    _, events = read_all(PROJECTS)
    calls = of(events, ToolCall, TOUR)
    assert Counter(c.name for c in calls) == {"Bash": 3, "Read": 1, "Edit": 1, "Agent": 1,
                                              "Glob": 1, "Grep": 1, "Write": 1, "WebFetch": 1}
    agent_calls = [c for c in calls if c.run_id == f"agent:{AGENT}"]
    assert [(c.name, c.arguments["command"]) for c in agent_calls] == [("Bash", "wc -l app.py")]
    assert {c.run_id for c in calls if c not in agent_calls} == {
        "34d8db04-34fe-4285-8f8f-77a499759890"}
    assert len([e for e in of(events, SessionInfo) if e.session_id == TOUR]) == 1
    assert tokens(events, TOUR)["total"] == 132607


def test_results_are_shaped_for_the_detectors():
    _, events = read_all(PROJECTS)
    results = {r.name + ("!" if r.is_error else ""): r for r in of(events, ToolResult, TOUR)}
    failed = results["Bash!"]
    assert failed.details["status"] == "failed" and failed.details["exitCode"] == 1
    assert failed.details["aggregated"].startswith("Traceback (most recent call last):")
    assert failed.text.startswith("Exit code 1\nTraceback")
    assert results["Edit"].details == {"changed": True}
    assert results["Write"].details == {"changed": True}
    for refused in ("Glob!", "Grep!", "WebFetch!"):
        assert results[refused].details is None
    legacy = {r.call_id: r for r in of(events, ToolResult, LEGACY)}
    assert legacy["toolu_01Legacy000000000000000005"].details == {"changed": False}


def test_a_reply_streamed_with_growing_usage_counts_once_at_its_largest():
    _, events = read_all(PROJECTS)
    offsets, at = [], 0
    for line in LEGACY_FILE.read_bytes().splitlines(keepends=True):
        if b'"id":"msg_01LegacyStream0000000001"' in line:
            offsets.append(f"{LEGACY_FILE}@{at}")
        at += len(line)
    assert len(offsets) == 3                       # thinking, text, tool_use
    first, top_up = [r for r in of(events, AssistantMessage, LEGACY) if r.origin in offsets]
    assert (first.origin, top_up.origin) == (offsets[0], offsets[2])
    assert (first.usage.input, first.usage.output, first.usage.cache_write,
            first.usage.cache_read, first.usage.total) == (4, 1, 2000, 10000, 12005)
    assert (top_up.usage.input, top_up.usage.output, top_up.usage.total) == (0, 119, 119)
    assert top_up.tool_call_count == 1
    assert tokens(events, LEGACY) == {"input": 41, "output": 511, "cache_write": 5370,
                                      "cache_read": 75100, "total": 81022}


def test_older_formats_inline_sidechains_agent_files_compaction_errors_and_prompts():
    source, events = read_all(PROJECTS)
    calls = of(events, ToolCall, LEGACY)
    assert Counter(c.name for c in calls) == {"Bash": 3, "Task": 1, "Grep": 1, "Edit": 1,
                                              "Write": 1}
    runs = {c.name + str(i): c.run_id for i, c in enumerate(calls)}
    assert {run for key, run in runs.items() if key.startswith("Grep")} == {"sidechain"}
    agent_bash = [c for c in calls if c.run_id == "agent:5e6f7a8b"]
    assert [c.arguments["command"] for c in agent_bash] == ["npm run lint"]
    compactions = of(events, Compaction, LEGACY)
    assert [(c.kind, c.tokens_before) for c in compactions] == [("compaction", 156000)]
    failed = [r for r in of(events, AssistantMessage, LEGACY) if r.is_error]
    assert len(failed) == 1 and failed[0].stop_reason == "error"
    assert failed[0].error_message.startswith("API Error: 529") and failed[0].model is None
    prompts = of(events, UserMessage, LEGACY)
    assert [u.text_chars for u in prompts] == [len("The payments test is flaky, make it pass"),
                                               len("Find why payments.test.js is flaky"),
                                               len("go on"), len("Run the linter")]
    main_runs = [u.run_id for u in prompts if u.run_id and not u.run_id.startswith(
        ("agent:", "sidechain"))]
    assert len(set(main_runs)) == 2                # "go on" started a new run
    errors = [e for e in events if isinstance(e, SourceError)]
    assert source.errors == 1 and len(errors) == 1
    text = LEGACY_FILE.read_bytes()
    cut = text.index(b'"userType":"external","cw\n')
    start = text.rindex(b"\n", 0, cut) + 1
    assert errors[0].where == f"offset {start}"
    assert errors[0].path == str(LEGACY_FILE) and "invalid JSON" in errors[0].message


# ------------------------------------------------------------------- exactly once

def copy_project(tmp_path: Path, source: Path, data: bytes) -> Path:
    target = tmp_path / "projects" / source.parent.name / source.name
    target.parent.mkdir(parents=True)
    target.write_bytes(data)
    return target


def ids(events) -> list[str]:
    return [c.call_id for c in of(events, ToolCall)]


def test_a_line_appended_in_two_writes_is_read_once_when_complete(tmp_path):
    data = LOOP_FILE.read_bytes()
    _, whole = read_all(PROJECTS)
    whole = [e for e in whole if getattr(e, "session_id", None) == LOOP]
    cut = data.index(b'"name":"Bash"', len(data) // 2)          # inside a tool_use line
    target = copy_project(tmp_path, LOOP_FILE, data[:cut])
    source = ClaudeCodeSource(str(tmp_path / "projects"))
    first = source.poll()
    assert source.poll() == []
    with open(target, "ab") as handle:
        handle.write(data[cut:])
    second = source.poll()
    assert ids(first) + ids(second) == ids(whole)
    assert tokens(first + second, LOOP) == tokens(whole, LOOP)
    assert source.errors == 0


def test_a_restart_from_the_checkpoint_reads_every_line_once(tmp_path):
    data = LEGACY_FILE.read_bytes()
    _, whole = read_all(PROJECTS)
    whole = [e for e in whole if getattr(e, "origin", "").startswith(str(LEGACY_FILE))]
    lines = data.splitlines(keepends=True)
    cut = sum(len(line) for line in lines[:3]) + 40     # mid-way through the reply's 2nd line
    target = copy_project(tmp_path, LEGACY_FILE, data[:cut])
    first, second = read_across_a_restart(
        lambda saved: ClaudeCodeSource(str(tmp_path / "projects"), resume=saved), target,
        data[cut:])
    assert ids(first) + ids(second) == ids(whole)
    assert tokens(first + second, LEGACY) == tokens(whole, LEGACY) == {
        "input": 34, "output": 483, "cache_write": 4570, "cache_read": 74300, "total": 79387}
    replies = of(first + second, AssistantMessage)
    assert len(replies) == len(of(whole, AssistantMessage))
    assert [u.run_id for u in of(second, UserMessage)] == [
        u.run_id for u in of(whole, UserMessage)][1:]


def test_a_sidechain_replaying_its_parents_lines_calls_nothing_again(tmp_path):
    """A side-question transcript copies parent lines with their ``tool_use`` ids and a new
    ``requestId``: no call is made twice; their tokens count, as ccusage counts them."""
    lines = LOOP_FILE.read_bytes().splitlines(keepends=True)
    copy_project(tmp_path, LOOP_FILE, b"".join(lines))
    replayed = []
    for line in lines[18:20]:                     # the first reply: its text and tool_use lines
        entry = json.loads(line)
        entry.update(isSidechain=True, agentId="abtw01", requestId="req_replayed000001")
        replayed.append(json.dumps(entry, separators=(",", ":")).encode() + b"\n")
    side = tmp_path / "projects" / "-tmp-cap-work" / LOOP / "subagents" / "agent-abtw01.jsonl"
    side.parent.mkdir(parents=True)
    side.write_bytes(b"".join(replayed))
    _, events = read_all(tmp_path / "projects")
    assert len(of(events, ToolCall)) == 12
    replies = of(events, AssistantMessage)
    assert len(replies) == 14
    assert replies[-1].run_id == "agent:abtw01"
    assert tokens(events, LOOP)["total"] == 167482 + 12203 + 23 + 0 + 120


# -------------------------------------------------------------------- detection

def test_the_real_loop_raises_a_generic_repeat_finding():
    _, events = read_all(PROJECTS)
    events = [e for e in events if getattr(e, "session_id", None) == LOOP]
    engine = DetectionEngine()
    findings = []
    for event in events:
        if hasattr(event, "session_id") and not isinstance(event, SessionInfo):
            findings += engine.observe(f"claude-code:{LOOP}", "claude-code", event)
    repeats = [f for f in findings if f.detector == "generic_repeat"]
    assert [(f.level, f.count, f.at_call) for f in repeats] == [("warning", 10, 11)]
    assert repeats[0].session_key == f"claude-code:{LOOP}"


def _pre_2_1_turn(session: str, outputs: list[int]) -> list[dict]:
    """One prompt, then a turn as Claude Code before 2.1 wrote it: each block a line of
    its own with ``stop_reason: null`` (a short text, then a Bash call and its result, for
    every entry of ``outputs``), and a last text line that ends the turn."""
    base = {"isSidechain": False, "userType": "external", "cwd": "/w", "sessionId": session,
            "version": "1.0.98", "timestamp": "2025-08-01T10:00:00.000Z"}
    lines = [{**base, "type": "user", "uuid": "u0",
              "message": {"role": "user", "content": "build the TODO app"}}]

    def reply(n: int, block: dict, output: int, stop: str | None) -> dict:
        return {**base, "type": "assistant", "uuid": f"a{n}", "requestId": f"req_{n}",
                "message": {"id": f"msg_{n}", "role": "assistant", "model": "claude-sonnet-4",
                            "content": [block], "stop_reason": stop,
                            "usage": {"input_tokens": 10, "output_tokens": output}}}

    for n, output in enumerate(outputs):
        lines.append(reply(2 * n, {"type": "text", "text": "Next step."}, output, None))
        lines.append(reply(2 * n + 1, {"type": "tool_use", "id": f"toolu_{n}", "name": "Bash",
                                       "input": {"command": f"step {n}"}}, 5, None))
        lines.append({**base, "type": "user", "uuid": f"r{n}", "message": {
            "role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{n}",
                                         "content": f"ok {n}"}]}})
    lines.append(reply(999, {"type": "text", "text": "Done."}, 50, "end_turn"))
    return lines


def test_the_pieces_of_a_pre_2_1_turn_are_not_turns_that_each_end(tmp_path):
    """Text written between tool calls of one turn is not a reply that ended the turn, so
    a long productive turn raises no ``diminishing_returns`` (the real published session
    fe5e1c67 of Claude Code 1.0.98 raised six such warnings)."""
    session = "5e55f0a1-0000-4000-8000-000000000001"
    project = tmp_path / "projects" / "-w"
    project.mkdir(parents=True)
    lines = _pre_2_1_turn(session, [400, 300, 200, 150, 100, 80, 60])
    (project / f"{session}.jsonl").write_text("".join(json.dumps(line) + "\n"
                                                      for line in lines))
    _, events = read_all(tmp_path / "projects")
    replies = of(events, AssistantMessage, session)
    assert [r.mid_reply for r in replies] == [True] * 14 + [False]
    engine = DetectionEngine()
    findings = [finding for event in events if getattr(event, "session_id", None) == session
                and not isinstance(event, SessionInfo)
                for finding in engine.observe(f"claude-code:{session}", "claude-code", event)]
    assert [f.detector for f in findings] == []


# ------------------------------------------------------------------- hostile input

def test_hostile_lines_are_errors_with_their_offsets_and_never_stop_the_reader(tmp_path):
    good = LOOP_FILE.read_bytes().splitlines(keepends=True)
    hostile = [b"[1, 2, 3]\n", b"\xff\xfe not utf-8\n", b'{"type": "user", "x": "\x00"}\n',
               b"[" * 5000 + b"]" * 5000 + b"\n", b'{"type": 7}\n',
               b'{"type":"assistant","message":"not an object"}\n',
               b'{"type":"user","message":{"role":"user","content":[{"type":"tool_result",'
               b'"tool_use_id":{"a":1},"content":[1,{"type":"text","text":9}]}]}}\n',
               b'{"type":"assistant","timestamp":"2026-12-01T03:48:08.352Z","requestId":"r",'
               b'"message":{"id":"m","model":"x","usage":{"input_tokens":1e999,'
               b'"output_tokens":-5}}}\n']
    data = b"".join(good[:20] + hostile + good[20:])
    target = copy_project(tmp_path, LOOP_FILE, data)
    source, events = read_all(tmp_path / "projects")
    offsets = {e.where for e in events if isinstance(e, SourceError)}
    starts = [sum(len(line) for line in good[:20] + hostile[:i]) for i in range(len(hostile))]
    assert offsets == {f"offset {start}" for start in starts[:6]}
    assert source.errors == 6
    assert all(e.path == str(target) for e in events if isinstance(e, SourceError))
    assert len(of(events, ToolCall)) == 12
    assert tokens(events, LOOP)["total"] == 167482
    garbage = {"files": {"x": {"dev": "a"}}, "parse": {"usage": [[1, 2, 3], "x"],
                                                      "calls": "no", "files": {"y": 3}}}
    assert ClaudeCodeSource(str(tmp_path / "projects"), resume=garbage).poll()


def test_only_session_and_sub_agent_transcripts_are_followed(tmp_path):
    root = tmp_path / "projects"
    (root / "p" / "s1" / "subagents").mkdir(parents=True)
    (root / "p" / "s1" / "tool-results").mkdir()
    (root / "p" / "s1" / "subagents" / "deeper").mkdir()
    line = LOOP_FILE.read_bytes().splitlines(keepends=True)[19]     # one Bash tool_use line
    for relative in ("p/s1.jsonl", "p/s1/subagents/agent-x.jsonl", "p/s1/tool-results/t.jsonl",
                     "p/s1/subagents/deeper/agent-y.jsonl", "p/s1/subagents/agent-x.meta.json",
                     "top.jsonl", "p/notes.txt"):
        (root / relative).write_bytes(line.replace(b"toolu_", relative.encode() + b"toolu_"))
    (tmp_path / "outside.jsonl").write_bytes(line.replace(b"toolu_", b"outside-toolu_"))
    os.symlink(tmp_path / "outside.jsonl", root / "p" / "link.jsonl")
    os.symlink(root / "p" / "s1", root / "p" / "s2")
    _, events = read_all(root)
    assert sorted(c.call_id.split("toolu_")[0] for c in of(events, ToolCall)) == [
        "p/s1.jsonl", "p/s1/subagents/agent-x.jsonl"]


def test_a_split_replay_gets_every_transcript_of_a_session_in_one_shard():
    source = ClaudeCodeSource(str(PROJECTS))
    weights = {sid: weight for sid, (weight, _) in source.transcript_units().items()}
    sizes = {path: path.stat().st_size for path in PROJECTS.rglob("*.jsonl")}
    assert weights == {
        LOOP: sizes[LOOP_FILE],
        TOUR: sum(size for path, size in sizes.items() if TOUR in str(path)),
        LEGACY: sum(size for path, size in sizes.items() if "-home-dev-api" in str(path))}
    assert source.read_index() == []
    source.only_sessions = {TOUR, LEGACY}
    with complete_files():
        events = source.poll()
    assert {e.session_id for e in of(events, ToolCall)} == {TOUR, LEGACY}
    assert len(of(events, ToolCall)) == 10 + 7


# ------------------------------------------------------------------ ccusage parity

def test_token_totals_equal_ccusage_for_the_same_files(tmp_path):
    report = run_ccusage("claude", "session", home=tmp_path,
                         env={"CLAUDE_CONFIG_DIR": str(FIXTURES)})
    theirs: Counter = Counter()
    for session in report["sessions"]:
        sid = session["sessionId"]
        if sid.startswith("agent-"):                 # a pre-2.1 sub-agent file: its parent's
            first = (PROJECTS / session["projectPath"] / f"{sid}.jsonl").read_text()
            sid = json.loads(first.splitlines()[0])["sessionId"]
        for name, field in (("input", "inputTokens"), ("output", "outputTokens"),
                            ("cache_write", "cacheCreationTokens"),
                            ("cache_read", "cacheReadTokens"), ("total", "totalTokens")):
            theirs[(sid, name)] += session[field]
    _, events = read_all(PROJECTS)
    ours = Counter({(sid, name): value
                    for sid in {e.session_id for e in of(events, AssistantMessage)}
                    for name, value in tokens(events, sid).items()})
    assert ours == theirs
    assert {sid for sid, _ in ours} == {LOOP, TOUR, LEGACY}


def test_a_single_transcript_given_on_its_own_is_read_and_recognised():
    sub = next((PROJECTS / "-tmp-cap-w2" / TOUR / "subagents").glob("*.jsonl"))
    for path in (LOOP_FILE, LEGACY_FILE, sub):
        entry = first_entry(str(path))
        assert is_claude_code_entry(entry) and not is_codex_entry(entry)
    assert not is_claude_code_entry({"type": "session", "version": 3, "id": "x"})
    source = ClaudeCodeSource.for_file(str(sub))
    with complete_files():
        events = source.poll()
    assert [(c.session_id, c.run_id) for c in of(events, ToolCall)] == [
        (TOUR, f"agent:{AGENT}")]


def test_a_catch_up_from_the_page_cache_stops_reading_ahead_after_a_window(tmp_path,
                                                                         monkeypatch):
    """Files a catch-up reads without the disk stop the hints after one window of files
    started (judged by their bytes); polling a file already started does not count."""
    data = LOOP_FILE.read_bytes()
    files = 3 * read_ahead.WINDOW_FILES
    for n in range(files):
        session = f"{n:08d}{LOOP[8:]}"
        target = tmp_path / "projects" / f"-tmp-p{n:03d}" / f"{session}.jsonl"
        target.parent.mkdir(parents=True)
        target.write_bytes(data.replace(LOOP.encode(), session.encode()))
    hinted: list[str] = []
    monkeypatch.setattr(read_ahead, "prefetch",
                        lambda path, offset, length: hinted.append(path))
    source = ClaudeCodeSource(str(tmp_path / "projects"))
    looks: list[int] = []
    source._read_ahead._storage_reads = lambda: looks.append(1) or 0
    source.poll_budget_bytes = len(data) // 3
    polls = 0
    while source.poll() or source.behind:
        polls += 1
    assert polls > 2 * files
    assert read_ahead.WINDOW_FILES <= len(hinted) <= read_ahead.WINDOW_FILES \
        + read_ahead.PREFETCH_FILES
    assert len(looks) == 1 + files // read_ahead.WINDOW_FILES
    source.close()


def test_transcripts_not_read_yet_are_read_ahead_once_before_their_first_read(tmp_path,
                                                                               monkeypatch):
    data = LOOP_FILE.read_bytes()
    for n in range(30):
        session = f"{n:08d}{LOOP[8:]}"
        target = tmp_path / "projects" / f"-tmp-p{n:02d}" / f"{session}.jsonl"
        target.parent.mkdir(parents=True)
        target.write_bytes(data.replace(LOOP.encode(), session.encode()))
    hinted: list[tuple[str, int, int]] = []
    monkeypatch.setattr(read_ahead, "prefetch",
                        lambda path, offset, length: hinted.append((path, offset, length)))
    first_read: dict[str, int] = {}
    source = ClaudeCodeSource(str(tmp_path / "projects"))
    source.poll_budget_bytes = 8192
    while True:
        for event in source.poll():
            path = getattr(event, "origin", "").rpartition("@")[0]
            if path.endswith(".jsonl"):
                first_read.setdefault(path, len(hinted))
        if not source.behind:
            break
    paths = [path for path, _, _ in hinted]
    assert len(first_read) == 30
    assert len(paths) == len(set(paths)) == 29, "each transcript but the first, once"
    assert {(offset, length) for _, offset, length in hinted} == {(0, read_ahead.PREFETCH_BYTES)}
    for path, at in first_read.items():
        if path in paths:
            assert paths.index(path) < at, f"{path} was hinted after its first read"
    first = next(iter(first_read))
    prompt = Path(first).read_bytes().splitlines(keepends=True)[2]     # a user prompt
    with open(first, "ab") as handle:
        handle.write(prompt.replace(b'"uuid":"3', b'"uuid":"4').replace(b"92bee7c6", b"a2bee7c6"))
    assert source.poll(), "the append is read"
    assert len(hinted) == 29, "an append to a transcript already read is not hinted"
    source.close()


# ------------------------------------------- a resumed session's copies, read long after

SESSION_A = "aaaaaaaa-0000-0000-0000-000000000001"
SESSION_B = "ffffffff-0000-0000-0000-000000000002"
KEPT = 64


def _turn(session: str, n: int, tag: str = "") -> list[str]:
    """One reply calling Read (usage 1 in, 1 out) and the call's result, as Claude Code
    writes them; ``tag`` makes the ids of one session's turns its own."""
    reply = {"type": "assistant", "isSidechain": False, "sessionId": session,
             "version": "2.1.3", "requestId": f"req_{tag}{n:06d}", "uuid": f"u{tag}{n}",
             "cwd": "/tmp/p", "timestamp": f"2026-12-01T03:49:{n % 60:02d}.000Z",
             "message": {"id": f"msg_{tag}{n:06d}", "role": "assistant", "model": "m",
                         "content": [{"type": "tool_use", "id": f"toolu_{tag}{n:08d}",
                                      "name": "Read",
                                      "input": {"file_path": f"/tmp/p/f{n}.py"}}],
                         "stop_reason": "tool_use",
                         "usage": {"input_tokens": 1, "output_tokens": 1}}}
    result = {"type": "user", "isSidechain": False, "sessionId": session, "version": "2.1.3",
              "uuid": f"r{tag}{n}", "cwd": "/tmp/p",
              "timestamp": f"2026-12-01T03:49:{n % 60:02d}.500Z",
              "message": {"role": "user", "content": [
                  {"type": "tool_result", "tool_use_id": f"toolu_{tag}{n:08d}",
                   "content": "x = 1"}]}}
    return [json.dumps(line, separators=(",", ":")) for line in (reply, result)]


def _write_session(project: Path, session: str, lines: list[str]) -> None:
    project.mkdir(parents=True, exist_ok=True)
    (project / f"{session}.jsonl").write_text("".join(line + "\n" for line in lines))


def _keep_only(monkeypatch, kept: int) -> None:
    """Recent structures of ``kept`` keys, so that a few hundred lines outgrow them."""
    monkeypatch.setattr(claude_code, "UsageLedger", partial(UsageLedger, max_keys=kept))
    monkeypatch.setattr(claude_code, "CALLS_KEPT", kept)
    monkeypatch.setattr(claude_code, "RESULTS_KEPT", kept)


def _assert_b_adds_only_its_new_turn(root: Path, replies_a: int, others: set[str]) -> None:
    _, events = read_all(root / "projects")
    assert tokens(events, SESSION_A)["total"] == 2 * replies_a
    assert tokens(events, SESSION_B) == {"input": 1, "output": 1, "cache_write": 0,
                                         "cache_read": 0, "total": 2}
    assert ids(of(events, ToolCall, SESSION_B)) == [f"toolu_{replies_a:08d}"]
    assert [r.call_id for r in of(events, ToolResult, SESSION_B)] == [f"toolu_{replies_a:08d}"]
    assert len(of(events, AssistantMessage, SESSION_B)) == 1
    calls = Counter(c.call_id for c in of(events, ToolCall))
    assert set(calls.values()) == {1}
    ours = sum(tokens(events, sid)["total"] for sid in {SESSION_A, SESSION_B, *others})
    if CCUSAGE_BIN.exists():
        report = run_ccusage("claude", "session", home=root, env={"CLAUDE_CONFIG_DIR": str(root)})
        assert ours == sum(session["totalTokens"] for session in report["sessions"])


@pytest.mark.parametrize("replies_a", [KEPT + 1, 200])
def test_a_resumed_copy_of_more_replies_than_are_kept_adds_only_its_new_reply(
        tmp_path, monkeypatch, replies_a):
    """B starts with copies of all of A's lines (``claude --resume``), then one new turn:
    once A has more replies and calls than the recent structures keep, the copies are still
    copies (ccusage counts each ``(message.id, requestId)`` once across files)."""
    _keep_only(monkeypatch, KEPT)
    project = tmp_path / "projects" / "-tmp-p"
    turns_a = [line for n in range(replies_a) for line in _turn(SESSION_A, n)]
    _write_session(project, SESSION_A, turns_a)
    _write_session(project, SESSION_B, turns_a + _turn(SESSION_B, replies_a))
    _assert_b_adds_only_its_new_turn(tmp_path, replies_a, set())


def test_a_resumed_copy_read_after_many_other_sessions_adds_only_its_new_reply(
        tmp_path, monkeypatch):
    """The recent structures are the whole source's: other sessions' replies read between A
    and its resumed copy B push A's keys out of them, however short A is."""
    _keep_only(monkeypatch, KEPT)
    project = tmp_path / "projects" / "-tmp-p"
    replies_a = 20
    turns_a = [line for n in range(replies_a) for line in _turn(SESSION_A, n)]
    _write_session(project, SESSION_A, turns_a)
    others = {f"cccccccc-0000-0000-0000-{k:012d}" for k in range(8)}
    for k, session in enumerate(sorted(others)):
        _write_session(project, session,
                       [line for n in range(30) for line in _turn(session, n, f"o{k}_")])
    _write_session(project, SESSION_B, turns_a + _turn(SESSION_B, replies_a))
    _assert_b_adds_only_its_new_turn(tmp_path, replies_a, others)


def test_seen_digests_find_every_digest_across_merges_and_forget_the_oldest_past_the_bound():
    seen = SeenDigests(max_digests=1 << 20, recent_limit=4)
    keys = [key_digest(f"msg_{n}", f"req_{n}") for n in range(1000)]
    for count, digest in enumerate(keys, 1):
        assert digest not in seen
        assert seen.add(digest) is True
        assert seen.add(digest) is False
        assert digest in seen
        assert len(seen) == count
        if count in (3, 4, 5, 17, 999):              # before and after a run is sealed
            assert all(kept in seen for kept in keys[:count])
            assert not any(new in seen for new in keys[count:])
    assert all(digest in seen for digest in keys)
    assert key_digest("msg_1", "req_1") == keys[1]           # stable, not salted
    assert len({key_digest("ab", None), key_digest("a", "b"), key_digest("ab", ""),
                key_digest("ab"), key_digest("a\udc80", None)}) == 5

    bounded = SeenDigests(max_digests=64, recent_limit=4)
    for digest in keys:
        bounded.add(digest)
        assert len(bounded) <= 64
    assert len(bounded) >= 16
    newest = keys[-len(bounded) // 2:]
    assert all(digest in bounded for digest in newest)
    assert not any(digest in bounded for digest in keys[:len(keys) - 64])


def test_an_agent_file_naming_a_session_kept_elsewhere_is_not_that_sessions(tmp_path):
    """A pre-2.1 ``agent-<id>.jsonl`` counts as the session its lines name only when that
    session's file is beside it (where Claude Code writes both): one in another project dir
    naming a session of its own (crafted, or another user's being watched) is its own file's
    session, and its loop cannot raise findings, or a stop, on that session."""
    legacy = tmp_path / "projects" / "-home-dev-api"
    legacy.mkdir(parents=True)
    shutil.copy(LEGACY_FILE, legacy)
    shutil.copy(PROJECTS / "-home-dev-api" / "agent-5e6f7a8b.jsonl", legacy)
    elsewhere = tmp_path / "projects" / "-elsewhere" / "agent-5e6f7a8b.jsonl"
    elsewhere.parent.mkdir()
    elsewhere.write_text((legacy / "agent-5e6f7a8b.jsonl").read_text().replace(
        '"toolu_', '"toolu_x'))
    _, events = read_all(tmp_path / "projects")
    by_session = Counter(call.session_id for call in of(events, ToolCall))
    assert by_session == {LEGACY: 7, "agent-5e6f7a8b": 1}, by_session


def test_a_subagents_folder_without_its_sessions_file_beside_is_not_that_sessions(tmp_path):
    """``<project>/<session>/subagents/agent-*.jsonl`` is the session's only with
    ``<project>/<session>.jsonl`` beside it, as Claude Code writes them: a folder named after
    a session kept elsewhere cannot make its sub-agent's calls that session's."""
    tour = tmp_path / "projects" / "-tmp-cap-w2"
    shutil.copytree(PROJECTS / "-tmp-cap-w2", tour)
    before = Counter(call.session_id for call in of(read_all(tmp_path / "projects")[1],
                                                    ToolCall))
    agent = next((tour / TOUR / "subagents").glob("agent-*.jsonl"))
    elsewhere = tmp_path / "projects" / "-elsewhere" / TOUR / "subagents" / agent.name
    elsewhere.parent.mkdir(parents=True)
    elsewhere.write_text(agent.read_text().replace('"toolu_', '"toolu_x'))
    _, events = read_all(tmp_path / "projects")
    by_session = Counter(call.session_id for call in of(events, ToolCall))
    assert by_session[TOUR] == before[TOUR] > 0
    assert by_session[agent.stem] > 0, by_session

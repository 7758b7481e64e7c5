"""CodexSource on rollouts in Codex CLI's own format (issue 14).

Fixtures (``tests/fixtures/codex/sessions``):

* ``2026/12/01/rollout-...-01a22fb7-...jsonl``: written by the real Codex CLI 0.171.0
  (``codex exec``) against a scripted Responses API endpoint that answers every turn with the
  same ``exec_command``, twelve times; only ``base_instructions``, the injected developer text
  and ``world_state`` were shortened.
* ``2026/12/01/rollout-...-01a22fbd-...jsonl``: the same client running a failing test twice,
  an ``apply_patch`` custom tool call it refused, and a command still running when it yielded.
* ``2025/09/14/rollout-...jsonl``: the 0.3x shapes: the ``shell`` tool's JSON output, the
  freeform ``Exit code: / Wall time: / Output:`` of ``shell_command``, ``apply_patch``, a
  ``local_shell_call``, a ``web_search_call``, a ``token_count`` without info and one repeated
  when only the rate limits changed, ``error``, ``turn_aborted``, ``compacted``.
* ``2026/05/12/rollout-...jsonl``: a ``thread_spawn`` sub-agent whose rollout starts with its
  parent's history replayed at spawn time.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from restart_reads import read_across_a_restart
from test_source_claude_code import run_ccusage

from monitor.detect.engine import DetectionEngine
from monitor.events import (
    AssistantMessage,
    Compaction,
    SessionInfo,
    SessionStart,
    SourceError,
    ToolCall,
    ToolResult,
    UserMessage,
)
from monitor.sources import codex
from monitor.sources.claude_code import is_claude_code_entry
from monitor.sources.codex import CodexSource, is_codex_entry
from monitor.sources.jsonl_tree import first_entry
from monitor.sources.tail_state import complete_files

FIXTURES = Path(__file__).parent / "fixtures" / "codex"
SESSIONS = FIXTURES / "sessions"
LOOP = "01a22fb7-c36d-7723-86b7-4a2c25a78eef"
LOOP_FILE = SESSIONS / "2026" / "12" / "01" / f"rollout-2026-12-01T03-48-22-{LOOP}.jsonl"
FIX = "01a22fbd-84ea-79f2-9e89-f7723ca107bd"
OLD = "0199495a-7c1e-7d32-b0f4-3a9e6c2d8b17"
OLD_FILE = SESSIONS / "2025" / "09" / "14" / f"rollout-2025-09-14T10-02-00-{OLD}.jsonl"
SUB = "019e2a3b-1c2d-7e3f-8a4b-5c6d7e8f9a0b"


def read_all(root=SESSIONS) -> tuple[CodexSource, list]:
    source = CodexSource(str(root))
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


def last_total(path: Path) -> dict:
    """The ``total_token_usage`` of the file's last ``token_count``, read independently."""
    total = None
    for line in path.read_text().splitlines():
        entry = json.loads(line)
        payload = entry.get("payload") or {}
        if entry["type"] == "event_msg" and payload.get("type") == "token_count" \
                and payload.get("info"):
            total = payload["info"]["total_token_usage"]
    return total


def copy_rollout(tmp_path: Path, source: Path, data: bytes) -> Path:
    target = tmp_path / "sessions" / source.relative_to(SESSIONS)
    target.parent.mkdir(parents=True)
    target.write_bytes(data)
    return target


def ids(events) -> list[str]:
    return [c.call_id for c in of(events, ToolCall)]


# ------------------------------------------------------------- a real loop, read whole

def test_a_real_exec_command_loop_reads_as_one_session_with_twelve_identical_calls():
    source, events = read_all()
    info = [e for e in of(events, SessionInfo) if e.session_id == LOOP]
    assert [(i.key, i.agent_id, i.label, i.provider) for i in info] == [
        (f"codex:{LOOP}", "codex", "/tmp/cap/work", "scripted")]
    assert [s.cwd for s in of(events, SessionStart, LOOP)] == ["/tmp/cap/work"]
    calls = of(events, ToolCall, LOOP)
    assert [c.name for c in calls] == ["exec_command"] * 12
    assert {json.dumps(c.arguments) for c in calls} == {'{"cmd": "ls /tmp/cap/work"}'}
    turn = "01a22fb7-c37c-7432-8701-b422737fbce0"
    assert {c.run_id for c in calls} == {turn}
    results = of(events, ToolResult, LOOP)
    assert [r.call_id for r in results] == [c.call_id for c in calls]
    assert all(r.details == {"status": "completed", "exitCode": 0, "aggregated": "a.txt\n"}
               and r.text == "a.txt\n" for r in results)         # no Chunk ID, no Wall time
    assert [u.text_chars for u in of(events, UserMessage, LOOP)] == [len("List the work dir")]
    assert source.errors == 0


def test_a_sessions_tokens_are_its_last_cumulative_total():
    _, events = read_all()
    replies = of(events, AssistantMessage, LOOP)
    assert len(replies) == 13                     # twelve calls, one answer
    assert [r.tool_call_count for r in replies] == [1] * 12 + [0]
    assert {r.model for r in replies} == {"scripted-loop-model"}
    final = last_total(LOOP_FILE)
    assert final["total_tokens"] == 143608
    assert tokens(events, LOOP) == {
        "input": final["input_tokens"] - final["cached_input_tokens"], "output": 299,
        "cache_write": 0, "cache_read": final["cached_input_tokens"], "total": 143608}


def test_a_repeated_total_and_a_token_count_without_info_add_nothing():
    _, events = read_all()
    final = last_total(OLD_FILE)
    assert tokens(events, OLD)["total"] == final["total_tokens"] == 64050
    replies = of(events, AssistantMessage, OLD)
    assert [r.stop_reason for r in replies] == ["tool_use"] * 6 + ["end_turn", "error",
                                                                     "aborted"]
    assert [r.tool_call_count for r in replies] == [1] * 6 + [0, 0, 0]
    assert [r.is_error for r in replies].count(True) == 2
    assert replies[-2].error_message.startswith("stream disconnected")
    assert replies[-1].error_message == "interrupted"


def test_a_total_that_falls_and_climbs_back_counts_only_its_highest(tmp_path):
    """codex-rs only adds to ``total_token_usage``: a forged line that lowers it must not make
    the climb back count as new spend (100, 50, 100, 200 is 200, not 250)."""
    session = "019e2a3b-1c2d-7e3f-8a4b-5c6d7e8f9a0c"
    target = tmp_path / "sessions" / "2026" / "12" / "07" / \
        f"rollout-2026-12-07T08-00-00-{session}.jsonl"
    target.parent.mkdir(parents=True)

    def token_count(second: int, total: int) -> dict:
        usage = {"input_tokens": total, "cached_input_tokens": 0, "output_tokens": total // 10,
                 "reasoning_output_tokens": 0, "total_tokens": total + total // 10}
        return {"timestamp": f"2026-12-07T08:00:0{second}.000Z", "type": "event_msg",
                "payload": {"type": "token_count", "info": {"total_token_usage": usage}}}

    meta = {"timestamp": "2026-12-07T08:00:00.000Z", "type": "session_meta",
            "payload": {"id": session, "cwd": "/tmp", "cli_version": "0.171.0"}}
    lines = [meta] + [token_count(n, total) for n, total in enumerate((100, 50, 100, 200), 1)]
    target.write_text("".join(json.dumps(line) + "\n" for line in lines))
    _, events = read_all(tmp_path / "sessions")
    assert tokens(events, session) == {"input": 200, "output": 20, "cache_write": 0,
                                       "cache_read": 0, "total": 220}


# ------------------------------------------------------------------ tool shapes

def test_every_codex_tool_shape_becomes_calls_and_results():
    _, events = read_all()
    calls = of(events, ToolCall, OLD)
    assert Counter(c.name for c in calls) == {"shell": 2, "apply_patch": 1, "shell_command": 1,
                                              "local_shell": 1, "web_search": 1}
    assert calls[0].arguments == {"command": ["bash", "-lc", "npm test"],
                                  "workdir": "/home/dev/api", "timeout_ms": 120000}
    assert calls[2].arguments.startswith("*** Begin Patch\n")
    results = {r.call_id: r for r in of(events, ToolResult, OLD)}
    assert len(results) == 5                      # a web search has no output item
    first, second = (results[c.call_id] for c in calls[:2])
    assert first.details == second.details == {
        "status": "failed", "exitCode": 1,
        "aggregated": "FAIL test/payments.test.js\n  \u2715 charges once (12 ms)\n"}
    patch = results["call_Lg1patch0000000000000003"]
    assert (patch.name, patch.is_error, patch.details) == ("apply_patch", False, {"exitCode": 0})
    assert results["call_Lg1shcmd0000000000000004"].details == {
        "status": "completed", "exitCode": 0, "aggregated": "PASS test/payments.test.js\n"}
    assert results["call_Lg1local0000000000000005"].details["exitCode"] == 0
    assert [c.kind for c in of(events, Compaction, OLD)] == ["compaction"]
    assert len(of(events, UserMessage, OLD)) == 2


def test_real_failing_refused_and_still_running_commands():
    _, events = read_all()
    results = of(events, ToolResult, FIX)
    assert [r.name for r in results] == ["exec_command", "apply_patch", "exec_command",
                                         "exec_command"]
    assert [r.details["exitCode"] for r in (results[0], results[2])] == [1, 1]
    assert results[0].details["aggregated"].startswith("Traceback (most recent call last):")
    assert results[1].text == "unsupported custom tool call: apply_patch"
    assert results[3].details == {"status": "running", "tail": ""}
    assert tokens(events, FIX)["total"] == last_total(
        LOOP_FILE.parent / f"rollout-2026-12-01T03-54-39-{FIX}.jsonl")["total_tokens"]


def test_a_spawned_sub_agent_does_not_count_or_call_its_parents_history():
    _, events = read_all()
    assert [c.arguments["cmd"] for c in of(events, ToolCall, SUB)] == ["pytest -q"]
    assert tokens(events, SUB) == {"input": 100, "output": 80, "cache_write": 0,
                                   "cache_read": 500, "total": 680}
    assert [i.key for i in of(events, SessionInfo) if i.session_id == SUB] == [f"codex:{SUB}"]


# ------------------------------------------------------------------- exactly once

def test_a_line_appended_in_two_writes_is_read_once_when_complete(tmp_path):
    data = LOOP_FILE.read_bytes()
    _, whole = read_all()
    whole = [e for e in whole if getattr(e, "session_id", None) == LOOP]
    cut = data.index(b'"type":"function_call"', len(data) // 2) + 10
    target = copy_rollout(tmp_path, LOOP_FILE, data[:cut])
    source = CodexSource(str(tmp_path / "sessions"))
    first = source.poll()
    assert source.poll() == []
    with open(target, "ab") as handle:
        handle.write(data[cut:])
    second = source.poll()
    assert ids(first) + ids(second) == ids(whole)
    assert tokens(first + second, LOOP) == tokens(whole, LOOP)
    assert source.errors == 0


def test_a_restart_from_the_checkpoint_keeps_the_cumulative_baseline(tmp_path):
    data = LOOP_FILE.read_bytes()
    _, whole = read_all()
    whole = [e for e in whole if getattr(e, "session_id", None) == LOOP]
    third = data.index(b'"type":"token_count"')
    for _ in range(2):
        third = data.index(b'"type":"token_count"', third + 1)
    cut = data.index(b"\n", third) + 30           # inside the line after the third total
    target = copy_rollout(tmp_path, LOOP_FILE, data[:cut])
    first, second = read_across_a_restart(
        lambda saved: CodexSource(str(tmp_path / "sessions"), resume=saved), target, data[cut:])
    assert len(of(first, AssistantMessage)) == 3
    assert ids(first) + ids(second) == ids(whole)
    assert tokens(first + second, LOOP) == tokens(whole, LOOP)
    assert tokens(first + second, LOOP)["total"] == 143608
    assert {c.run_id for c in of(second, ToolCall)} == {"01a22fb7-c37c-7432-8701-b422737fbce0"}
    assert [i.key for i in of(second, SessionInfo)] == [f"codex:{LOOP}"]   # a new process


def test_idle_rollouts_beyond_the_open_limit_are_suspended_and_still_followed(tmp_path):
    lines = LOOP_FILE.read_bytes().splitlines(keepends=True)
    paths = []
    for n in range(3):
        uuid = f"01a22fb7-c36d-7723-86b7-4a2c25a78e{n:02d}"
        target = tmp_path / "sessions" / "2026" / "12" / "01" / f"rollout-x-{uuid}.jsonl"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(b"".join(lines[:12]).replace(b':"call_', f':"call_{n}_'.encode()))
        paths.append(target)
    source = CodexSource(str(tmp_path / "sessions"))
    source.max_open_followers = 1
    with complete_files():
        first = source.poll()
    assert len(of(first, ToolCall)) == 3
    assert sum(f.open_descriptors for f in source._followers.values()) == 1
    with open(paths[0], "ab") as handle:
        handle.write(lines[14].replace(b':"call_', b':"call_0_'))       # its output
    with complete_files():
        second = source.poll()
    assert [(r.call_id, r.details["exitCode"]) for r in of(second, ToolResult)] == [
        (of(first, ToolCall)[0].call_id, 0)]


def test_a_small_poll_budget_reads_in_steps_without_losing_or_repeating_a_line(tmp_path):
    copy_rollout(tmp_path, LOOP_FILE, LOOP_FILE.read_bytes())
    copy_rollout(tmp_path, OLD_FILE, OLD_FILE.read_bytes())
    _, whole = read_all(tmp_path / "sessions")
    source = CodexSource(str(tmp_path / "sessions"))
    source.poll_budget_bytes = 4096
    steps, events = 0, []
    with complete_files():
        while True:
            events += source.poll()
            steps += 1
            if not source.behind:
                break
    assert steps > 10
    assert ids(events) == ids(whole)
    assert tokens(events, LOOP) == tokens(whole, LOOP)
    assert tokens(events, OLD) == tokens(whole, OLD)


# -------------------------------------------------------------------- detection

def test_the_real_loop_raises_a_generic_repeat_finding():
    _, events = read_all()
    engine = DetectionEngine()
    findings = []
    for event in events:
        if getattr(event, "session_id", None) == LOOP and not isinstance(event, SessionInfo):
            findings += engine.observe(f"codex:{LOOP}", "codex", event)
    repeats = [f for f in findings if f.detector == "generic_repeat"]
    assert [(f.level, f.count, f.at_call, f.session_key) for f in repeats] == [
        ("warning", 10, 11, f"codex:{LOOP}")]


# ------------------------------------------------------------------- hostile input

def test_hostile_lines_are_errors_with_their_offsets_and_never_stop_the_reader(tmp_path):
    good = LOOP_FILE.read_bytes().splitlines(keepends=True)
    hostile = [b'"a string"\n', b"\xc3\x28\n", b"{\x00}\n", b"{" * 3000 + b"\n",
               b'{"type":"response_item"}\n', b'{"payload":{}}\n',
               b'{"timestamp":"x","type":"event_msg","payload":{"type":"token_count","info":'
               b'{"total_token_usage":{"input_tokens":1e999,"total_tokens":-1}}}}\n',
               b'{"timestamp":"x","type":"response_item","payload":{"type":"function_call",'
               b'"name":["x"],"arguments":"{not json","call_id":7}}\n',
               b'{"timestamp":"x","type":"banana","payload":{"type":"token_count"}}\n']
    data = b"".join(good[:16] + hostile + good[16:])
    target = copy_rollout(tmp_path, LOOP_FILE, data)
    source, events = read_all(tmp_path / "sessions")
    starts = [sum(len(line) for line in good[:16] + hostile[:i]) for i in range(len(hostile))]
    errors = [e for e in events if isinstance(e, SourceError)]
    assert {e.where for e in errors} == {f"offset {start}" for start in starts[:6]}
    assert source.errors == 6 and {e.path for e in errors} == {str(target)}
    odd = [c for c in of(events, ToolCall) if c.arguments == "{not json"]
    assert len(odd) == 1 and odd[0].name == "?"
    assert len(of(events, ToolCall)) == 13
    assert tokens(events, LOOP)["total"] == 143608
    garbage = {"files": {str(target): {"ino": []}}, "parse": {
        "files": {str(target): {"total": ["a"], "session": 5, "copy_second": 3,
                                 "copied_turn": "yes"}}, "calls": [[1]]}}
    assert CodexSource(str(tmp_path / "sessions"), resume=garbage).poll()


def test_only_rollouts_in_dated_directories_are_followed(tmp_path):
    line = LOOP_FILE.read_bytes().splitlines(keepends=True)[11]       # a function_call
    root = tmp_path / "sessions"
    for relative in ("2026/12/01/rollout-a.jsonl", "2026/12/rollout-b.jsonl",
                     "2026/12/01/other.jsonl", "archive/2026/rollout-c.jsonl",
                     "2026/12/01/deeper/rollout-d.jsonl", "rollout-e.jsonl"):
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_bytes(line.replace(b'"call_id":"call_',
                                                   b'"call_id":"' + relative.encode()))
    calls = of(read_all(root)[1], ToolCall)
    assert sorted(c.call_id.split("b9f2")[0] for c in calls) == [
        "2026/12/01/rollout-a.jsonl", "2026/12/rollout-b.jsonl", "rollout-e.jsonl"]


# ------------------------------------------------------------------ ccusage parity

def test_token_totals_equal_ccusage_for_the_same_files(tmp_path):
    report = run_ccusage("codex", "session", home=tmp_path, env={"CODEX_HOME": str(FIXTURES)})
    theirs = {"-".join(session["sessionFile"].split("-")[-5:]): (   # the file name's uuid
        session["inputTokens"], session["outputTokens"], session["cacheCreationTokens"],
        session["cacheReadTokens"], session["totalTokens"]) for session in report["sessions"]}
    _, events = read_all()
    ours = {sid: tuple(tokens(events, sid).values())
            for sid in {e.session_id for e in of(events, AssistantMessage)}}
    assert ours == theirs
    assert set(ours) == {LOOP, FIX, OLD, SUB}


def test_a_single_rollout_given_on_its_own_is_read_and_recognised():
    entry = first_entry(str(OLD_FILE))
    assert is_codex_entry(entry) and not is_claude_code_entry(entry)
    source = CodexSource.for_file(str(OLD_FILE))
    with complete_files():
        events = source.poll()
    assert {e.session_id for e in of(events, ToolCall)} == {OLD}
    assert tokens(events, OLD)["total"] == 64050


def test_a_rollout_repeating_more_calls_than_are_kept_calls_only_its_new_one(tmp_path,
                                                                             monkeypatch):
    """Call ids are remembered beyond the recent ``CALLS_KEPT``: a rollout repeating another's
    call items (however many) calls only the ones never read."""
    monkeypatch.setattr(codex, "CALLS_KEPT", 8)
    day = tmp_path / "sessions" / "2026" / "12" / "01"
    day.mkdir(parents=True)

    def rollout(thread: str, calls: int) -> str:
        lines = [{"timestamp": "2026-12-01T00:00:00.000Z", "type": "session_meta",
                  "payload": {"id": thread, "cwd": "/tmp/p"}}]
        lines += [{"timestamp": "2026-12-01T00:00:01.000Z", "type": "response_item",
                   "payload": {"type": "function_call", "name": "exec_command",
                               "arguments": json.dumps({"cmd": f"cat f{n}"}),
                               "call_id": f"call_{n:06d}"}} for n in range(calls)]
        return "".join(json.dumps(line) + "\n" for line in lines)

    first, second = "11111111-0000-0000-0000-000000000001", "22222222-0000-0000-0000-000000000002"
    (day / f"rollout-2026-12-01T00-00-00-{first}.jsonl").write_text(rollout(first, 40))
    (day / f"rollout-2026-12-01T00-00-01-{second}.jsonl").write_text(rollout(second, 41))
    _, events = read_all(tmp_path / "sessions")
    assert len(of(events, ToolCall, first)) == 40
    assert ids(of(events, ToolCall, second)) == ["call_000040"]


def test_a_rollout_whose_lines_name_another_thread_is_its_own_files(tmp_path):
    """codex-rs names each rollout after its thread: one whose ``session_meta`` names another
    thread (crafted beside it, or in another user's dir being watched) is still its own
    file's session, and cannot make its loop another session's (whose CLI a stop would hit)."""
    day = tmp_path / "sessions" / "2026" / "12" / "01"
    day.mkdir(parents=True)
    victim, crafted = "01a22fb7-0000-7000-8000-00000000000b", "01a22fb7-0000-7000-8000-00000000000a"
    lines = [{"timestamp": "2026-12-01T00:00:00.000Z", "type": "session_meta",
              "payload": {"id": victim, "cwd": "/tmp/p"}}]
    lines += [{"timestamp": "2026-12-01T00:00:01.000Z", "type": "response_item",
               "payload": {"type": "function_call", "name": "exec_command",
                           "arguments": json.dumps({"cmd": "ls"}), "call_id": f"call_{n}"}}
              for n in range(12)]
    (day / f"rollout-2026-12-01T00-00-00-{crafted}.jsonl").write_text(
        "".join(json.dumps(line) + "\n" for line in lines))
    source, events = read_all(tmp_path / "sessions")
    assert {event.session_id for event in events if hasattr(event, "session_id")} == {crafted}
    assert len(of(events, ToolCall, crafted)) == 12
    restarted = CodexSource(str(tmp_path / "sessions"), resume=source.checkpoint())
    with (day / f"rollout-2026-12-01T00-00-00-{crafted}.jsonl").open("a") as out:
        out.write(json.dumps({**lines[1], "payload": {**lines[1]["payload"],
                                                      "call_id": "call_12"}}) + "\n")
    with complete_files():
        later = restarted.poll()
    assert {event.session_id for event in of(later, ToolCall)} == {crafted}

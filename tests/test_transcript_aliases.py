"""A legacy transcript is read once however the index's ``sessionFile`` names it.

The gateway records ``sessionFile``s by the paths it knows: real paths when the state dir is
reached through a symlink (``~/.openclaw -> /data/openclaw``), a spelling with ``..``, or a
file in another agent's sessions dir. Read under two names, a transcript's 12 identical
tool calls became 24 and a CRITICAL loop that never happened (which ``--act auto`` acts on).
Each case goes through the real command line, ``replay`` (with one and two jobs) and
``watch --headless``.
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

SID = "33333333-3333-3333-3333-333333333333"
CALLS = 12
TOKENS_PER_CALL = 12


def iso(t: float) -> str:
    return datetime.datetime.fromtimestamp(t, datetime.UTC).isoformat() \
        .replace("+00:00", "Z")


def loop_lines(first: int, count: int, start: float) -> str:
    """``count`` identical tool calls (``exec ls``), each with its result."""
    lines = []
    for n in range(first, first + count):
        t = start + n
        lines.append({"type": "message", "id": f"a{n}", "parentId": None, "timestamp": iso(t),
                      "message": {"role": "assistant", "content": [
                          {"type": "toolCall", "id": f"c{n}", "name": "exec",
                           "arguments": {"command": "ls"}}],
                          "usage": {"input": 10, "output": 2, "totalTokens": TOKENS_PER_CALL},
                          "stopReason": "toolUse", "timestamp": int(t * 1000)}})
        lines.append({"type": "message", "id": f"r{n}", "parentId": None,
                      "timestamp": iso(t + .5),
                      "message": {"role": "toolResult", "toolCallId": f"c{n}",
                                  "toolName": "exec", "isError": False,
                                  "content": [{"type": "text", "text": "same"}],
                                  "timestamp": int((t + .5) * 1000)}})
    return "".join(json.dumps(line) + "\n" for line in lines)


def write_transcript(sessions: Path, sid: str = SID) -> Path:
    sessions.mkdir(parents=True, exist_ok=True)
    start = time.time() - 120
    path = sessions / f"{sid}.jsonl"
    header = {"type": "session", "version": 3, "id": sid, "timestamp": iso(start),
              "cwd": "/tmp"}
    path.write_text(json.dumps(header) + "\n" + loop_lines(0, CALLS, start))
    return path


def write_index(sessions: Path, entries: dict[str, tuple[str, str]]) -> None:
    """``sessions.json`` of ``key -> (session id, sessionFile)``."""
    sessions.mkdir(parents=True, exist_ok=True)
    now = int(time.time() * 1000)
    (sessions / "sessions.json").write_text(json.dumps({
        key: {"sessionId": sid, "updatedAt": now, "sessionFile": session_file}
        for key, (sid, session_file) in entries.items()}))


def run_cli(*args: str, home: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENCLAW_", "CLAWWATCH_", "CLAUDE_", "CODEX_"))}
    env.update(HOME=str(home), TMPDIR=str(home), XDG_STATE_HOME=str(home / "xdg-state"))
    return subprocess.run([sys.executable, "-m", "monitor", *args], capture_output=True,
                          text=True, env=env, timeout=120)


def replay(state: Path, home: Path, jobs: int) -> dict:
    log = home / "gw.log"
    log.touch()
    result = run_cli("replay", "--json", "--no-cache", "--jobs", str(jobs), "--state-dir",
                     str(state), "--log", str(log), home=home)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def watch(state: Path, home: Path, *extra: str) -> list[dict]:
    log = home / "gw.log"
    log.touch()
    result = run_cli("watch", "--headless", "--json", "--from-start", "--seconds", "1.5",
                     "--state-dir", str(state), "--log", str(log), *extra, home=home)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


def assert_read_once(document: dict, sid: str = SID) -> dict:
    session = {s["session_id"]: s for s in document["sessions"]}[sid]
    assert session["tool_calls"] == CALLS
    assert session["tokens"]["total"] == CALLS * TOKENS_PER_CALL
    assert {f["level"] for f in session["findings"]} == {"warning"}
    return session


def assert_watched_once(records: list[dict], sid: str = SID) -> None:
    calls = [r for r in records if r["type"] == "tool_call" and r["session_id"] == sid]
    assert sorted(r["call_id"] for r in calls) == sorted(f"c{n}" for n in range(CALLS))
    levels = {r["level"] for r in records if r["type"] == "finding"}
    assert levels == {"warning"}


def replayed_once_with_either_jobs(state: Path, home: Path, sid: str = SID) -> dict:
    one, two = replay(state, home, 1), replay(state, home, 2)
    assert one == two
    return assert_read_once(one, sid)


@pytest.fixture
def linked_state(tmp_path: Path) -> tuple[Path, Path]:
    """``home/.openclaw -> data/openclaw``, whose index records the real paths."""
    real = tmp_path / "data" / "openclaw"
    sessions = real / "agents" / "main" / "sessions"
    transcript = write_transcript(sessions)
    write_index(sessions, {"agent:main:main": (SID, str(transcript))})
    link = tmp_path / ".openclaw"
    link.symlink_to(real)
    return real, link


def test_a_state_dir_reached_through_a_symlink_reads_each_transcript_once(
        tmp_path, linked_state):
    real, link = linked_state
    through_link = replayed_once_with_either_jobs(link, tmp_path)
    assert through_link == assert_read_once(replay(real, tmp_path, 1))
    assert_watched_once(watch(link, tmp_path, "--no-checkpoint"))


def test_a_watch_through_a_symlink_resumes_its_checkpoint_once(tmp_path, linked_state):
    real, link = linked_state
    checkpoint = tmp_path / "checkpoint.json"
    assert_watched_once(watch(link, tmp_path, "--checkpoint", str(checkpoint)))
    transcript = real / "agents" / "main" / "sessions" / f"{SID}.jsonl"
    with transcript.open("a") as handle:
        handle.write(loop_lines(CALLS, 3, time.time() - 10))
    resumed = watch(link, tmp_path, "--checkpoint", str(checkpoint))
    calls = [r["call_id"] for r in resumed if r["type"] == "tool_call"]
    assert calls == [f"c{n}" for n in range(CALLS, CALLS + 3)]


def test_a_session_file_spelled_with_dotdot_through_a_symlink_is_read_once(tmp_path):
    """The gateway knew the state dir as ``~/.openclaw`` (a symlink) and recorded
    ``~/.openclaw/agents/main/../main/sessions/<id>.jsonl``; the monitor reads the real
    dir."""
    real = tmp_path / "data" / "openclaw"
    sessions = real / "agents" / "main" / "sessions"
    write_transcript(sessions)
    (tmp_path / ".openclaw").symlink_to(real)
    recorded = f"{tmp_path}/.openclaw/agents/main/../main/sessions/{SID}.jsonl"
    write_index(sessions, {"agent:main:main": (SID, recorded)})
    replayed_once_with_either_jobs(real, tmp_path)
    assert_watched_once(watch(real, tmp_path, "--no-checkpoint"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/root"), reason="no /proc")
def test_a_session_file_under_proc_self_root_is_read_once(tmp_path):
    sessions = tmp_path / "state" / "agents" / "main" / "sessions"
    transcript = write_transcript(sessions)
    write_index(sessions, {"agent:main:main": (SID, f"/proc/self/root{transcript}")})
    replayed_once_with_either_jobs(tmp_path / "state", tmp_path)


def test_a_session_file_in_another_agents_dir_is_read_once_by_that_agent(tmp_path):
    state = tmp_path / "state"
    other = state / "agents" / "other" / "sessions"
    transcript = write_transcript(other)
    write_index(other, {"agent:other:main": (SID, str(transcript))})
    # "main" sorts first: its source would follow the file before "other" lists it
    main = state / "agents" / "main" / "sessions"
    write_index(main, {"agent:main:moved": (SID, str(transcript))})
    document = replay(state, tmp_path, 1)
    assert document == replay(state, tmp_path, 2)
    assert_read_once(document)
    events = {s["path"]: s["events"] for s in document["sources"] if s["kind"] == "jsonl"}
    assert events[str(main)] == 0 and events[str(other)] > 0
    assert_watched_once(watch(state, tmp_path, "--no-checkpoint"))


def test_a_session_file_symlinked_to_a_listed_transcript_is_read_under_the_listed_name(
        tmp_path):
    """A file-level alias (a symlink elsewhere named otherwise) is found by the file's
    identity: the listed name, read first, keeps it."""
    state = tmp_path / "state"
    sessions = state / "agents" / "main" / "sessions"
    transcript = write_transcript(sessions)
    current = tmp_path / "elsewhere" / "current.jsonl"
    current.parent.mkdir()
    current.symlink_to(transcript)
    write_index(sessions, {"agent:main:main": (SID, str(current))})
    document = replay(state, tmp_path, 1)
    assert document == replay(state, tmp_path, 2)
    assert_read_once(document)
    assert "current" not in {s["session_id"] for s in document["sessions"]}
    assert_watched_once(watch(state, tmp_path, "--no-checkpoint"))

"""Issue 12 item 9: a last line without a newline is read, once.

``replay`` reads it at once (the files are complete); ``watch`` reads it once it has stood
still for a grace time (no growth seen for ``partial_line_grace`` seconds, or a file mtime
that old). If a writer completes it later, the rest is skipped, never read as a line of its
own nor the whole line read again, and that holds across a suspend and a restart (the
checkpoint says the position is inside a line already read). A partial line not read yet is
not covered by the checkpoint: it is read after the restart, once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from chaos_writer import assistant_tool_call, dumps, session_header

from monitor.events import GatewayNotice, SourceError, ToolCall
from monitor.sources.gateway_log import GatewayLogSource
from monitor.sources.legacy import LegacySessionsSource
from monitor.sources.tail import FileFollower
from monitor.sources.tail_state import FollowerState, complete_files

SID = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
KEY = "agent:main:partial"


def call(call_id: str) -> bytes:
    return dumps(assistant_tool_call(call_id, 0)).encode()


def datas(lines) -> list[bytes]:
    return [line.data for line in lines]


def age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


# ----------------------------------------------------------------- the follower

def test_replay_reads_the_last_line_at_once(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"one\ntwo")
    follower = FileFollower(str(path))
    with complete_files():
        assert datas(follower.poll()) == [b"one", b"two"]
        assert datas(follower.poll()) == []


def test_watch_reads_it_after_the_grace_time_and_never_twice(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"one\ntw")
    follower = FileFollower(str(path), partial_line_grace=0.5)
    assert datas(follower.poll()) == [b"one"]
    assert datas(follower.poll()) == []             # not still long enough
    time.sleep(0.6)
    assert datas(follower.poll()) == [b"tw"]
    assert datas(follower.poll()) == []
    with open(path, "ab") as handle:                # the writer completes it after all
        handle.write(b"o\nthree\n")
    assert datas(follower.poll()) == [b"three"]
    notes = [n.message for n in follower.take_notices()]
    assert any("its rest, written later, was not read again" in n for n in notes)


def test_watch_waits_the_default_grace_for_a_fresh_file_and_reads_an_old_one(tmp_path):
    fresh = tmp_path / "fresh.jsonl"
    fresh.write_bytes(b"one\ntwo")
    assert datas(FileFollower(str(fresh)).poll()) == [b"one"]
    old = tmp_path / "old.jsonl"
    old.write_bytes(b"one\ntwo")
    age(old, 60)                                    # has stood still for a minute
    assert datas(FileFollower(str(old)).poll()) == [b"one", b"two"]


def test_a_line_growing_in_pieces_is_not_read_early(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"a")
    follower = FileFollower(str(path), partial_line_grace=0.4)
    for piece in (b"b", b"c", b"d"):
        time.sleep(0.25)
        with open(path, "ab") as handle:
            handle.write(piece)
        assert datas(follower.poll()) == []
    with open(path, "ab") as handle:
        handle.write(b"\n")
    assert datas(follower.poll()) == [b"abcd"]


def restarted(follower: FileFollower, path: Path, **options) -> FileFollower:
    saved = json.loads(json.dumps(follower.state().as_json()))     # as a checkpoint holds it
    follower.close()
    return FileFollower(str(path), resume=FollowerState.from_json(saved), **options)


def test_restart_with_a_pending_partial_line_reads_it_once(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"one\ntw")
    first = FileFollower(str(path), partial_line_grace=30)
    assert datas(first.poll()) == [b"one"]          # "tw" pending, not read
    second = restarted(first, path, partial_line_grace=30)
    with open(path, "ab") as handle:
        handle.write(b"o\n")
    assert datas(second.poll()) == [b"two"]
    assert datas(second.poll()) == []


def test_restart_after_the_partial_line_was_read_skips_its_rest(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"one\ntw")
    first = FileFollower(str(path), partial_line_grace=0.2)
    first.poll()
    time.sleep(0.3)
    assert datas(first.poll()) == [b"tw"]
    assert first.state().as_json()["mid"] is True
    second = restarted(first, path, partial_line_grace=0.2)
    with open(path, "ab") as handle:
        handle.write(b"o\nthree\n")
    assert datas(second.poll()) == [b"three"]


def test_a_checkpoint_without_mid_still_loads():
    state = FollowerState.from_json({"dev": 1, "ino": 2, "offset": 3, "fp": "x"})
    assert state.mid_line is False and "mid" not in state.as_json()


def test_a_suspended_follower_reads_the_partial_line_when_its_grace_is_over(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"one\ntw")
    follower = FileFollower(str(path), partial_line_grace=0.5)
    assert datas(follower.poll()) == [b"one"]
    assert follower.suspend()
    assert not follower.changed()
    time.sleep(0.6)
    assert follower.changed()                       # its partial line is due
    assert datas(follower.poll()) == [b"tw"]
    assert follower.suspend()                       # mid-line is kept while suspended
    assert not follower.changed()
    with open(path, "ab") as handle:
        handle.write(b"o\nthree\n")
    assert follower.changed()
    assert datas(follower.poll()) == [b"three"]


# --------------------------------------------------------------- transcripts, log

def test_transcripts_and_the_log_read_it(tmp_path):
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    transcript = sessions / f"{SID}.jsonl"
    transcript.write_bytes(dumps(session_header(SID)).encode() + b"\n" + call("c1"))
    age(transcript, 60)
    source = LegacySessionsSource(str(sessions), "main")
    assert [e.call_id for e in source.poll() if isinstance(e, ToolCall)] == ["c1"]
    log = tmp_path / "openclaw.log"
    log.write_bytes(b"2026-07-12T21:12:28.674+02:00 [gateway] one\n"
                    b"2026-07-12T21:12:28.675+02:00 [gateway] two")
    gateway = GatewayLogSource(str(log))
    gateway.follower.partial_line_grace = 0.3
    assert [e.message for e in gateway.poll() if isinstance(e, GatewayNotice)] == ["one"]
    time.sleep(0.4)
    events = gateway.poll()
    assert [e.message for e in events if isinstance(e, GatewayNotice)] == ["two"]
    assert [e for e in events if isinstance(e, SourceError)] == []


# ------------------------------------------------------------------------ the CLI

def clean_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENCLAW_", "CLAWWATCH_")) or k == "CLAWWATCH_LOG_DIRS"}
    env.update(HOME=str(tmp_path), TMPDIR=str(tmp_path), XDG_STATE_HOME=str(tmp_path / "xdg"),
               XDG_CONFIG_HOME=str(tmp_path / "cfg"))
    return env


def state_dir(tmp_path: Path, body: bytes) -> tuple[Path, Path]:
    sessions = tmp_path / "state" / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / "sessions.json").write_text(json.dumps({KEY: {"sessionId": SID}}))
    transcript = sessions / f"{SID}.jsonl"
    transcript.write_bytes(dumps(session_header(SID)).encode() + b"\n" + body)
    return tmp_path / "state", transcript


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "monitor", *args], capture_output=True,
                          text=True, timeout=60, cwd=str(tmp_path), env=clean_env(tmp_path))


def calls_of(stdout: str) -> list[str]:
    return [r["call_id"] for r in map(json.loads, stdout.splitlines())
            if r["type"] == "tool_call"]


def test_replay_cli_counts_the_unterminated_last_call(tmp_path):
    state, _ = state_dir(tmp_path, call("c1") + b"\n" + call("c2"))
    result = run(tmp_path, "replay", "--json", "--state-dir", str(state))
    assert result.returncode == 0, result.stderr
    [session] = json.loads(result.stdout)["sessions"]
    assert session["tool_calls"] == 2


def test_watch_cli_reads_it_after_the_grace_time_once_and_not_again_when_completed(tmp_path):
    state, transcript = state_dir(tmp_path, call("c1") + b"\n" + call("c2")[:-5])
    checkpoint = tmp_path / "checkpoint.json"
    watch = ("watch", "--headless", "--json", "--state-dir", str(state), "--checkpoint",
             str(checkpoint), "--poll", "0.2")
    first = run(tmp_path, *watch, "--from-start", "--seconds", "4")
    assert first.returncode == 0, first.stderr
    assert calls_of(first.stdout) == ["c1"]         # c2's line is cut: an error, once
    errors = [r for r in map(json.loads, first.stdout.splitlines()) if r["type"] == "error"]
    assert len(errors) == 1 and "invalid JSON" in errors[0]["message"]
    with open(transcript, "ab") as handle:          # completed later, then one more call
        handle.write(call("c2")[-5:] + b"\n" + call("c3") + b"\n")
    second = run(tmp_path, *watch, "--seconds", "2")
    assert second.returncode == 0, second.stderr
    assert calls_of(second.stdout) == ["c3"]
    assert not [r for r in map(json.loads, second.stdout.splitlines()) if r["type"] == "error"]


def test_watch_cli_restarts_read_each_line_exactly_once(tmp_path):
    """A restart while a partial line is pending reads it once when completed; a complete
    record left without its newline is read after the grace time; a restart after that does
    not read it again when the newline (and more) follows."""
    state, transcript = state_dir(tmp_path, call("c1") + b"\n" + call("c2")[:-5])
    age(transcript, -30)        # only the 2 s of stillness the watch sees itself count
    checkpoint = tmp_path / "checkpoint.json"
    watch = ("watch", "--headless", "--json", "--state-dir", str(state), "--checkpoint",
             str(checkpoint), "--poll", "0.2")
    first = run(tmp_path, *watch, "--from-start", "--seconds", "0.3")
    assert first.returncode == 0, first.stderr
    assert calls_of(first.stdout) == ["c1"]         # stopped with c2 pending
    with open(transcript, "ab") as handle:
        handle.write(call("c2")[-5:] + b"\n" + call("c3"))     # c3: no newline, ever?
    second = run(tmp_path, *watch, "--seconds", "4")
    assert second.returncode == 0, second.stderr
    with open(transcript, "ab") as handle:
        handle.write(b"\n" + call("c4") + b"\n")              # the newline came after all
    third = run(tmp_path, *watch, "--seconds", "1.5")
    assert third.returncode == 0, third.stderr
    runs = [calls_of(r.stdout) for r in (first, second, third)]
    assert runs == [["c1"], ["c2", "c3"], ["c4"]], runs
    for result in (first, second, third):
        assert not [r for r in map(json.loads, result.stdout.splitlines())
                    if r["type"] == "error"], result.stdout

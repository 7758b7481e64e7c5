"""Names no file can have, and names that are not UTF-8, never stop a reader.

A name in an index is text a JSON file chose: ``"bad\\ud800.jsonl"`` decodes to a lone
surrogate, which no file system encoding takes, and ``"a\\u0000b"`` holds a NUL; handed
to ``os.stat`` or ``open`` either raises a ``ValueError``, not the ``OSError`` a missing
file gives. A name on disk is bytes: one that is not UTF-8 reaches Python with surrogates
standing for its bytes (``os.fsdecode``), which must reach the file system, a digest and
the output as those bytes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_source_codex import LOOP, of, read_all

from monitor.act.exec_calls import recent_exec_calls
from monitor.events import SourceError, UserMessage
from monitor.sources.checkpoint import default_checkpoint_path

REPO = Path(__file__).resolve().parent.parent
SID = "11111111-2222-3333-4444-555555555555"
NOW_MS = int(time.time() * 1000)


def exec_entries(call_id: str, command: str) -> str:
    call = {"type": "message", "timestamp": "2026-12-07T01:00:00.000Z", "message": {
        "role": "assistant", "content": [{"type": "toolCall", "id": call_id, "name": "exec",
                                          "arguments": {"command": command}}]}}
    return json.dumps({"type": "session", "version": 3, "id": SID}) + "\n" \
        + json.dumps(call) + "\n"


def legacy_state(root: Path, index_text: str) -> Path:
    """A legacy state dir: one good transcript (an exec call), and ``index_text`` as its
    ``sessions.json`` (raw, so it may hold any JSON escape)."""
    sessions = root / "state" / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / f"{SID}.jsonl").write_text(exec_entries("call-good", "sleep 600"))
    (sessions / "sessions.json").write_text(index_text)
    return root / "state"


def run_cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = dict(os.environ, HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"),
               XDG_STATE_HOME=str(home / ".state"), XDG_CACHE_HOME=str(home / ".cache"))
    return subprocess.run([sys.executable, "-m", "monitor", *args], capture_output=True,
                          text=True, timeout=60, cwd=str(REPO), env=env)


GOOD_ENTRY = f'"agent:main:main":{{"sessionId":"{SID}","updatedAt":{NOW_MS}}}'


@pytest.mark.parametrize("session_file", ["bad\\ud800.jsonl", "/tmp/x\\udfff/y.jsonl",
                                          "a\\u0000b.jsonl"])
def test_a_session_file_no_file_can_have_stops_neither_replay_nor_watch(tmp_path,
                                                                         session_file):
    state = legacy_state(tmp_path, "{" + GOOD_ENTRY + ',"agent:main:bad":{"sessionId":"bad1",'
                         f'"sessionFile":"{session_file}","updatedAt":{NOW_MS}}}}}')
    (tmp_path / "empty.log").write_text("")
    replayed = run_cli(tmp_path, "replay", "--json", "--no-cache", "--source", "openclaw",
                       "--state-dir", str(state), "--log", str(tmp_path / "empty.log"))
    assert replayed.returncode == 0 and "Traceback" not in replayed.stderr, \
        replayed.stderr[-2000:]
    sessions = {s["key"]: s for s in json.loads(replayed.stdout)["sessions"]}
    assert sessions["agent:main:main"]["tool_calls"] == 1
    watched = run_cli(tmp_path, "watch", "--headless", "--seconds", "1", "--source",
                      "openclaw", "--state-dir", str(state), "--log",
                      str(tmp_path / "empty.log"))
    assert watched.returncode == 0, watched.stderr[-2000:]
    assert "Traceback" not in watched.stdout + watched.stderr


def test_kill_evidence_takes_only_session_ids_that_are_plain_file_names(tmp_path):
    """An index entry's ``sessionId`` names ``<id>.jsonl`` beside the index: one with a NUL
    or a lone surrogate names no file, and one with a separator would name another
    session's transcript, whose exec calls would then be taken for this session's."""
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "victim.jsonl").write_text(exec_entries("call-victim", "sleep 700"))
    entries = [GOOD_ENTRY] + [
        f'"agent:main:{n}":{{"sessionId":"{sid}","updatedAt":{NOW_MS}}}'
        for n, sid in enumerate(["a\\u0000b", "x\\ud800", "../../../elsewhere/victim"])]
    state = legacy_state(tmp_path, "{" + ",".join(entries) + "}")
    calls = {(c.session_key, c.call_id) for c in recent_exec_calls(str(state))}
    assert calls == {("agent:main:main", "call-good")}


def test_watch_keeps_its_checkpoint_for_a_state_dir_whose_path_is_not_utf8(tmp_path):
    home = os.fsdecode(os.fsencode(tmp_path) + b"/j\xf6rg")
    try:
        os.makedirs(home)
    except OSError as exc:          # a file system that takes UTF-8 names only
        pytest.skip(f"no such name here: {exc}")
    state = legacy_state(Path(home), "{" + GOOD_ENTRY + "}")
    path = default_checkpoint_path(str(state), None, env={"XDG_STATE_HOME": str(tmp_path)})
    assert path != default_checkpoint_path(
        os.fsdecode(os.fsencode(str(state)).replace(b"\xf6", b"\xf7")), None,
        env={"XDG_STATE_HOME": str(tmp_path)})
    for _ in range(2):              # the second run starts from the checkpoint the first saved
        watched = run_cli(tmp_path, "watch", "--headless", "--seconds", "1", "--source",
                          "openclaw", "--state-dir", str(state), "--log",
                          str(tmp_path / "none.log"))
        assert watched.returncode == 0, watched.stderr[-2000:]
        assert "Traceback" not in watched.stdout + watched.stderr
    checkpoints = list((tmp_path / "home" / ".state" / "clawwatch" / "checkpoints").glob("*.json"))
    assert len(checkpoints) == 1


def test_a_codex_prompt_holding_a_lone_surrogate_is_read(tmp_path):
    """A prompt's text is digested to give it once; ``"\\ud83d"`` (valid JSON) made the line
    an unreadable entry, and the prompt and the run it starts were lost."""
    day = tmp_path / "sessions" / "2026" / "12" / "01"
    day.mkdir(parents=True)
    ts = '"timestamp":"2026-12-01T03:48:22.000Z"'
    (day / f"rollout-2026-12-01T03-48-22-{LOOP}.jsonl").write_text("\n".join([
        f'{{{ts},"type":"session_meta","payload":{{"id":"{LOOP}","cwd":"/w",'
        '"cli_version":"0.130.0","model_provider":"openai","source":"exec"}}',
        f'{{{ts},"type":"event_msg","payload":{{"type":"user_message",'
        '"message":"fix the \\ud83d bug"}}',
        f'{{{ts},"type":"event_msg","payload":{{"type":"item_completed","item":{{'
        '"type":"UserMessage","content":[{"text":"again \\udfff"}]}}}']) + "\n")
    _, events = read_all(tmp_path / "sessions")
    assert not of(events, SourceError)
    assert len(of(events, UserMessage, LOOP)) == 2

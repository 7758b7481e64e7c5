"""``watch --headless`` whose output goes away: standard output closed from the start
(``>&-``), or its terminal closed while it runs. Neither ends in a traceback: a closed
standard output is written nowhere (as ``print`` writes nothing), and a terminal closed under
it ends the watch as a reader gone from a pipe does. The batch a gone reader did not get is
reported again after a restart."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

from chaos_writer import assistant_tool_call, dumps
from small_state import SID, make_state

REPO = Path(__file__).resolve().parent.parent


def clean_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENCLAW_", "CLAWWATCH_"))}
    env.update(CLAWWATCH_LOG_DIRS="/nonexistent-cw", HOME=str(tmp_path),
               XDG_STATE_HOME=str(tmp_path / "xdg"), PYTHONPATH=str(REPO))
    return env


def watch_argv(state: Path, log: Path, checkpoint: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "monitor", "--source", "openclaw", "--state-dir", str(state),
            "--log", str(log), "watch", "--headless", "--checkpoint", str(checkpoint), *extra]


def test_a_watch_with_standard_output_closed_runs_and_saves_its_checkpoint(tmp_path):
    state, log = make_state(tmp_path)
    checkpoint = tmp_path / "cp.json"
    result = subprocess.run(
        ["sh", "-c", 'exec "$@" >&-', "sh",
         *watch_argv(state, log, checkpoint, "--json", "--seconds", "1")],
        stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=60,
        env=clean_env(tmp_path), cwd=str(tmp_path))
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 0, result.stderr
    assert json.loads(checkpoint.read_text())["version"] == 1


def test_a_watch_whose_terminal_is_closed_ends_cleanly(tmp_path):
    """A watch left on a terminal that was closed (started in the background and disowned:
    no SIGHUP reaches it) gets EIO at its next write."""
    state, log = make_state(tmp_path)
    checkpoint = tmp_path / "cp.json"
    master, terminal = pty.openpty()
    with (tmp_path / "stderr.txt").open("w+") as stderr:
        proc = subprocess.Popen(watch_argv(state, log, checkpoint, "--poll", "0.2"),
                                stdin=subprocess.DEVNULL, stdout=terminal, stderr=stderr,
                                start_new_session=True, env=clean_env(tmp_path),
                                cwd=str(tmp_path))
        os.close(terminal)
        try:
            seen = b""
            deadline = time.monotonic() + 30
            while b"agent:sq:main" not in seen:     # it is writing to its terminal
                assert time.monotonic() < deadline, seen
                ready, _, _ = select.select([master], [], [], 1.0)
                if ready:
                    seen += os.read(master, 65536)
            os.close(master)
            master = None
            transcript = state / "agents" / "main" / "sessions" / f"{SID}.jsonl"
            with transcript.open("a") as handle:    # something more to write
                handle.write(dumps(assistant_tool_call("after", 9)) + "\n")
            proc.wait(timeout=30)
        finally:
            if master is not None:
                os.close(master)
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        stderr.seek(0)
        said = stderr.read()
    assert "Traceback" not in said and "Exception" not in said, said
    assert proc.returncode == 0, said


def test_the_batch_a_gone_reader_did_not_get_is_reported_after_a_restart(tmp_path):
    """``watch --json | forwarder``: the forwarder ends, the watch's next write fails and it
    ends too. It saved its checkpoint past the batch it could not write, and a restart
    never reported those calls."""
    state, log = make_state(tmp_path)
    checkpoint = tmp_path / "cp.json"
    argv = watch_argv(state, log, checkpoint, "--json", "--poll", "0.2")
    read_end, write_end = os.pipe()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=write_end,
                            stderr=subprocess.PIPE, text=True, env=clean_env(tmp_path),
                            cwd=str(tmp_path))
    os.close(write_end)
    transcript = state / "agents" / "main" / "sessions" / f"{SID}.jsonl"
    try:
        with os.fdopen(read_end) as reader:
            while "caught up" not in proc.stderr.readline():
                assert proc.poll() is None, proc.stderr.read()
            with transcript.open("a") as handle:
                handle.write(dumps(assistant_tool_call("read", 9)) + "\n")
            while '"read"' not in reader.readline():
                assert proc.poll() is None, proc.stderr.read()
        with transcript.open("a") as handle:       # the reader is gone
            handle.write(dumps(assistant_tool_call("unread", 10)) + "\n")
        assert proc.wait(timeout=30) == 0, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    again = subprocess.run([*argv, "--seconds", "1"], stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=60, env=clean_env(tmp_path),
                           cwd=str(tmp_path))
    assert again.returncode == 0, again.stderr
    calls = [r["call_id"] for r in map(json.loads, again.stdout.splitlines())
             if r["type"] == "tool_call"]
    assert calls == ["unread"]

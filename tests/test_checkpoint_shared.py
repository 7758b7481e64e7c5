"""Two ``watch`` processes on one checkpoint: the one that has it keeps it.

A checkpoint is what its watch reported. A second watch of the same state dir (a service and
a watch run by hand take the same default path) that saved into it too would overwrite the
first's positions with its own, and the first, restarted from them, would never report what
only the second read. The second says so, and runs without the checkpoint.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path

from chaos_writer import assistant_tool_call, dumps
from small_state import SID, make_state

from monitor.sources.checkpoint import (
    CheckpointInUse,
    CheckpointPathError,
    CheckpointStore,
)

REPO = Path(__file__).resolve().parent.parent
IN_USE = "is in use by another clawwatch watch; this one neither reads nor writes it"


class Watch:
    """A real ``watch --headless --json`` whose stdout and stderr lines are read as they
    come."""

    def __init__(self, state: Path, log: Path, checkpoint: Path) -> None:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("OPENCLAW_", "CLAWWATCH_"))}
        env["CLAWWATCH_LOG_DIRS"] = "/nonexistent-cw"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "monitor", "--state-dir", str(state), "--log", str(log),
             "watch", "--headless", "--json", "--poll", "0.2", "--checkpoint",
             str(checkpoint)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(REPO), env=env)
        self.lines: queue.Queue[tuple[str, str | None]] = queue.Queue()
        self.seen: list[tuple[str, str]] = []
        for name in ("stdout", "stderr"):
            threading.Thread(target=self._pump, args=(name,), daemon=True).start()

    def _pump(self, name: str) -> None:
        for line in getattr(self.proc, name):
            self.lines.put((name, line))
        self.lines.put((name, None))

    def wait_for(self, wanted) -> None:
        """Until a line ``wanted(stream, line)`` is true (20 s at most)."""
        while True:
            try:
                name, line = self.lines.get(timeout=20)
            except queue.Empty:
                raise AssertionError(f"not seen in 20 s: {self.seen}") from None
            assert line is not None, f"{name} ended before it was seen: {self.seen}"
            self.seen.append((name, line))
            if wanted(name, line):
                return

    def stop(self) -> list[tuple[str, str]]:
        """SIGTERM, and every line it wrote."""
        self.proc.send_signal(signal.SIGTERM)
        assert self.proc.wait(timeout=10) == 0
        ended = 0
        while ended < 2:
            name, line = self.lines.get(timeout=10)
            if line is None:
                ended += 1
            else:
                self.seen.append((name, line))
        return self.seen

    def calls(self) -> list[str]:
        records = [json.loads(line) for name, line in self.seen if name == "stdout"]
        return [r["call_id"] for r in records if r.get("type") == "tool_call"]


def caught_up(name: str, line: str) -> bool:
    return name == "stderr" and "caught up" in line


def test_a_watch_restarted_reports_what_a_second_watch_on_its_checkpoint_read(tmp_path):
    state, log = make_state(tmp_path)
    checkpoint = tmp_path / "cp.json"
    first = Watch(state, log, checkpoint)
    second = None
    try:
        first.wait_for(caught_up)
        second = Watch(state, log, checkpoint)
        second.wait_for(caught_up)
        first.stop()
        transcript = state / "agents" / "main" / "sessions" / f"{SID}.jsonl"
        with transcript.open("a") as handle:
            handle.write(dumps(assistant_tool_call("late1", 10)) + "\n")
            handle.write(dumps(assistant_tool_call("late2", 11)) + "\n")
        second.wait_for(lambda name, line: name == "stdout" and '"late2"' in line)
        second.stop()
        restarted = Watch(state, log, checkpoint)
        try:
            restarted.wait_for(lambda name, line: name == "stdout" and '"late2"' in line)
            restarted.stop()
            assert restarted.calls() == ["late1", "late2"]
            assert not any(IN_USE in line for name, line in restarted.seen)
            assert any(IN_USE in line for name, line in second.seen if name == "stderr")
        finally:
            if restarted.proc.poll() is None:
                restarted.proc.kill()
    finally:
        for watch in (first, second):
            if watch is not None and watch.proc.poll() is None:
                watch.proc.kill()


def test_the_checkpoint_is_free_again_once_its_holder_lets_go(tmp_path):
    path = str(tmp_path / "cp.json")
    holder, other = CheckpointStore(path), CheckpointStore(path)
    holder.claim()
    try:
        try:
            other.claim()
        except CheckpointInUse as exc:
            assert str(exc) == f"checkpoint {path} is in use by another clawwatch watch"
        else:
            raise AssertionError("claimed twice")
    finally:
        holder.release()
    other.claim()
    other.release()


def test_a_lock_file_that_is_not_a_regular_file_is_a_path_error(tmp_path):
    path = tmp_path / "cp.json"
    os.mkfifo(str(path) + ".lock")
    try:
        CheckpointStore(str(path)).claim()
    except CheckpointPathError as exc:
        assert "cannot lock" in str(exc) and "a FIFO" in str(exc)
    else:
        raise AssertionError("a FIFO was taken as a lock file")

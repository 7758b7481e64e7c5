"""A ``watch`` reading a large legacy ``sessions.json`` still ends within 2 s of SIGTERM: the
index is decoded, folded and written in steps, between which the stop is seen."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
#: Enough sessions that reading, folding and writing them in one step takes seconds.
SESSIONS = 200_000
STOP_SECONDS = 2.0


def write_index(state: Path, count: int) -> None:
    sessions = state / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    entries = ",".join(
        json.dumps(f"agent:main:s{n}") + ":" + json.dumps(
            {"sessionId": str(uuid.uuid4()), "updatedAt": 1_700_000_000_000 + n,
             "label": f"session {n}"})
        for n in range(count))
    (sessions / "sessions.json").write_text("{" + entries + "}")


def catches_sigterm(pid: int) -> bool:
    """Whether the process has its own SIGTERM handler installed (``SigCgt``)."""
    status = Path(f"/proc/{pid}/status").read_text()
    caught = int(next(line.split()[1] for line in status.splitlines()
                      if line.startswith("SigCgt:")), 16)
    return bool(caught & 1 << (signal.SIGTERM - 1))


def wait_for(predicate, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_a_watch_reading_a_large_index_ends_within_2_s_of_sigterm(tmp_path):
    state = tmp_path / "state"
    write_index(state, SESSIONS)
    watch = subprocess.Popen(
        [sys.executable, "-m", "monitor", "watch", "--headless", "--no-checkpoint",
         "--state-dir", str(state)],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        start_new_session=True)
    try:
        wait_for(lambda: watch.poll() is not None or catches_sigterm(watch.pid), 60)
        assert watch.poll() is None, watch.stderr.read()
        watch.send_signal(signal.SIGTERM)
        sent = time.monotonic()
        code = watch.wait(timeout=60)
        took = time.monotonic() - sent
    finally:
        if watch.poll() is None:
            watch.kill()
            watch.wait()
    assert code == 0, watch.stderr.read()
    assert took < STOP_SECONDS, f"ended {took:.1f} s after SIGTERM"

"""A test run ended by SIGTERM, or by SIGHUP (its terminal closed), still tears its fixtures
down (``teardown_on_sigterm``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

TESTS = Path(__file__).parent

A_RUN_THAT_WAITS = '''
import subprocess, time
import pytest

@pytest.fixture
def child(tmp_path_factory):
    proc = subprocess.Popen(["sleep", "300"])
    with open({log!r}, "a") as log:
        log.write(f"up {{proc.pid}}\\n")
    yield proc
    with open({log!r}, "a") as log:
        log.write("tearing down\\n")
    time.sleep({teardown_seconds})
    proc.kill()
    proc.wait()
    with open({log!r}, "a") as log:
        log.write("torn down\\n")

def test_waits(child):
    while True:
        time.sleep(1)
'''


def wait_for(predicate, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_run_ended_by_sigterm_tears_its_fixtures_down(tmp_path, signum):
    log = tmp_path / "log"
    (tmp_path / "test_waiting.py").write_text(A_RUN_THAT_WAITS.format(log=str(log),
                                                                      teardown_seconds=0))
    run = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "teardown_on_sigterm", "-p",
         "no:cacheprovider", "-c", os.devnull, "--rootdir", str(tmp_path),
         str(tmp_path / "test_waiting.py")],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(TESTS)},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: log.exists() and "up" in log.read_text(), 60)
        child_pid = int(log.read_text().split()[1])
        run.send_signal(signum)
        run.wait(30)
    finally:
        run.kill()
    assert log.read_text().splitlines()[-1] == "torn down"
    assert not psutil.pid_exists(child_pid) or \
        psutil.Process(child_pid).status() == psutil.STATUS_ZOMBIE


def test_a_second_signal_does_not_cut_the_teardown_short(tmp_path):
    """A teardown takes time (a gateway drains its exec sessions); a second SIGTERM then (a
    supervisor repeating it, a closed terminal's SIGHUP after it) must not cut it short."""
    log = tmp_path / "log"
    (tmp_path / "test_waiting.py").write_text(A_RUN_THAT_WAITS.format(log=str(log),
                                                                      teardown_seconds=1))
    run = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "teardown_on_sigterm", "-p",
         "no:cacheprovider", "-c", os.devnull, "--rootdir", str(tmp_path),
         str(tmp_path / "test_waiting.py")],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(TESTS)},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: log.exists() and "up" in log.read_text(), 60)
        child_pid = int(log.read_text().split()[1])
        run.send_signal(signal.SIGTERM)
        wait_for(lambda: "tearing down" in log.read_text(), 30)
        run.send_signal(signal.SIGTERM)
        run.send_signal(signal.SIGHUP)
        run.wait(30)
    finally:
        run.kill()
    assert log.read_text().splitlines()[-1] == "torn down"
    assert not psutil.pid_exists(child_pid) or \
        psutil.Process(child_pid).status() == psutil.STATUS_ZOMBIE

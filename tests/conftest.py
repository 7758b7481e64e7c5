"""Fixtures shared by the process-control tests (tests/test_act_processes.py,
tests/test_kill_conflicts.py): fake gateway trees of real processes, and a look-alike shell
outside any tree."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import psutil
import pytest
from test_act_processes import FakeGatewayTree


@pytest.fixture
def tree_factory(tmp_path):
    trees = []

    def make(*commands: str) -> FakeGatewayTree:
        tree = FakeGatewayTree(list(commands), str(tmp_path / "state"))
        trees.append(tree)
        return tree

    yield make
    for tree in trees:
        tree.close()


@pytest.fixture
def lookalike():
    """An exec-marked shell running ``sleep`` in its own group, outside any gateway tree."""
    proc = subprocess.Popen(["/bin/bash", "--noprofile", "--norc", "-c", "sleep 302; true"],
                            start_new_session=True, env={**os.environ, "OPENCLAW_SHELL": "exec"})
    deadline = time.monotonic() + 10
    while not psutil.Process(proc.pid).children():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    yield psutil.Process(proc.pid)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(5)

"""The replay's shards are read by forked workers and by the main process together."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import psutil
import pytest

from monitor.replay_shards import SHARDS_PER_JOB, _share, plan_shards

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("jobs", [2, 3])
def test_shards_shrink_so_every_job_ends_on_a_small_one(jobs):
    """Shard ``i`` of ``n`` holds ``n - i`` parts of the weight (within a few sessions'),
    the largest session is in the first, and every session lands in exactly one shard."""
    weights = {f"s{n:04}": 10 for n in range(2000)} | {"big": 3000}
    shards = plan_shards(weights, jobs)
    count = jobs * SHARDS_PER_JOB
    assert len(shards) == count
    assert sorted(sid for shard in shards for sid in shard) == sorted(weights)
    assert "big" in shards[0]
    loads = [sum(weights[sid] for sid in shard) for shard in shards[1:]]   # the first: big
    part = sum(loads) / sum(count - at for at in range(1, count))
    for at, load in enumerate(loads, start=1):
        assert abs(load - (count - at) * part) <= 10


def where_and_what(task: int) -> tuple[int, int]:
    """Which process ran ``task``, and its result."""
    if task == 3 and os.environ.get("SHARE_TEST_FAIL") == "1":
        raise ValueError("task 3 failed")
    return os.getpid(), task * task


def fork_pool(workers: int) -> ProcessPoolExecutor:
    return ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"))


@pytest.mark.parametrize("helpers", [1, 2])
def test_every_task_runs_once_in_order_here_and_in_the_workers(helpers):
    tasks = list(range(12))
    with fork_pool(helpers) as pool:
        results = _share(pool, helpers, tasks, where_and_what)
    assert [value for _, value in results] == [t * t for t in tasks]
    pids = {pid for pid, _ in results}
    # The first task goes to a worker; this process takes the next one at once.
    assert os.getpid() in pids
    assert len(pids) >= 2


def test_a_task_that_fails_ends_the_share_with_its_error(monkeypatch):
    monkeypatch.setenv("SHARE_TEST_FAIL", "1")
    with fork_pool(1) as pool, pytest.raises(ValueError, match="task 3 failed"):
        _share(pool, 1, list(range(8)), where_and_what)


def test_a_closed_pool_leaves_every_task_to_this_process():
    pool = fork_pool(1)
    pool.shutdown()
    results = _share(pool, 1, list(range(5)), where_and_what)
    assert results == [(os.getpid(), t * t) for t in range(5)]


WORKER_THAT_NEVER_ENDS = """
import multiprocessing, os, threading
from concurrent.futures import ProcessPoolExecutor
from monitor.lifetime import end_with_parent

def block():
    print(os.getpid(), flush=True)
    threading.Event().wait()

with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork"),
                         initializer=end_with_parent, initargs=(os.getpid(),)) as pool:
    pool.submit(block)
    threading.Event().wait()
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG")
def test_a_worker_ends_within_2s_of_its_replay_being_terminated():
    main = subprocess.Popen([sys.executable, "-c", WORKER_THAT_NEVER_ENDS], cwd=REPO,
                            stdout=subprocess.PIPE, text=True)
    worker = psutil.Process(int(main.stdout.readline()))
    try:
        main.send_signal(signal.SIGTERM)
        assert main.wait(timeout=5) == -signal.SIGTERM
        worker.wait(timeout=2)
    finally:
        for process in (main, worker):
            try:
                process.kill()
            except (OSError, psutil.Error):
                pass
        main.wait()

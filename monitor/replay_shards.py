"""How a replay reads its transcripts on every core: the sessions planned into shards
balanced by size, each shard read by the same ``Monitor`` the live commands use, in a forked
worker process or in this process, which is one of the jobs.

A shard reads the session index first, then its sessions' transcripts only, so each
session's state is exactly what one process makes of it. It lets go of the detector state
of each session whose transcripts it has read to the end, and pickles that of the other
sessions it is not reading (``DetectionEngine.freeze_idle``), which thaws exactly when it
gets another event. What it read comes back as a ``ShardResult`` for ``monitor.replay`` to
merge.

Two things keep one shard: a per-agent or nightly token budget (it adds up tokens across
sessions, in reading order), and a dir too small to be worth a process.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import threading
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from monitor.detect.outcome_keys import REPLAY_BUDGET_BYTES
from monitor.heap import give_back_free_memory, relax_collector, restore_collector
from monitor.lifetime import end_with_parent
from monitor.pipeline import Monitor
from monitor.replay_errors import uncounted_shared_errors
from monitor.replay_tally import UnitTally
from monitor.session_state import SessionState
from monitor.sources.sourceset import SourceSet, source_id

if TYPE_CHECKING:
    from monitor.replay import ReplayInput

#: Transcript bytes that make one shard worth a worker process (fork, index, merge).
BYTES_PER_JOB = 8 << 20
#: Shards per job: more, smaller shards even out sessions of very different sizes.
SHARDS_PER_JOB = 4
#: What one poll of a shard's transcript source reads. A poll's events are all alive at
#: once until they are folded, so this bounds a worker's memory: with the live default
#: (32 MiB) each worker held some 80 MB more at its peak, and with 4 MiB the two processes
#: of a replay of 10,003 sessions 12-14 MB more, for no gain in speed.
SHARD_POLL_BYTES = 1 << 20
#: Runs remembered while replaying: all of them (the log is read after every transcript).
REPLAY_RUNS_KEPT = 1 << 62


@dataclass
class ShardResult:
    """What one shard read: the sessions its transcripts touched, every run it placed, and
    each transcript source's counts (by ``source_id``)."""

    sessions: list[SessionState] = field(default_factory=list)
    runs: list[tuple[str, str]] = field(default_factory=list)
    summaries: dict[str, dict] = field(default_factory=dict)
    internal_errors: int = 0
    internal_error_samples: list[dict] = field(default_factory=list)
    #: ``session_id -> source_id -> [events, errors, samples]``: what each session's
    #: transcripts gave, for the cache; None when some count could not be placed.
    units: dict[str, dict[str, list]] | None = None
    #: ``source_id -> error samples``: the errors no session owns that its sources raised
    #: and did not count, for the main process to count once (``monitor.replay_errors``);
    #: one the main process did not meet itself keeps the shard's sessions out of the cache
    #: (they may have been read through a failure).
    shared_errors: dict[str, list[dict]] = field(default_factory=dict)


def spans_sessions(config) -> bool:
    """A budget that adds up tokens across sessions is set (for any agent)."""
    if config is None:
        return False
    for each in (config, *(config.for_agent(agent) for agent in config.agents)):
        if each.budgets.agent_tokens is not None or each.budgets.nightly_tokens is not None:
            return True
    return False


def jobs_for(jobs: int, weights: dict[str, int], config) -> int:
    if spans_sessions(config):
        return 1
    return max(1, min(jobs, sum(weights.values()) // BYTES_PER_JOB))


def plan_shards(weights: dict[str, int], jobs: int,
                together: Iterable[set[str]] = ()) -> list[frozenset[str]]:
    """Sessions per shard, the largest first into the shard furthest below its share. Of
    ``n`` shards, shard ``i`` gets ``n - i`` parts: the jobs take the shards in order, so
    each job ends on a small one, and the jobs end close together even where a shard's
    time is not in proportion to its bytes. The sessions of each set of ``together``
    (those of a source whose sessions are read together) share a shard."""
    if jobs <= 1:
        return [frozenset(weights)]
    items: dict[str, list[str]] = {sid: [sid] for sid in weights}
    for number, group in enumerate(together):
        members = sorted(sid for sid in group if sid in items)
        if len(members) > 1:
            for sid in members:
                del items[sid]
            items[f"\0together {number}"] = members
    size = {name: sum(weights[sid] for sid in members) for name, members in items.items()}
    count = jobs * SHARDS_PER_JOB
    loads = [0] * count
    shards: list[list[str]] = [[] for _ in range(count)]
    for name in sorted(items, key=lambda n: (-size[n], n)):
        behind = min(range(count), key=lambda i: (loads[i] / (count - i), i))
        loads[behind] += size[name] + len(items[name])
        shards[behind].extend(items[name])
    return [frozenset(members) for members in shards]


def read_shards(what: ReplayInput, config, engine_factory, shards: list
                ) -> list[ShardResult]:
    """Each shard's result, in order. This process reads shards as one of the jobs, beside
    ``jobs - 1`` forked workers: a process that only waited would hold its own copy of the
    interpreter's pages for nothing."""
    tasks = [(what, config, engine_factory, shard) for shard in shards]
    helpers = len(tasks) // SHARDS_PER_JOB - 1
    if helpers < 1:
        return [read_shard(*task) for task in tasks]
    # The workers are forked: frozen, the parent's objects are not touched by their
    # collections, so the pages holding them stay shared; what the parent freed reading the
    # index goes back first, so no worker starts with it.
    give_back_free_memory()
    gc.freeze()
    try:
        with ProcessPoolExecutor(helpers, mp_context=multiprocessing.get_context("fork"),
                                 initializer=end_with_parent, initargs=(os.getpid(),)) as pool:
            return _share(pool, helpers, tasks, _read_shard_task)
    finally:
        gc.unfreeze()


def _share(pool: ProcessPoolExecutor, helpers: int, tasks: list, work: Callable) -> list:
    """``[work(task) for task in tasks]``, run by the ``helpers`` workers of ``pool`` and by
    this process, each taking the next task left when it is done with one: a worker's next
    task is submitted from its last one's completion, so it never waits for this process to
    finish a shard."""
    results: list = [None] * len(tasks)
    left = deque(range(len(tasks)))
    submitted: list[tuple[int, Future]] = []
    lock = threading.Lock()

    def feed_worker(_done: Future | None = None) -> None:
        with lock:
            if not left:
                return
            at = left.popleft()
            try:
                future = pool.submit(work, tasks[at])
            except RuntimeError:            # the pool broke or closed: this process reads it
                left.appendleft(at)
                return
            submitted.append((at, future))
        future.add_done_callback(feed_worker)

    for _ in range(helpers):
        feed_worker()
    try:
        while True:
            with lock:
                if not left:
                    break
                at = left.popleft()
            results[at] = work(tasks[at])
    except BaseException:
        with lock:                          # the replay ends: no more tasks for the workers
            left.clear()
        raise
    with lock:                              # nothing is submitted once ``left`` is empty
        running = list(submitted)
    for at, future in running:
        results[at] = future.result()
    return results


def _read_shard_task(task: tuple) -> ShardResult:
    return read_shard(*task)


def read_shard(what: ReplayInput, config, engine_factory, sessions: frozenset[str]
               ) -> ShardResult:
    """Read the transcripts of ``sessions`` under ``what``, index first. The
    errors that are no one session's are handed back uncounted, for the main process to
    count once (``monitor.replay_errors``).

    The detector state of a session whose transcripts were all read to the end is dropped
    (``DetectionEngine.freeze_idle``). Should one of them get another event (its
    transcript grew while the replay ran), the shard is read again, freezing such states
    instead of dropping them."""
    result = _read_shard(what, config, engine_factory, sessions, drop_finished=True)
    if result is None:
        result = _read_shard(what, config, engine_factory, sessions, drop_finished=False)
    return result


def _read_shard(what: ReplayInput, config, engine_factory, sessions: frozenset[str],
                drop_finished: bool) -> ShardResult | None:
    """``read_shard``'s reading; None when a session whose state was dropped got another
    event."""
    sources = SourceSet(state_dir=what.state_dir, paths=what.paths,
                        include_archives=what.include_archives, replay=True,
                        transcripts_only=True, only_sessions=sessions,
                        count_shared_errors=False, claude_dirs=what.claude_dirs,
                        codex_dirs=what.codex_dirs)
    collector = relax_collector()
    try:
        monitor = Monitor(sources, engine_factory(config), runs_kept=REPLAY_RUNS_KEPT)
        monitor.quiet = True
        tally = UnitTally(sources.sources)
        engine = monitor.engine
        freeze_idle = getattr(engine, "freeze_idle", None)
        hold_outcome_bodies = getattr(engine, "hold_outcome_bodies", None)
        if hold_outcome_bodies is not None:
            hold_outcome_bodies(REPLAY_BUDGET_BYTES)
        for source in sources.sources:
            if hasattr(source, "poll_budget_bytes"):
                source.poll_budget_bytes = min(source.poll_budget_bytes, SHARD_POLL_BYTES)
            if hasattr(source, "wake_idle_when_caught_up"):
                source.wake_idle_when_caught_up = True
            if drop_finished:       # a transcript read to its end leaves the poll order
                source.max_open_followers = 0
        previous = -1
        while True:
            events = sources.poll()
            tally.add(events)
            monitor.fold(events)
            if freeze_idle is not None:     # the sessions read so far are mostly done
                freeze_idle(sources.unfinished_of if drop_finished else None)
                if getattr(engine, "dropped_woke", False):
                    return None
            total = sum(s.events + s.errors for s in sources.sources)
            if total == previous and not sources.behind:
                break
            previous = total
        summaries = {source_id(s): s.summary() for s in sources.sources}
        return ShardResult(
            sessions=[s for s in monitor.sessions.values() if s.from_transcript],
            runs=list(monitor.run_to_session.items()), summaries=summaries,
            internal_errors=monitor.internal_errors,
            internal_error_samples=monitor.internal_error_samples,
            units=tally.units if tally.agrees(sources.sources) and not monitor.internal_errors
            else None,
            shared_errors=uncounted_shared_errors(sources.sources))
    finally:
        restore_collector(collector)
        sources.close()
        give_back_free_memory()     # the next shard starts from the heap this one had

"""``clawwatch replay``: history read to its end on every core, into one document.

The transcripts are the work. They are split by session (every transcript of a session, in
every source, goes to one shard), the shards balanced by size, and each shard is read in a
worker process by the same ``Monitor`` the live commands use: it folds the session index
first, as one process would, then its sessions' transcripts, so each session's state is
exactly what one process makes of it. The main process then reads the gateway log, whose
lines name the sessions and runs the shards found, and writes the document.

The document does not depend on how many jobs read it: ``--jobs 1`` is the same path with
one shard, in this process; shards are merged by session id, error samples are kept by place
(``sources.base.sample_order``), and runs are joined in sorted order.

Two things fall back to one shard: a per-agent or nightly token budget (it adds up tokens
across sessions, in reading order), and a dir too small to be worth a process.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

from monitor.pipeline import Monitor, SessionState
from monitor.sources.base import ERROR_SAMPLES_KEPT, sample_order
from monitor.sources.sourceset import SourceSet, source_id

#: Transcript bytes that make one shard worth a worker process (fork, index, merge).
BYTES_PER_JOB = 8 << 20
#: Shards per job: more, smaller shards even out sessions of very different sizes.
SHARDS_PER_JOB = 4
#: Runs remembered while replaying: all of them (the log is read after every transcript).
REPLAY_RUNS_KEPT = 1 << 62


@dataclass(frozen=True)
class ReplayInput:
    """What to read: as ``SourceSet`` takes it."""

    state_dir: str | None = None
    log_path: str | None = None
    paths: tuple[str, ...] = ()
    include_archives: bool = False
    log_stream: str | None = None
    claude_dirs: tuple[str, ...] = ()
    codex_dirs: tuple[str, ...] = ()


@dataclass
class ShardResult:
    """What one shard read: the sessions its transcripts touched, every run it placed, and
    each transcript source's counts (by ``source_id``)."""

    sessions: list[SessionState] = field(default_factory=list)
    runs: list[tuple[str, str]] = field(default_factory=list)
    summaries: dict[str, dict] = field(default_factory=dict)
    internal_errors: int = 0


def default_jobs() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def read_to_end(monitor: Monitor) -> None:
    """Step ``monitor`` until its sources have nothing more to give."""
    sources = monitor.sources
    previous = -1
    while True:
        monitor.step()
        total = sum(s.events + s.errors for s in sources.sources)
        if total == previous and not sources.behind:
            return
        previous = total


def spans_sessions(config) -> bool:
    """A budget that adds up tokens across sessions is set (for any agent)."""
    if config is None:
        return False
    for each in (config, *(config.for_agent(agent) for agent in config.agents)):
        if each.budgets.agent_tokens is not None or each.budgets.nightly_tokens is not None:
            return True
    return False


def replay(what: ReplayInput, config, engine_factory, jobs: int, *,
           sources: SourceSet | None = None) -> dict:
    """The replay document of shared/CONTRACT.md for ``what``, read with up to ``jobs``
    worker processes. ``sources`` is ``SourceSet(**what…, replay=True)`` when the caller
    has built it already (to report setup errors itself); it is closed here."""
    if sources is None:
        sources = SourceSet(state_dir=what.state_dir, log_path=what.log_path,
                            paths=what.paths, include_archives=what.include_archives,
                            replay=True, log_stream=what.log_stream,
                            claude_dirs=what.claude_dirs, codex_dirs=what.codex_dirs)
    try:
        return _replay(what, sources, config, engine_factory, jobs)
    finally:
        sources.close()


def _replay(what: ReplayInput, sources: SourceSet, config, engine_factory, jobs: int) -> dict:
    order = [source_id(s) for s in sources.sources]
    transcript_sources = [s for s in sources.sources if s.kind != "gateway-log"]
    monitor = Monitor(sources, engine_factory(config), runs_kept=REPLAY_RUNS_KEPT)
    monitor.quiet = True
    weights: dict[str, int] = {}
    for source in transcript_sources:
        for event in source.read_index():
            monitor.fold([event])
        for sid, weight in source.transcript_weights().items():
            weights[sid] = weights.get(sid, 0) + weight
    shards = _plan(weights, _jobs_for(jobs, weights, config))
    results = list(_read_shards(what, config, engine_factory, shards))
    summaries = _merge(monitor, results)
    sources.keep_only_logs()
    read_to_end(monitor)
    logs = {source_id(s): s.summary() for s in sources.sources}
    document = monitor.report()
    document["sources"] = [logs[sid] if sid in logs else summaries[sid]
                           for sid in order if sid in logs or sid in summaries]
    return document


def _jobs_for(jobs: int, weights: dict[str, int], config) -> int:
    if spans_sessions(config):
        return 1
    return max(1, min(jobs, sum(weights.values()) // BYTES_PER_JOB))


def _plan(weights: dict[str, int], jobs: int) -> list[frozenset[str] | None]:
    """Sessions per shard, the largest first into the lightest shard; one shard of every
    session (None: read whatever is there) for one job."""
    if jobs <= 1:
        return [None]
    count = jobs * SHARDS_PER_JOB
    loads = [0] * count
    members: list[list[str]] = [[] for _ in range(count)]
    for sid in sorted(weights, key=lambda s: (-weights[s], s)):
        lightest = min(range(count), key=lambda i: (loads[i], i))
        loads[lightest] += weights[sid] + 1
        members[lightest].append(sid)
    return [frozenset(m) for m in members]


def _read_shards(what: ReplayInput, config, engine_factory, shards: list
                 ) -> Iterator[ShardResult]:
    tasks = [(what, config, engine_factory, shard, index == 0)
             for index, shard in enumerate(shards)]
    if len(tasks) == 1:
        yield read_shard(*tasks[0])
        return
    jobs = max(1, len(tasks) // SHARDS_PER_JOB)
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork")) as pool:
        yield from pool.map(_read_shard_task, tasks)


def _read_shard_task(task: tuple) -> ShardResult:
    return read_shard(*task)


def read_shard(what: ReplayInput, config, engine_factory, sessions: frozenset[str] | None,
               counts_shared: bool) -> ShardResult:
    """Read the transcripts of ``sessions`` (None: all) under ``what``, index first.
    ``counts_shared``: this shard counts the errors that are no one session's."""
    sources = SourceSet(state_dir=what.state_dir, paths=what.paths,
                        include_archives=what.include_archives, replay=True,
                        transcripts_only=True, only_sessions=sessions,
                        count_shared_errors=counts_shared, claude_dirs=what.claude_dirs,
                        codex_dirs=what.codex_dirs)
    try:
        monitor = Monitor(sources, engine_factory(config), runs_kept=REPLAY_RUNS_KEPT)
        monitor.quiet = True
        read_to_end(monitor)
        return ShardResult(
            sessions=[s for s in monitor.sessions.values() if s.from_transcript],
            runs=list(monitor.run_to_session.items()),
            summaries={source_id(s): s.summary() for s in sources.sources},
            internal_errors=monitor.internal_errors)
    finally:
        sources.close()


def _merge(monitor: Monitor, results: list[ShardResult]) -> dict[str, dict]:
    """Fold the shards' sessions and runs into ``monitor``; the transcript sources'
    summaries summed over the shards."""
    runs: set[tuple[str, str]] = set()
    summaries: dict[str, dict] = {}
    for result in results:
        for state in result.sessions:
            monitor.sessions[state.session_id] = state
        runs.update(result.runs)
        monitor.internal_errors += result.internal_errors
        for sid, summary in result.summaries.items():
            merged = summaries.get(sid)
            if merged is None:
                summaries[sid] = dict(summary, error_samples=list(summary["error_samples"]))
                continue
            merged["events"] += summary["events"]
            merged["errors"] += summary["errors"]
            merged["error_samples"] += summary["error_samples"]
    for summary in summaries.values():
        summary["error_samples"] = sorted(
            summary["error_samples"], key=lambda e: sample_order(e["path"], e["where"])
        )[:ERROR_SAMPLES_KEPT]
    for run_id, session_id in sorted(runs):
        monitor.run_to_session.note(run_id, session_id, replace=False)
    return summaries


"""``clawwatch replay``: history read to its end on every core, into one document.

The transcripts are the work. They are split by session (every transcript of a session, in
every source, goes to one shard) and the shards read on every core (``monitor.replay_shards``),
each folding the session index first, as one process would (from what the main process read,
``sources.reread``, when nothing changed since). This process reads the index, merges what
the shards read, then reads the gateway log, whose lines name the sessions and runs the
shards found, and writes the document.

The document does not depend on how many jobs read it: ``--jobs 1`` is the same path with
one shard, in this process; shards are merged by session id, error samples are kept by place
(``sources.base.sample_order``), the errors no session owns (the index's, a database's) are
counted once, by the main process, whichever shards met them (``monitor.replay_errors``), and
runs are joined in sorted order. Sessions whose fingerprint the replay cache
(``monitor.replay_cache``) still holds are not read at all, and when nothing the document
depends on changed (the log files included), the cache gives the whole document. A session a
shard read beside such an error that only the shards met is not cached, nor a document
holding one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from monitor import replay_cache, replay_errors, replay_shards
from monitor.events import SessionInfo
from monitor.pipeline import Monitor
from monitor.replay_shards import REPLAY_RUNS_KEPT, ShardResult
from monitor.sources.base import ERROR_SAMPLES_KEPT, file_identity, sample_order
from monitor.sources.gateway_log import GatewayLogSource
from monitor.sources.reread import remembered
from monitor.sources.sourceset import SourceSet, source_id

#: What of an index record the cache's fingerprint holds: all of it (plain values).
INDEX_RECORD_FIELDS = SessionInfo.__struct_fields__


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


def replay(what: ReplayInput, config, engine_factory, jobs: int, *,
           sources: SourceSet | None = None, cache: Path | None = None,
           read_cache: bool = True) -> dict:
    """The replay document of shared/CONTRACT.md for ``what``, read with up to ``jobs``
    worker processes. ``sources`` is ``SourceSet(**what…, replay=True)`` when the caller
    has built it already (to report setup errors itself); it is closed here. ``cache``: the
    dir of the replay cache (None: none); with ``read_cache`` False it is written, not read
    (a cold run that leaves a cache)."""
    if sources is None:
        sources = SourceSet(state_dir=what.state_dir, log_path=what.log_path,
                            paths=what.paths, include_archives=what.include_archives,
                            replay=True, log_stream=what.log_stream,
                            claude_dirs=what.claude_dirs, codex_dirs=what.codex_dirs)
    try:
        with remembered():          # the shards read the index and listings of the main read
            return _replay(what, sources, config, engine_factory, jobs, cache, read_cache)
    finally:
        sources.close()


def _replay(what: ReplayInput, sources: SourceSet, config, engine_factory, jobs: int,
            cache: Path | None, read_cache: bool) -> dict:
    order = [source_id(s) for s in sources.sources]
    transcript_sources = [s for s in sources.sources if s.kind != "gateway-log"]
    monitor = Monitor(sources, engine_factory(config), runs_kept=REPLAY_RUNS_KEPT)
    monitor.quiet = True
    units: dict[str, tuple[int, list]] = {}
    together: list[set[str]] = []
    index_records: dict[str, list] = {}
    for source in transcript_sources:       # their errors here: the index's, the database's
        for event in source.read_index():
            if isinstance(event, SessionInfo) and cache is not None:
                index_records.setdefault(event.session_id, []).append(
                    [getattr(event, name) for name in INDEX_RECORD_FIELDS])
            monitor.fold([event])
        source_units = source.transcript_units()
        for sid, (weight, identity) in source_units.items():
            seen_weight, seen = units.get(sid, (0, []))
            units[sid] = (seen_weight + weight, [*seen, [source_id(source), identity]])
        if source.sessions_read_together and source_units:
            together.append(set(source_units))
    summaries = {source_id(s): s.summary() for s in transcript_sources}
    counted = replay_errors.counted_shared_errors(transcript_sources)
    stamp = replay_cache.stamp(cache, config) if cache else None
    cache_file = replay_cache.input_path(cache, _input_identity(what)) if stamp else None
    prints: dict[str, str] = {}
    document_key = None
    if cache_file is not None:
        prints = {sid: replay_cache.fingerprint(stamp, identity, index_records.get(sid))
                  for sid, (_, identity) in units.items()}
        unread_index = {sid: r for sid, r in index_records.items() if sid not in prints}
        document_key = _document_key(stamp, prints, unread_index, summaries, sources)
        document = replay_cache.document(cache_file, document_key) \
            if read_cache and document_key else None
        if document is not None:
            return document
    cached = replay_cache.load(cache_file) if cache_file and read_cache else {}
    hits = {sid: record for sid, (print_, record) in cached.items()
            if prints.get(sid) == print_}
    for group in together:              # one of them read again: all of them
        if any(sid not in hits for sid in group):
            for sid in group:
                hits.pop(sid, None)
    weights = {sid: weight for sid, (weight, _) in units.items() if sid not in hits}
    shards = replay_shards.plan_shards(
        weights, replay_shards.jobs_for(jobs, weights, config), together) if weights else []
    results = list(replay_shards.read_shards(what, config, engine_factory, shards))
    shard_errors = replay_errors.new_shared_errors((r.shared_errors for r in results), counted)
    _merge(monitor, results, hits, summaries, shard_errors)
    fresh = _fresh_units(results, prints, counted) if cache_file is not None else {}
    if fresh or len(hits) != len(cached):       # else the file holds just this
        replay_cache.save(cache_file, replay_cache.units_json(
            {**{sid: (prints[sid], r) for sid, r in hits.items()}, **fresh}))
    sources.keep_only_logs()
    read_to_end(monitor)
    logs = {source_id(s): s.summary() for s in sources.sources}
    document = monitor.report()
    internal = monitor.internal_summary()
    document["sources"] = [logs[sid] if sid in logs else summaries[sid]
                           for sid in order if sid in logs or sid in summaries
                           ] + ([internal] if internal else [])
    if document_key is not None and not shard_errors:  # a failure is not kept as an answer
        replay_cache.save_document(cache_file, document_key, document)
    return document


def _document_key(stamp: tuple, prints: dict[str, str], unread_index: dict[str, list],
                  summaries: dict[str, dict], sources: SourceSet) -> str | None:
    """What the whole document is a function of: every session's fingerprint (which holds
    its index records), the index records of sessions no transcript has, what reading the
    index counted, and the identity of every gateway log file the replay will read. None
    when a log is a stream (stdin, the journal): nothing says it is unchanged."""
    logs = []
    for source in sources.sources:
        if source.kind != "gateway-log":
            continue
        if not isinstance(source, GatewayLogSource):
            return None
        logs.append([file_identity(path) for path in source.input_files()])
    return replay_cache.fingerprint(stamp, prints, unread_index, summaries, logs)


def _input_identity(what: ReplayInput) -> list:
    return [os.path.abspath(what.state_dir) if what.state_dir else None,
            [os.path.abspath(p) for p in what.paths], what.include_archives,
            [os.path.abspath(d) for d in what.claude_dirs],
            [os.path.abspath(d) for d in what.codex_dirs]]


def _fresh_units(results: list[ShardResult], prints: dict[str, str],
                 counted: dict[str, set[replay_errors.ErrorKey]]
                 ) -> dict[str, tuple[str, replay_cache.UnitRecord]]:
    """The cache entries of what the shards read. A shard whose counts could not all be
    placed on a session gives none, nor one that met an error no session owns that the
    main process did not meet reading the index (``counted``): a database that failed
    while the shard read its sessions."""
    fresh = {}
    for result in results:
        if result.units is None or replay_errors.new_shared_errors([result.shared_errors],
                                                                     counted):
            continue
        runs_of: dict[str, list[tuple[str, str]]] = {}
        for run_id, sid in result.runs:
            runs_of.setdefault(sid, []).append((run_id, sid))
        for state in result.sessions:
            sid = state.session_id
            if sid in prints:
                fresh[sid] = (prints[sid], replay_cache.UnitRecord(
                    state, runs_of.get(sid, []), result.units.get(sid, {})))
    return fresh


def _merge(monitor: Monitor, results: list[ShardResult],
           hits: dict[str, replay_cache.UnitRecord], summaries: dict[str, dict],
           shard_errors: dict[str, list[dict]]) -> None:
    """Fold the shards' and the cache's sessions and runs into ``monitor``, and their
    counts into ``summaries`` (each transcript source's, holding what the main process
    counted: the errors no session owns), with ``shard_errors``: those of them the shards
    met that the main process had not counted (``replay_errors.new_shared_errors``)."""
    runs: set[tuple[str, str]] = set()
    for result in results:
        for state in result.sessions:
            monitor.sessions[state.session_id] = state
        runs.update(result.runs)
        monitor.internal_errors += result.internal_errors
        monitor.internal_error_samples += result.internal_error_samples
        for sid, summary in result.summaries.items():
            _add_counts(summaries, sid, summary["events"], summary["errors"],
                        summary["error_samples"])
    for sid, samples in shard_errors.items():
        _add_counts(summaries, sid, 0, len(samples), samples)
    for record in hits.values():
        monitor.sessions[record.state.session_id] = record.state
        runs.update(record.runs)
        for sid, (events, errors, samples) in record.counts.items():
            _add_counts(summaries, sid, events, errors, samples)
    for summary in summaries.values():
        summary["error_samples"] = sorted(
            summary["error_samples"], key=lambda e: sample_order(e["path"], e["where"])
        )[:ERROR_SAMPLES_KEPT]
    for run_id, session_id in sorted(runs):
        monitor.run_to_session.note(run_id, session_id, replace=False)


def _add_counts(summaries: dict[str, dict], sid: str, events: int, errors: int,
                samples: list) -> None:
    summary = summaries.get(sid)
    if summary is None:         # a source a shard found that the main process did not
        return
    summary["events"] += events
    summary["errors"] += errors
    summary["error_samples"] = [*summary["error_samples"], *samples]

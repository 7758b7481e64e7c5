"""The errors no session owns (``SourceError.shared``: a database failing as a whole, an
index that cannot be read) that a replay's shards raise, counted once in its document.

A shard does not count them in its sources' counts (``Source.count_shared_errors``): every
shard that reads a failing database sees the same failure, and the main process's own read
of the index may have counted it already. Each shard hands back what its sources raised
(``ShardResult.shared_errors``), and each distinct error, by path, where and message, that
the main process did not count is counted once, however many shards raised it. So one shard
(``--jobs 1``) and many report the same failure the same way, and a failure met only while
reading transcripts, which the main process never does, is never lost.
"""

from __future__ import annotations

from collections.abc import Iterable

from monitor.sources.base import Source, error_sample
from monitor.sources.sourceset import source_id

#: What tells two errors apart: path, where, message.
ErrorKey = tuple[str, str, str]


def error_key(sample: dict) -> ErrorKey:
    return sample["path"], sample["where"], sample["message"]


def uncounted_shared_errors(sources: Iterable[Source]) -> dict[str, list[dict]]:
    """The shared errors each of a shard's ``sources`` raised without counting them, as
    error samples by ``source_id``."""
    return {source_id(source): [error_sample(e) for e in source.shared_errors.values()]
            for source in sources
            if source.shared_errors and not source.count_shared_errors}


def counted_shared_errors(sources: Iterable[Source]) -> dict[str, set[ErrorKey]]:
    """The shared errors the main process's ``sources`` counted so far, by ``source_id``."""
    return {source_id(source): set(source.shared_errors or ())
            for source in sources if source.count_shared_errors}


def new_shared_errors(raised: Iterable[dict[str, list[dict]]],
                      counted: dict[str, set[ErrorKey]]) -> dict[str, list[dict]]:
    """Per ``source_id``, each distinct error of the shards' ``raised`` that is not in
    ``counted``, once, in the order of its key: the same whatever the shards' order."""
    found: dict[str, dict[ErrorKey, dict]] = {}
    for by_source in raised:
        for sid, samples in by_source.items():
            known = counted.get(sid, set())
            for sample in samples:
                key = error_key(sample)
                if key not in known:
                    found.setdefault(sid, {}).setdefault(key, sample)
    return {sid: [errors[key] for key in sorted(errors)] for sid, errors in found.items()}

"""What a replay's shards would read again: each session index and each sessions dir's
listing, as this process last made them.

A replay reads every index and lists every sessions dir in its main process, then again
for each shard, in this process and in the forked workers, which inherit what the main
process made. Inside ``remembered()`` a result is kept under the identity of what it was
made from (a file's or dir's inode, size and mtime), so what changed is still read again.
Outside, nothing is kept: a live monitor reads an index again only when it changed, and a
kept copy would only hold memory.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")

_kept: dict[Hashable, object] | None = None


@contextmanager
def remembered() -> Iterator[None]:
    """Keep what ``recall`` makes until the block ends."""
    global _kept
    outer = _kept
    _kept = {} if outer is None else outer
    try:
        yield
    finally:
        _kept = outer


def recall(key: Hashable, make: Callable[[], T]) -> T:
    """``make()``, or what it gave for ``key`` before, inside ``remembered()``."""
    if _kept is None:
        return make()
    if key not in _kept:
        _kept[key] = make()
    return _kept[key]  # type: ignore[return-value]

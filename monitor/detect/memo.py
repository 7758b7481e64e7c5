"""A small table of remembered results that starts over when full.

The detectors remember a few derived values (digests, budget days) that a looping
session asks for again and again. Starting over is enough for that: the values come
back within a few events, and nothing grows with the number of events.
"""

from __future__ import annotations

from typing import Any


class BoundedMemo(dict):
    """A dict of at most ``limit`` entries; ``keep`` clears it when full. Lookups are the
    dict's own ``get``."""

    __slots__ = ("limit",)

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def keep(self, key: Any, value: Any) -> Any:
        """Remember ``value`` under ``key`` and return it."""
        if len(self) >= self.limit:
            self.clear()
        self[key] = value
        return value

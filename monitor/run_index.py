"""Which session each run belongs to, for the most recently seen runs.

Gateway log lines often name only their run; the monitor and the detection engine both
place them through this index. A session starts a run per prompt, so the index would grow
with time, not with the sessions: it keeps the ``capacity`` runs seen most recently (a live
run is seen again on each of its events, so it stays).
"""

from __future__ import annotations

from collections import OrderedDict


class RunIndex(OrderedDict):
    """``run_id -> session_id`` for the ``capacity`` most recently seen runs."""

    def __init__(self, capacity: int) -> None:
        super().__init__()
        self.capacity = capacity
        #: The run noted last (the most recent): a run's events come in a row, and noting
        #: it again changes nothing unless its session is replaced.
        self._newest: str | None = None

    def note(self, run_id: str, session_id: str, *, replace: bool = True) -> None:
        """``run_id`` was seen in ``session_id``; without ``replace`` a run keeps the session
        it was first seen in."""
        if run_id == self._newest and (not replace or self.get(run_id) == session_id):
            return
        self._newest = run_id
        if replace or run_id not in self:
            self[run_id] = session_id
        self.move_to_end(run_id)
        while len(self) > self.capacity:
            self.popitem(last=False)

"""Everything the engine remembers about one transcript generation (one ``session_id``).

All containers are bounded: the OpenClaw history by ``history_size``, the
outcome window by ``session_no_progress.window``, the report gates by a cap
and by forgetting the patterns of runs that left the window, and the map of
calls awaiting a result by a cap, so memory stays flat however long a session
runs.
"""

from __future__ import annotations

from collections import Counter, OrderedDict, deque
from dataclasses import dataclass
from typing import Any

from monitor.detect.beyond import (
    ContextBloat,
    Diminishing,
    IterationCounter,
    PostCompaction,
    SessionProgress,
    TurnFailures,
)
from monitor.detect.budgets import BurnMeter
from monitor.detect.loopcore import Record

# Calls awaiting their result. A result normally follows its call within the same
# assistant turn; the ones that never come (an aborted run) are forgotten oldest first.
MAX_PENDING_CALLS = 512
# Report patterns remembered per gate. Live patterns are refreshed on every check and the
# patterns of runs that left the history are dropped, so only stale ones are forgotten.
MAX_GATE_KEYS = 64
# Call ids of vetoes already handled (a veto can reach the transcript more than once).
MAX_HANDLED_VETOES = 64


class PendingCall:
    """A tool call seen in the transcript: its batch position, and later its history record.

    ``params`` is what ``outcome_of`` needs of the call's params (``outcome_params``), not
    the whole arguments.
    """

    __slots__ = ("args_hash", "call_id", "index", "known_poll", "params", "record", "run_id",
                 "shown", "tool", "vetoed")

    def __init__(self, tool: str, params: Any, args_hash: str, call_id: str,
                 run_id: str | None, index: int, known_poll: bool,
                 shown: str | None = None) -> None:
        self.tool = tool
        self.shown = shown or tool      # the name findings show: the name as called
        self.params = params
        self.args_hash = args_hash
        self.call_id = call_id
        self.run_id = run_id
        self.index = index
        self.known_poll = known_poll
        self.record: Record | None = None
        self.vetoed = False


@dataclass(slots=True)
class LastCall:
    """The latest call, for the dashboard's streaks: ``tool`` as OpenClaw keys it,
    ``shown`` as it was called."""

    tool: str
    args_hash: str
    known_poll: bool
    run_id: str | None
    shown: str


class BoundedGate:
    """Remembers, per pattern, the highest mark reported; at most ``MAX_GATE_KEYS`` of them.

    A pattern checked again moves to the newest end, so the one forgotten when the gate is
    full is the pattern left alone longest: a long-lived pattern that keeps being checked
    (``burn_rate``, ``token_budget:session``) outlives any number of one-off patterns.
    """

    __slots__ = ("marks",)

    def __init__(self) -> None:
        self.marks: OrderedDict[str, int] = OrderedDict()

    def passes(self, pattern: str, mark: int) -> bool:
        """True (and remembered) when ``mark`` is above what ``pattern`` last reported."""
        previous = self.marks.get(pattern)
        if previous is not None:
            self.marks.move_to_end(pattern)
            if mark <= previous:
                return False
        self.marks[pattern] = mark
        while len(self.marks) > MAX_GATE_KEYS:
            self.marks.popitem(last=False)
        return True

    def clear(self) -> None:
        self.marks.clear()

    def drop_run(self, run_id: str) -> None:
        """Forget the patterns of a run (their keys start with the run id)."""
        prefixes = (f"{run_id}:", f"gateway:{run_id}:", f"iteration_budget:{run_id}")
        for pattern in [p for p in self.marks if p.startswith(prefixes)]:
            del self.marks[pattern]


class SessionState:
    """Detector state of one session; see the module docstring for the bounds."""

    def __init__(self, session_id: str, key: str, agent_id: str, history_size: int,
                 progress_window: int) -> None:
        self.session_id = session_id
        self.key = key
        self.agent_id = agent_id
        self.call_index = 0
        self.last_ts: float | None = None
        self.records: deque[Record] = deque(maxlen=history_size)
        self.run_counts: Counter[str | None] = Counter()
        self.batch: list[PendingCall] = []
        self.batch_run: str | None = None
        self.batch_blocked: str | None = None
        self.pending: OrderedDict[str, PendingCall] = OrderedDict()
        self.handled_vetoes: deque[str] = deque(maxlen=MAX_HANDLED_VETOES)
        self.last_call: LastCall | None = None
        self.warning_buckets = BoundedGate()
        self.critical_buckets = BoundedGate()
        self.levels = BoundedGate()
        self.progress = SessionProgress(progress_window)
        #: ``(arguments' hash, outcome key)`` of recent calls (a veto's key: None).
        self.recent_call_keys: deque[tuple[str, Any]] = deque(maxlen=history_size)
        self.turns = TurnFailures()
        self.diminishing = Diminishing()
        self.bloat = ContextBloat()
        self.bloat_factor = 0.0
        self.compaction = PostCompaction()
        self.iterations = IterationCounter()
        self.burn = BurnMeter()
        self.session_tokens = 0
        # Hibernation (``DetectionEngine.hibernate_idle``): an event since the last sweep,
        # and the wall time of the sweep that last found one.
        self.seen = True
        self.seen_at = 0.0

    def add_record(self, record: Record) -> None:
        """Append to the window (the oldest record falls out when it is full).

        When the last record of a finished run leaves the window, that run's report
        patterns are forgotten too: a run never resumes, so they cannot matter again.
        """
        if len(self.records) == self.records.maxlen:
            oldest = self.records[0].run_id
            self._uncount(oldest)
            if oldest and oldest != record.run_id and oldest not in self.run_counts:
                for gate in (self.warning_buckets, self.critical_buckets, self.levels):
                    gate.drop_run(oldest)
        self.records.append(record)
        self.run_counts[record.run_id] += 1

    def remove_record(self, record: Record) -> None:
        if record in self.records:
            self.records.remove(record)
            self._uncount(record.run_id)

    def _uncount(self, run_id: str | None) -> None:
        self.run_counts[run_id] -= 1
        if not self.run_counts[run_id]:
            del self.run_counts[run_id]

    def scoped_history(self, run_id: str | None) -> list[Record]:
        """OpenClaw's ``selectHistoryForScope``: the window filtered to one run."""
        if self.run_counts.get(run_id, 0) == len(self.records):
            return list(self.records)
        return [record for record in self.records if record.run_id == run_id]

    def remember_pending(self, call: PendingCall) -> None:
        self.pending[call.call_id] = call
        while len(self.pending) > MAX_PENDING_CALLS:
            self.pending.popitem(last=False)

    def take_pending(self, call_id: str) -> PendingCall | None:
        """The call a result answers; compound ids (``call_x|fc_y``) match on either part."""
        call = self.pending.pop(call_id, None)
        if call is not None or not call_id:
            return call
        wanted = set(call_id.split("|"))
        for known_id in reversed(self.pending):
            if wanted & set(known_id.split("|")):
                return self.pending.pop(known_id)
        return None

    def find_batch_call(self, call_id: str) -> PendingCall | None:
        for call in self.batch:
            if call.call_id == call_id or set(call.call_id.split("|")) & set(call_id.split("|")):
                return call
        return None

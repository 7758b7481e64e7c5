"""Per-session detectors that OpenClaw does not have.

Each tracker keeps a bounded amount of state and returns ``Hit`` candidates
(the level the measure has reached); the engine turns a hit into a finding
only the first time a level is reached for its pattern.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from monitor.redaction import redacted_cut

if TYPE_CHECKING:
    from monitor.detect.outcome_keys import LazyDigest


@dataclass(frozen=True, slots=True)
class Hit:
    detector: str
    level: str
    count: int
    message: str
    pattern: str
    tool: str | None = None


def level_for(value: float, warning: float | None, critical: float | None) -> str | None:
    if critical is not None and value >= critical:
        return "critical"
    if warning is not None and value >= warning:
        return "warning"
    return None


class SessionProgress:
    """``session_no_progress``: consecutive calls (any tool) whose outcome key is already in
    the window of recent outcome keys, i.e. that taught the agent nothing new.

    Keys (``LazyDigest``) are equal only within a group. A key alone of its group in the
    window is kept unmade (``lone``); the others are counted by their text, so asking whether
    a key is in the window is one probe of ``texts``, not a comparison with every key of its
    group (a looping session's window is all one group)."""

    __slots__ = ("episode", "groups", "keys", "lone", "streak", "texts", "window")

    def __init__(self, window: int) -> None:
        self.window = window
        self.keys: deque[LazyDigest] = deque()
        self.groups: dict[str, int] = {}             # keys in the window per group
        self.lone: dict[str, LazyDigest] = {}        # group -> its only key in the window
        self.texts: dict[str, int] = {}              # the other keys, by text
        self.streak = 0
        self.episode = 0

    def __len__(self) -> int:
        """How many different keys the window holds."""
        return len(self.lone) + len(self.texts)

    def observe(self, key: LazyDigest | None) -> int:
        """Add one outcome (None = a veto, never new); return the current streak."""
        if key is None or self.add(key):
            self.streak += 1
        else:
            if self.streak:
                self.episode += 1
            self.streak = 0
        return self.streak

    def add(self, key: LazyDigest) -> bool:
        """Put ``key`` in the window (the oldest leaves past its size); whether an equal key
        was already there."""
        group = key.group
        in_group = self.groups.get(group, 0)
        if in_group:
            texts = self.texts
            lone = self.lone.pop(group, None)
            if lone is not None:
                lone_text = lone.make()
                texts[lone_text] = texts.get(lone_text, 0) + 1
            text = key.make()
            times = texts.get(text, 0)
            seen = times > 0
            texts[text] = times + 1
        else:
            seen = False
            self.lone[group] = key
        self.groups[group] = in_group + 1
        self.keys.append(key)
        if len(self.keys) > self.window:
            self._drop(self.keys.popleft())
        return seen

    def distinct(self) -> tuple[LazyDigest, ...]:
        """One key of each text in the window, oldest first."""
        texts: set[str] = set()
        out = []
        for key in self.keys:
            if key.group in self.lone:
                out.append(key)
            elif (text := key.make()) not in texts:
                texts.add(text)
                out.append(key)
        return tuple(out)

    def _drop(self, key: LazyDigest) -> None:
        group = key.group
        _decrement(self.groups, group)
        if self.lone.pop(group, None) is None:    # a lone key is its group's only one
            _decrement(self.texts, key.make())


def _decrement(counter: dict, item) -> None:
    left = counter[item] - 1
    if left:
        counter[item] = left
    else:
        del counter[item]


class TurnFailures:
    """``turn_failures``: consecutive assistant turns that ended in an error."""

    __slots__ = ("episode", "last_error", "streak")

    def __init__(self) -> None:
        self.streak = 0
        self.episode = 0
        self.last_error = ""

    def observe(self, is_error: bool, error: str | None) -> int:
        if is_error:
            self.streak += 1
            self.last_error = redacted_cut(error or "", 200)
        else:
            if self.streak:
                self.episode += 1
            self.streak = 0
        return self.streak


class Diminishing:
    """``diminishing_returns``: each continuation of a task adds less output than the one
    before and less than ``min_delta`` tokens (continue → +3000, +2000, +400, +200)."""

    __slots__ = ("continuations", "episode", "last_delta", "pending_continuation",
                 "run_output", "streak")

    def __init__(self) -> None:
        self.continuations = 0
        self.last_delta: int | None = None
        self.streak = 0
        self.episode = 0
        self.run_output = 0
        self.pending_continuation = False

    def user_message(self, text_chars: int, max_chars: int) -> None:
        self.pending_continuation = text_chars <= max_chars
        if not self.pending_continuation:
            self._reset()
        self.run_output = 0

    def _reset(self) -> None:
        if self.streak:
            self.episode += 1
        self.continuations = 0
        self.last_delta = None
        self.streak = 0

    def assistant(self, output: int, final: bool, min_delta: int) -> tuple[int, int]:
        """Account one reply; on a run's final reply return (streak, continuations)."""
        self.run_output += output
        if not final:
            return self.streak, self.continuations
        delta, self.run_output = self.run_output, 0
        if self.last_delta is not None and self.pending_continuation:
            self.continuations += 1
            if delta < min_delta and delta <= self.last_delta:
                self.streak += 1
            else:
                if self.streak:
                    self.episode += 1
                self.streak = 0
        self.last_delta = delta
        self.pending_continuation = True
        return self.streak, self.continuations


class ContextBloat:
    """``context_bloat``: prompt size far above the session's own early baseline while
    output per prompt token collapses."""

    __slots__ = ("baseline", "episode", "recent", "samples")

    def __init__(self) -> None:
        self.samples: list[int] = []
        self.baseline: float | None = None
        self.recent: deque[tuple[int, int]] = deque(maxlen=3)
        self.episode = 0

    def reset(self) -> None:
        self.samples.clear()
        self.baseline = None
        self.recent.clear()
        self.episode += 1

    def observe(self, prompt: int, output: int, baseline_messages: int
                ) -> tuple[float, float] | None:
        """(growth factor over baseline, output/prompt efficiency) once a baseline exists."""
        if prompt <= 0:
            return None
        self.recent.append((prompt, output))
        if self.baseline is None:
            self.samples.append(prompt)
            if len(self.samples) >= baseline_messages:
                ordered = sorted(self.samples)
                self.baseline = float(ordered[len(ordered) // 2])
                self.samples.clear()
            return None
        total_prompt = total_output = 0
        for recent_prompt, recent_output in self.recent:
            total_prompt += recent_prompt
            total_output += recent_output
        return prompt / self.baseline, total_output / total_prompt


class PostCompaction:
    """``post_compaction_repeat``: right after a compaction the agent repeats calls it had
    already made, with the same outcome (it lost the memory of having done them)."""

    __slots__ = ("before", "episode", "remaining", "repeats")

    def __init__(self) -> None:
        self.before: frozenset[Hashable] = frozenset()
        self.remaining = 0
        self.repeats = 0
        self.episode = 0

    def compaction(self, recent_keys: list[Hashable], window_calls: int) -> None:
        self.before = frozenset(recent_keys)
        self.remaining = window_calls
        self.repeats = 0
        self.episode += 1

    def observe(self, key: Hashable) -> int | None:
        """The repeat count after this call, or None outside a post-compaction window."""
        if self.remaining <= 0:
            return None
        self.remaining -= 1
        if key in self.before:
            self.repeats += 1
        if self.remaining == 0:
            self.before = frozenset()
        return self.repeats


# Runs whose tool calls ``IterationCounter`` keeps counting: only the current run is ever
# judged, the few before it cover calls of an older run interleaved with the new one.
ITERATION_RUNS_KEPT = 8


class IterationCounter:
    """``iteration_budget``: tool calls made by each run (the last ``ITERATION_RUNS_KEPT``
    runs are kept)."""

    __slots__ = ("runs",)

    def __init__(self) -> None:
        self.runs: OrderedDict[str, int] = OrderedDict()

    def observe(self, run_id: str | None) -> int:
        key = run_id or ""
        self.runs[key] = self.runs.get(key, 0) + 1
        self.runs.move_to_end(key)
        while len(self.runs) > ITERATION_RUNS_KEPT:
            self.runs.popitem(last=False)
        return self.runs[key]

    def current(self) -> tuple[str | None, int]:
        if not self.runs:
            return None, 0
        key = next(reversed(self.runs))
        return key or None, self.runs[key]

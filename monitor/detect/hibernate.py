"""Hibernation: an idle session's detector state shrinks to a compact summary.

A session with no event for ``history.hibernate_after`` seconds (and whose index does not
say it is running) gives up its heavy detector state: the history window, the calls
awaiting a result, the outcome window, the burn-rate buckets and series, the recent call
keys, the post-compaction snapshot. What must outlive the idle time is kept in a
``SessionSummary``:

* ``call_index``: ``at_call`` numbering goes on where it stopped;
* ``session_tokens``: the session budget keeps its total (the per-agent and nightly
  ledgers live in the engine, not in the session);
* the three report gates (``levels``, ``warning_buckets``, ``critical_buckets``) and every
  detector's episode counter: nothing already raised is raised again;
* the scalar detectors whole (turn failures, diminishing returns, run iteration counts),
  the ``session_no_progress`` streak, the context-bloat baseline and factor;
* while a ``session_no_progress`` streak is under way, the distinct outcome keys of its
  window (a looping session has one or two), so that the same dead end after waking goes
  on with the streak instead of starting a new episode that would be raised again;
* key, agent, last event time.

When an event arrives for the session it wakes: ``restore`` builds a fresh
``SessionState`` from the summary, as if the session had just started but with its
totals, numbering and gates.
"""

from __future__ import annotations

from collections import OrderedDict

from monitor.detect.beyond import Diminishing, IterationCounter, TurnFailures
from monitor.detect.session_state import BoundedGate, SessionState


class SessionSummary:
    """What a hibernated session keeps (a few hundred bytes plus its gate marks)."""

    __slots__ = ("agent_id", "bloat_baseline", "bloat_episode", "bloat_factor",
                 "call_index", "compaction_episode", "critical_marks", "diminishing",
                 "iterations", "key", "last_ts", "level_marks", "progress_episode",
                 "progress_keys", "progress_streak", "session_id", "session_tokens",
                 "turns", "warning_marks")

    def __init__(self, state: SessionState) -> None:
        self.session_id = state.session_id
        self.key = state.key
        self.agent_id = state.agent_id
        self.call_index = state.call_index
        self.last_ts = state.last_ts
        self.session_tokens = state.session_tokens
        self.level_marks = tuple(state.levels.marks.items())
        self.warning_marks = tuple(state.warning_buckets.marks.items())
        self.critical_marks = tuple(state.critical_buckets.marks.items())
        self.progress_streak = state.progress.streak
        self.progress_episode = state.progress.episode
        self.progress_keys = state.progress.distinct() if state.progress.streak else ()
        self.turns: TurnFailures = state.turns
        self.diminishing: Diminishing = state.diminishing
        self.iterations: IterationCounter = state.iterations
        self.bloat_baseline = state.bloat.baseline
        self.bloat_episode = state.bloat.episode
        self.bloat_factor = state.bloat_factor
        self.compaction_episode = state.compaction.episode


def _gate(marks: tuple[tuple[str, int], ...]) -> BoundedGate:
    gate = BoundedGate()
    gate.marks = OrderedDict(marks)
    return gate


def restore(summary: SessionSummary, history_size: int, progress_window: int
            ) -> SessionState:
    """A fresh detector state carrying what ``summary`` kept (the session wakes)."""
    state = SessionState(summary.session_id, summary.key, summary.agent_id, history_size,
                         progress_window)
    state.call_index = summary.call_index
    state.last_ts = summary.last_ts
    state.session_tokens = summary.session_tokens
    state.levels = _gate(summary.level_marks)
    state.warning_buckets = _gate(summary.warning_marks)
    state.critical_buckets = _gate(summary.critical_marks)
    state.progress.streak = summary.progress_streak
    state.progress.episode = summary.progress_episode
    for key in summary.progress_keys:
        state.progress.add(key)
    state.turns = summary.turns
    state.diminishing = summary.diminishing
    state.iterations = summary.iterations
    state.bloat.baseline = summary.bloat_baseline
    state.bloat.episode = summary.bloat_episode
    state.bloat_factor = summary.bloat_factor
    state.compaction.episode = summary.compaction_episode
    return state

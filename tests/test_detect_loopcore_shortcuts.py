"""``evaluate`` skips comparing results where no count it compares them for can reach a
threshold, and looking for a pair or a second variant where every record is the call
itself; its verdicts must be those of the full computation for any history."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.detect import loopcore
from monitor.detect.loopcore import Record, Thresholds, evaluate
from monitor.detect.outcome_record import TERMINAL_EXEC_FAILURE, VETO_KIND

TOOLS = ("exec", "read", "process")

def _record(tool: str, args: str, result: str | None, kind: str | None,
            identity: str | None) -> Record:
    record = Record(tool, args, None, None)
    record.result_hash, record.kind, record.failure_identity = result, kind, identity
    record.no_progress = result is not None
    return record


record_strategy = st.builds(
    _record, st.sampled_from(TOOLS), st.sampled_from("abc"),
    st.sampled_from((None, "r1", "r2")), st.sampled_from((None, VETO_KIND, TERMINAL_EXEC_FAILURE)),
    st.sampled_from((None, "f1")))


def _full(history, tool, args_hash, known_poll, limits):
    """``evaluate`` with every streak computed in full."""
    full_ping_pong = loopcore.ping_pong_streak
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(loopcore, "_streaks_below", lambda *_: False)
        patched.setattr(loopcore, "_only_this_call", lambda *_: False)
        patched.setattr(loopcore, "ping_pong_streak",
                        lambda history, current, evidence_from=0: full_ping_pong(history, current))
        return evaluate(history, tool, args_hash, known_poll, limits)


@settings(max_examples=600, deadline=None)
@given(history=st.lists(record_strategy, max_size=14), tool=st.sampled_from(TOOLS),
       args_hash=st.sampled_from("abc"), known_poll=st.booleans(),
       warning=st.integers(1, 5), extra=st.integers(0, 4), breaker_extra=st.integers(0, 4))
def test_shortcuts_never_change_a_verdict(history, tool, args_hash, known_poll, warning,
                                           extra, breaker_extra):
    limits = Thresholds(warning=warning, critical=warning + extra,
                        global_breaker=warning + extra + breaker_extra, unknown_tool=warning)
    assert evaluate(history, tool, args_hash, known_poll, limits) == \
        _full(history, tool, args_hash, known_poll, limits)
    same_call = sum(1 for r in history if r.tool == tool and r.args_hash == args_hash)
    assert loopcore._same_call_counts(history, tool, args_hash)[1] == same_call


def test_a_history_without_repeats_compares_no_result():
    history = [_record(TOOLS[n % 2], f"args {n}", f"result {n}", None, None)
               for n in range(30)]
    counts = loopcore._same_call_counts(history, "exec", "args 0")
    assert counts == (0, 1)
    assert loopcore._streaks_below(*counts, Thresholds())
    assert not loopcore._streaks_below(*counts, Thresholds(warning=1))

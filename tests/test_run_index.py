"""``RunIndex``: which session each recent run belongs to, the newest runs kept."""

from __future__ import annotations

from monitor.run_index import RunIndex


def test_a_run_keeps_its_first_session_unless_replaced_and_the_newest_runs_stay():
    index = RunIndex(3)
    index.note("a", "s1")
    index.note("a", "s2", replace=False)            # noted last already: a row of events
    assert index["a"] == "s1"
    index.note("a", "s2")
    assert index["a"] == "s2"
    index.note("a", "s2")
    index.note("b", "s3")
    index.note("c", "s4")
    index.note("a", "s9", replace=False)            # seen again: newest, session kept
    index.note("d", "s5")
    assert list(index.items()) == [("c", "s4"), ("a", "s2"), ("d", "s5")]
    index.note("d", "s6")
    assert index["d"] == "s6"


def test_a_run_noted_again_after_others_moves_to_the_newest():
    index = RunIndex(2)
    index.note("a", "s1")
    index.note("b", "s2")
    index.note("a", "s1")
    index.note("c", "s3")
    assert list(index) == ["a", "c"]

"""``BoundedMemo`` never holds more than its limit and returns what it keeps."""

import time
from datetime import datetime, timedelta

from monitor.detect.budgets import _DAYS, day_of
from monitor.detect.memo import BoundedMemo


def test_a_full_memo_starts_over():
    memo = BoundedMemo(3)
    assert [memo.keep(n, f"value {n}") for n in range(3)] == ["value 0", "value 1", "value 2"]
    assert len(memo) == 3
    memo.keep("fourth", "value 4")
    assert memo == {"fourth": "value 4"}
    for n in range(10):
        memo.keep(n, n)
        assert len(memo) <= 3
    assert memo.get(9) == 9


def test_budget_days_are_remembered_within_their_bound():
    _DAYS.clear()
    for minute in range(0, 3 * _DAYS.limit, 7):
        ts = minute * 60.0 + 30.0
        expected = (datetime.fromtimestamp(ts) - timedelta(hours=4)).date().isoformat()
        assert day_of(ts, "04:00") == expected
        assert day_of(ts, "04:00") == expected       # the remembered answer
        assert 0 < len(_DAYS) <= _DAYS.limit


def test_a_budget_day_past_the_calendar_is_its_last_day(monkeypatch):
    """9999-12-31T23:59:59Z is a time a transcript may say (``parse_timestamp`` takes it);
    east of UTC its local day is in the year 10000, which ``datetime`` cannot hold."""
    monkeypatch.setenv("TZ", "JST-9")
    time.tzset()
    try:
        _DAYS.clear()
        assert day_of(253402300799.0, "00:00") == "9999-12-31"
        assert day_of(253402300799.0 - 86400 * 2, "00:00") == "9999-12-30"
    finally:
        monkeypatch.undo()
        time.tzset()
        _DAYS.clear()

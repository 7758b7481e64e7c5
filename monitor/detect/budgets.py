"""Token accounting: per-session burn rate and the per-agent / global daily ledgers."""

from __future__ import annotations

from collections import OrderedDict, deque
from datetime import date, datetime, timedelta

from monitor.detect.memo import BoundedMemo
from monitor.events import Usage

SERIES_POINTS = 60
BUCKETS_PER_WINDOW = 60


def tokens_of(usage: Usage) -> int:
    """Tokens one assistant message consumed (``totalTokens``, else its parts)."""
    if usage.total:
        return usage.total
    return usage.input + usage.output + usage.cache_read + usage.cache_write


class BurnMeter:
    """Tokens per minute over a sliding time window, plus a short series for a sparkline.

    Samples closer together than 1/60 of the window share a bucket, so a busy session
    keeps at most about 60 buckets and 60 series points.
    """

    __slots__ = ("messages", "samples", "series", "total", "window_tokens")

    def __init__(self) -> None:
        self.samples: deque[list] = deque()
        self.series: deque[tuple[float, float]] = deque(maxlen=SERIES_POINTS)
        self.total = 0
        self.window_tokens = 0
        self.messages = 0

    def add(self, ts: float, tokens: int, window_seconds: int) -> None:
        """Account ``tokens`` used at ``ts``. A time further back than a bucket before the
        newest sample (a clock stepped back, a record out of order) starts the window over
        at ``ts``: kept, the newer samples would never expire and the window's span, newest
        minus oldest, would go negative, so every token since the step would count as used
        within one minute and a steady session would read as a runaway."""
        self.total += tokens
        resolution = window_seconds / BUCKETS_PER_WINDOW
        if self.samples and ts - self.samples[-1][0] < -resolution:
            self.samples.clear()
            self.window_tokens = 0
            self.messages = 0
        self.window_tokens += tokens
        if self.samples and -resolution <= ts - self.samples[-1][0] < resolution:
            self.samples[-1][1] += tokens
            self.samples[-1][2] += 1
        else:
            self.samples.append([ts, tokens, 1])
        self.messages += 1
        self._expire(ts, window_seconds)
        point = (ts, self.rate(window_seconds))
        if self.series and 0 <= ts - self.series[-1][0] < resolution:
            self.series[-1] = (self.series[-1][0], point[1])
        else:
            self.series.append(point)

    def _expire(self, now: float, window_seconds: int) -> None:
        while self.samples and (now - self.samples[0][0] > window_seconds
                                or len(self.samples) > 4 * BUCKETS_PER_WINDOW):
            _, tokens, count = self.samples.popleft()
            self.window_tokens -= tokens
            self.messages -= count

    def rate(self, window_seconds: int) -> float:
        """Tokens per minute over the samples in the window (a minute at the least)."""
        if not self.samples:
            return 0.0
        span = self.samples[-1][0] - self.samples[0][0]
        span = min(max(span, 60.0), float(window_seconds))
        return self.window_tokens * 60.0 / span

    def eta_seconds(self, budget: int | None, window_seconds: int, used: int) -> float | None:
        """Seconds until ``used`` reaches ``budget`` at the current rate."""
        if not budget:
            return None
        remaining = budget - used
        if remaining <= 0:
            return 0.0
        rate = self.rate(window_seconds)
        return remaining / rate * 60.0 if rate > 0 else None


_DAYS = BoundedMemo(4096)


def day_of(ts: float, reset_time: str) -> str:
    """The budget day a timestamp belongs to; days start at ``reset_time`` (local time)."""
    cache_key = (int(ts) // 60, reset_time)
    day = _DAYS.get(cache_key)
    if day is None:
        hours, minutes = (int(part) for part in reset_time.split(":"))
        try:
            moment = datetime.fromtimestamp(ts) - timedelta(hours=hours, minutes=minutes)
            day = moment.date().isoformat()
        except (ValueError, OverflowError, OSError):  # a local year past 9999 or before 1
            day = (date.max if ts > 0 else date.min).isoformat()
        day = _DAYS.keep(cache_key, day)
    return day


#: Budget days whose totals are kept; the day added to longest ago is forgotten first.
LEDGER_DAYS = 8


class DailyLedger:
    """Tokens per agent and in total per budget day, for the ``LEDGER_DAYS`` days most
    recently added to. Each record counts toward its own day: one record dated ahead (a
    skewed or forged clock, any agent's) opens a day of its own, and the current day goes
    on counting; were only the newest day kept, every record of the real day after it would
    be dropped and no agent or nightly budget would trip until that date."""

    __slots__ = ("days",)

    def __init__(self) -> None:
        #: day -> (tokens per agent, tokens of everyone)
        self.days: OrderedDict[str, tuple[dict[str, int], list[int]]] = OrderedDict()

    def add(self, day: str, agent_id: str, tokens: int) -> tuple[int, int]:
        """Account tokens; return (agent's tokens that day, everyone's tokens that day)."""
        totals = self.days.get(day)
        if totals is None:
            totals = self.days[day] = ({}, [0])
            while len(self.days) > LEDGER_DAYS:
                self.days.popitem(last=False)
        else:
            self.days.move_to_end(day)
        agents, everyone = totals
        agents[agent_id] = agents.get(agent_id, 0) + tokens
        everyone[0] += tokens
        return agents[agent_id], everyone[0]

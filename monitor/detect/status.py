"""Read-only views of a session's detector state, for the dashboard."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class StreakStatus:
    """One detector's current count against its thresholds.

    ``count`` is compared with ``warning``; ``critical_count`` (when a detector
    escalates on a different measure, e.g. generic_repeat's no-progress streak)
    with ``critical``. Thresholds are ``None`` when that level does not exist or
    is not configured.
    """

    detector: str
    count: int
    warning: int | float | None
    critical: int | float | None
    tool: str | None = None
    critical_count: int | None = None
    detail: str = ""

    @property
    def level(self) -> str | None:
        high = self.count if self.critical_count is None else self.critical_count
        if self.critical is not None and high >= self.critical:
            return "critical"
        if self.warning is not None and self.count >= self.warning:
            return "warning"
        return None


@dataclass(frozen=True, slots=True)
class PingPongPair:
    """The alternating tail of one run: A, B, A, B … and whether each side's result is stable."""

    run_id: str | None
    tool_a: str
    tool_b: str
    args_hash_a: str
    args_hash_b: str
    count: int
    stable_a: bool
    stable_b: bool

    @property
    def no_progress(self) -> bool:
        return self.stable_a and self.stable_b


@dataclass(frozen=True, slots=True)
class BurnStatus:
    """Token burn of one session: recent rate, budget use and time left at this rate."""

    tokens_per_minute: float
    series: tuple[tuple[float, float], ...]
    total_tokens: int
    budget: int | None
    percent: float | None
    eta_seconds: float | None
    window_seconds: int

"""What a Codex ``token_count`` adds to a session, counted as ccusage counts it.

codex-rs keeps a thread's ``TokenUsage`` (``input_tokens`` including ``cached_input_tokens``
and, since 0.17x, ``cache_write_input_tokens``; ``output_tokens`` including
``reasoning_output_tokens``; ``total_tokens``) and writes it, cumulative, in every
``token_count`` event (``info.total_token_usage``), with the last reply's share beside it
(``info.last_token_usage``). ``Counts`` is one such object; the source adds up the increases of
the cumulative total over the most it has reached (codex-rs only ever adds to it, so a total
that falls and climbs back is no new spend), so a session's tokens end at its highest total
(less the total it started from, when it continues another thread's: ``share``). ``as_usage``
gives them as ccusage reports them: ``input`` the uncached input, ``cache_read`` the cached
input (never more than the input), ``cache_write`` the cache writes, ``total`` ``total_tokens``
(input + output when a version did not write it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from monitor.events import Usage
from monitor.sources.transcript import sane_count


@dataclass(frozen=True, slots=True)
class Counts:
    """A ``TokenUsage`` of codex-rs: ``input`` includes ``cached`` and ``cache_write``."""

    input: int = 0
    cached: int = 0
    cache_write: int = 0
    output: int = 0
    reasoning: int = 0
    total: int = 0

    @classmethod
    def of(cls, raw: Any) -> Counts | None:
        """The counts of a ``TokenUsage`` object; None when it is not one, or when a count
        in it is not a sane count (ccusage drops such an object whole, and so must the
        baseline: a forged total must not make the next real one count again)."""
        if not isinstance(raw, dict):
            return None
        read: dict[str, int] = {}
        for name, field in (("input", "input_tokens"), ("cached", "cached_input_tokens"),
                            ("cache_write", "cache_write_input_tokens"),
                            ("output", "output_tokens"), ("reasoning", "reasoning_output_tokens"),
                            ("total", "total_tokens")):
            value = raw.get(field)
            count = sane_count(value)
            if value is not None and count is None:
                return None
            read[name] = count or 0
        if raw.get("total_tokens") is None:
            read["total"] = read["input"] + read["output"]
        return cls(**read)

    def highest(self, other: Counts | None) -> Counts:
        """Each count at the larger of the two: the most a cumulative total has reached."""
        if other is None:
            return self
        return Counts(*(max(mine, theirs) for mine, theirs in zip(
            self.as_list(), other.as_list(), strict=True)))

    def minus(self, other: Counts) -> Counts:
        return Counts(*(max(0, mine - theirs) for mine, theirs in zip(
            self.as_list(), other.as_list(), strict=True)))

    def as_list(self) -> list[int]:
        return [self.input, self.cached, self.cache_write, self.output, self.reasoning,
                self.total]

    def as_usage(self) -> Usage:
        cached = min(self.cached, self.input)
        return Usage(input=max(0, self.input - cached - self.cache_write), output=self.output,
                     cache_read=cached, cache_write=self.cache_write, total=self.total)


def share(total: Counts | None, last: Counts | None, previous: Counts | None) -> Counts | None:
    """What one ``token_count`` adds to the rollout: the move of the cumulative ``total`` since
    the ``previous`` total; ``last`` (``last_token_usage``) when no total is given.

    With no total before it in this rollout, the share is ``last`` (never above ``total``),
    not the whole total: codex-rs seeds a thread that continues another's history (a fork in
    the paginated layout, which copies no lines) with the other's total and adds each reply's
    last usage to it, so the first total of such a rollout holds what its parent spent. In a
    rollout of its own the first total is its first reply's usage, the same either way.
    ccusage counts every reply's ``last_token_usage`` as well."""
    if total is None:
        return last
    if previous is not None:
        return total.minus(previous)
    if last is not None:
        return total.minus(total.minus(last))
    return total

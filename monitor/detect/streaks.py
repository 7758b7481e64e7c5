"""Dashboard views computed on demand from a session's detector state."""

from __future__ import annotations

from typing import TYPE_CHECKING

from monitor.detect.loopcore import Record, measure
from monitor.detect.settings import Settings
from monitor.detect.status import BurnStatus, PingPongPair, StreakStatus

if TYPE_CHECKING:
    from monitor.detect.session_state import SessionState


def _alternation(history: list[Record], run_id: str | None) -> PingPongPair | None:
    if not history:
        return None
    last = history[-1]
    other = next((r for r in reversed(history[:-1]) if r.args_hash != last.args_hash), None)
    if other is None:
        return None
    tail = 0
    for record in reversed(history):
        if record.args_hash != (last.args_hash if tail % 2 == 0 else other.args_hash):
            break
        tail += 1
    if tail < 2:
        return None
    window = history[len(history) - tail:]

    def stable(args_hash: str) -> bool:
        results = [r.result_hash for r in window if r.args_hash == args_hash]
        return bool(results) and all(results) and len(set(results)) == 1

    return PingPongPair(run_id, last.shown, other.shown, last.args_hash, other.args_hash,
                        tail + 1, stable(last.args_hash), stable(other.args_hash))


def ping_pong_pairs(state: SessionState) -> list[PingPongPair]:
    """The current alternating tail of each run still in the history window."""
    runs = list(dict.fromkeys(record.run_id for record in state.records))
    pairs = []
    for run_id in runs:
        pair = _alternation(state.scoped_history(run_id), run_id)
        if pair is not None:
            pairs.append(pair)
    return pairs


def streak_statuses(state: SessionState, settings: Settings) -> list[StreakStatus]:
    det = settings.detection
    on = det.detectors
    limits = settings.thresholds
    out: list[StreakStatus] = []
    last = state.last_call
    if last is not None:
        metrics = measure(state.scoped_history(last.run_id), last.tool, last.args_hash,
                          last.known_poll)
        if on.generic_repeat:
            out.append(StreakStatus("generic_repeat", metrics.recent_count, limits.warning,
                                    limits.critical, last.shown,
                                    critical_count=0 if last.known_poll else metrics.no_progress,
                                    detail="identical-argument calls; critical counts identical "
                                           "outcomes"))
        if on.known_poll_no_progress:
            out.append(StreakStatus("known_poll_no_progress",
                                    metrics.no_progress if last.known_poll else 0,
                                    limits.warning, limits.critical, last.shown))
        if on.global_circuit_breaker:
            out.append(StreakStatus("global_circuit_breaker", metrics.no_progress, None,
                                    limits.global_breaker, last.shown))
        if on.unknown_tool_repeat:
            out.append(StreakStatus("unknown_tool_repeat", metrics.unknown_tool, None,
                                    limits.unknown_tool, last.shown))
        if on.argument_churn:
            out.append(StreakStatus("argument_churn", metrics.argument_churn, limits.warning,
                                    None, last.shown))
    if on.ping_pong:
        pair = next((p for p in ping_pong_pairs(state)
                     if last is None or p.run_id == last.run_id), None)
        count = pair.count if pair else 0
        out.append(StreakStatus(
            "ping_pong", count, limits.warning, limits.critical,
            f"{pair.tool_a}/{pair.tool_b}" if pair else None,
            critical_count=count if pair and pair.no_progress else 0,
            detail="critical needs stable results on both sides"))
    if on.session_no_progress:
        cfg = det.session_no_progress
        out.append(StreakStatus("session_no_progress", state.progress.streak,
                                cfg.warning_threshold, cfg.critical_threshold))
    if on.iteration_budget:
        cfg = det.iteration_budget
        _, calls = state.iterations.current()
        out.append(StreakStatus("iteration_budget", calls, cfg.warning_tool_calls,
                                cfg.critical_tool_calls))
    if on.turn_failures:
        cfg = det.turn_failures
        out.append(StreakStatus("turn_failures", state.turns.streak, cfg.warning_threshold,
                                cfg.critical_threshold))
    if on.post_compaction_repeat:
        cfg = det.post_compaction_repeat
        out.append(StreakStatus("post_compaction_repeat", state.compaction.repeats,
                                cfg.warning_threshold, cfg.critical_threshold))
    if on.diminishing_returns:
        cfg = det.diminishing_returns
        out.append(StreakStatus("diminishing_returns", state.diminishing.streak,
                                cfg.warning_streak, cfg.critical_streak))
    if on.context_bloat:
        cfg = det.context_bloat
        out.append(StreakStatus("context_bloat", int(state.bloat_factor), cfg.warning_factor,
                                cfg.critical_factor,
                                detail="prompt size as a multiple of the session's baseline"))
    budgets = settings.config.budgets
    if on.token_budget and budgets.session_tokens:
        percent = int(state.session_tokens * 100 / budgets.session_tokens)
        out.append(StreakStatus("token_budget", percent, budgets.warning_percent,
                                budgets.critical_percent, detail="percent of the session budget"))
    if on.burn_rate:
        cfg = det.burn_rate
        out.append(StreakStatus("burn_rate", int(state.burn.rate(cfg.window_seconds)),
                                cfg.warning_tokens_per_minute, cfg.critical_tokens_per_minute,
                                detail="tokens per minute"))
    return out


def burn_status(state: SessionState | None, settings: Settings) -> BurnStatus:
    window = settings.detection.burn_rate.window_seconds
    budget = settings.config.budgets.session_tokens
    if state is None:
        return BurnStatus(0.0, (), 0, budget, 0.0 if budget else None, None, window)
    total = state.session_tokens
    return BurnStatus(
        tokens_per_minute=state.burn.rate(window),
        series=tuple(state.burn.series),
        total_tokens=total,
        budget=budget,
        percent=total * 100.0 / budget if budget else None,
        eta_seconds=state.burn.eta_seconds(budget, window, total),
        window_seconds=window,
    )

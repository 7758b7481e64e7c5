"""Detectors judged on assistant messages: budgets, burn rate, failures, returns, bloat."""

from __future__ import annotations

from typing import TYPE_CHECKING

from monitor.detect.beyond import Hit, level_for
from monitor.detect.settings import Settings
from monitor.events import AssistantMessage

if TYPE_CHECKING:
    from monitor.detect.session_state import SessionState


def _eta_text(seconds: float | None) -> str:
    if seconds is None:
        return "no budget set"
    if seconds <= 0:
        return "budget already spent"
    minutes = seconds / 60
    return f"budget reached in {minutes:.1f} min" if minutes < 120 else \
        f"budget reached in {minutes / 60:.1f} h"


def budget_hits(state: SessionState, settings: Settings, agent_tokens: int,
                total_tokens: int, day: str) -> list[Hit]:
    """``token_budget``: per session, per agent per day, everyone per day."""
    budgets = settings.config.budgets
    if not (budgets.session_tokens or budgets.agent_tokens or budgets.nightly_tokens):
        return []
    scopes = (
        ("session", state.session_tokens, budgets.session_tokens, "token_budget:session"),
        (f"agent {state.agent_id or '?'} today", agent_tokens, budgets.agent_tokens,
         f"token_budget:agent:{state.agent_id}:{day}"),
        ("all agents today", total_tokens, budgets.nightly_tokens, f"token_budget:nightly:{day}"),
    )
    hits = []
    for label, used, budget, pattern in scopes:
        if not budget or not used:
            continue
        percent = used * 100.0 / budget
        level = level_for(percent, budgets.warning_percent, budgets.critical_percent)
        if level:
            hits.append(Hit("token_budget", level, int(percent),
                            f"{label} used {used:,} of {budget:,} tokens ({percent:.0f} %)",
                            pattern))
    return hits


def burn_hits(state: SessionState, settings: Settings) -> list[Hit]:
    """``burn_rate``: tokens/min over the window against absolute limits and the ETA to the
    session budget."""
    cfg = settings.detection.burn_rate
    if state.burn.messages < cfg.min_messages:
        return []
    rate = state.burn.rate(cfg.window_seconds)
    budget = settings.config.budgets.session_tokens
    eta = state.burn.eta_seconds(budget, cfg.window_seconds, state.session_tokens)
    level = level_for(rate, cfg.warning_tokens_per_minute, cfg.critical_tokens_per_minute)
    if eta is not None and eta > 0:
        eta_minutes = eta / 60
        eta_level = ("critical" if eta_minutes <= cfg.eta_critical_minutes else
                     "warning" if eta_minutes <= cfg.eta_warning_minutes else None)
        if eta_level == "critical" or (eta_level and level is None):
            level = eta_level
    if not level:
        return []
    return [Hit("burn_rate", level, int(rate),
                f"burning {rate:,.0f} tokens/min over the last {cfg.window_seconds} s; "
                f"{_eta_text(eta)}", "burn_rate")]


def assistant_hits(state: SessionState, settings: Settings, event: AssistantMessage,
                   tokens: int, agent_tokens: int, total_tokens: int, day: str) -> list[Hit]:
    det = settings.detection
    on = det.detectors
    hits: list[Hit] = []
    if on.token_budget:
        hits.extend(budget_hits(state, settings, agent_tokens, total_tokens, day))
    if on.burn_rate and tokens:
        hits.extend(burn_hits(state, settings))
    if on.turn_failures:
        streak = state.turns.observe(event.is_error, event.error_message or event.stop_reason)
        cfg = det.turn_failures
        level = level_for(streak, cfg.warning_threshold, cfg.critical_threshold)
        if level:
            hits.append(Hit("turn_failures", level, streak,
                            f"{streak} consecutive assistant turns failed: "
                            f"{state.turns.last_error}", f"turn_failures:{state.turns.episode}"))
    if on.diminishing_returns:
        cfg = det.diminishing_returns
        final = event.tool_call_count == 0 and not event.is_error and not event.mid_reply
        streak, continuations = state.diminishing.assistant(event.usage.output, final,
                                                            cfg.min_delta_tokens)
        if final and continuations >= cfg.min_continuations:
            level = level_for(streak, cfg.warning_streak, cfg.critical_streak)
            if level:
                hits.append(Hit("diminishing_returns", level, streak,
                                f"{streak} continuations in a row each added less than "
                                f"{cfg.min_delta_tokens} output tokens, and less than the one "
                                f"before (last +{state.diminishing.last_delta})",
                                f"diminishing_returns:{state.diminishing.episode}"))
    if on.context_bloat:
        hits.extend(_bloat_hits(state, settings, event))
    return hits


def _bloat_hits(state: SessionState, settings: Settings, event: AssistantMessage) -> list[Hit]:
    cfg = settings.detection.context_bloat
    usage = event.usage
    prompt = usage.input + usage.cache_read + usage.cache_write
    measured = state.bloat.observe(prompt, usage.output, cfg.baseline_messages)
    if measured is None:
        return []
    factor, efficiency = measured
    state.bloat_factor = factor
    if prompt < cfg.min_input_tokens or efficiency > cfg.max_efficiency:
        return []
    level = level_for(factor, cfg.warning_factor, cfg.critical_factor)
    if not level:
        return []
    return [Hit("context_bloat", level, int(factor),
                f"prompt of {prompt:,} tokens is {factor:.1f}x the session's baseline while "
                f"output is {efficiency:.3%} of input (last reply {usage.output} tokens)",
                f"context_bloat:{state.bloat.episode}")]

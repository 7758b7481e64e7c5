"""clawwatch configuration sections: one frozen dataclass per YAML section, with defaults.

The defaults here are the built-in layer (the repo's ``config.yaml`` documents them key by
key). A field's ``metadata`` carries what the loader in ``monitor.config`` checks beyond
its type: ``min`` (a lower bound) and ``check`` (a function returning an error or None).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

DETECTORS = (
    "generic_repeat", "known_poll_no_progress", "ping_pong", "unknown_tool_repeat",
    "global_circuit_breaker", "argument_churn", "session_no_progress", "token_budget",
    "burn_rate", "diminishing_returns", "context_bloat", "turn_failures",
    "post_compaction_repeat", "iteration_budget", "hung_process", "gateway_loop_notice",
)
AGENT_SECTIONS = ("detection", "budgets", "actions", "alerts")
_TIME = re.compile(r"^([01]\d|2[0-3]):[0-5]\d$")


def _minimum(value: int) -> dict:
    return {"min": value}


def _check_regex(value: str) -> str | None:
    try:
        re.compile(value)
    except re.error as exc:
        return f"invalid regular expression {value!r}: {exc}"
    return None


def _check_time(value: str) -> str | None:
    return None if _TIME.match(value) else f"{value!r} is not a time of day as HH:MM"


def _check_trigger(value: str) -> str | None:
    detector, _, level = value.partition(":")
    if detector not in DETECTORS and detector != "*":
        return f"unknown detector {detector!r} (one of: {', '.join(DETECTORS)}, *)"
    if level and level not in ("warning", "critical"):
        return f"unknown level {level!r} (warning or critical)"
    return None


@dataclass(frozen=True)
class DetectorSwitches:
    generic_repeat: bool = True
    known_poll_no_progress: bool = True
    ping_pong: bool = True
    unknown_tool_repeat: bool = True
    global_circuit_breaker: bool = True
    argument_churn: bool = True
    session_no_progress: bool = True
    token_budget: bool = True
    burn_rate: bool = True
    diminishing_returns: bool = True
    context_bloat: bool = True
    turn_failures: bool = True
    post_compaction_repeat: bool = True
    iteration_budget: bool = True
    hung_process: bool = True
    gateway_loop_notice: bool = True


@dataclass(frozen=True)
class SessionNoProgressConfig:
    warning_threshold: int = field(default=10, metadata=_minimum(1))
    critical_threshold: int = field(default=20, metadata=_minimum(1))
    window: int = field(default=30, metadata=_minimum(1))


DEFAULT_VOLATILE_KEYS = (
    "durationMs", "elapsedMs", "pid", "ppid", "sessionId", "cwd", "startedAt", "endedAt",
    "createdAt", "updatedAt", "timestamp", "ts", "runId", "toolCallId", "messageId",
    "requestId", "traceId",
)


@dataclass(frozen=True)
class NormalisationConfig:
    builtin_patterns: bool = True
    extra_patterns: tuple[str, ...] = field(default=(), metadata={"check": _check_regex})
    volatile_keys: tuple[str, ...] = DEFAULT_VOLATILE_KEYS


@dataclass(frozen=True)
class BurnRateConfig:
    window_seconds: int = field(default=300, metadata=_minimum(1))
    min_messages: int = field(default=3, metadata=_minimum(1))
    warning_tokens_per_minute: int | None = None
    critical_tokens_per_minute: int | None = None
    eta_warning_minutes: float = 15.0
    eta_critical_minutes: float = 5.0


@dataclass(frozen=True)
class DiminishingReturnsConfig:
    min_delta_tokens: int = 500
    min_continuations: int = field(default=3, metadata=_minimum(1))
    warning_streak: int = field(default=2, metadata=_minimum(1))
    critical_streak: int = field(default=4, metadata=_minimum(1))
    continuation_prompt_max_chars: int = 40


@dataclass(frozen=True)
class ContextBloatConfig:
    baseline_messages: int = field(default=3, metadata=_minimum(1))
    warning_factor: float = 4.0
    critical_factor: float = 8.0
    min_input_tokens: int = 50_000
    max_efficiency: float = 0.002


@dataclass(frozen=True)
class TurnFailuresConfig:
    warning_threshold: int = field(default=3, metadata=_minimum(1))
    critical_threshold: int = field(default=5, metadata=_minimum(1))


@dataclass(frozen=True)
class PostCompactionConfig:
    window_calls: int = field(default=3, metadata=_minimum(1))
    warning_threshold: int = field(default=2, metadata=_minimum(1))
    critical_threshold: int = field(default=3, metadata=_minimum(1))


@dataclass(frozen=True)
class IterationBudgetConfig:
    warning_tool_calls: int = field(default=100, metadata=_minimum(1))
    critical_tool_calls: int = field(default=200, metadata=_minimum(1))


@dataclass(frozen=True)
class HungProcessConfig:
    warning_seconds: int = field(default=600, metadata=_minimum(1))
    critical_seconds: int = field(default=1800, metadata=_minimum(1))


@dataclass(frozen=True)
class DetectionConfig:
    enabled: bool = True
    history_size: int = field(default=30, metadata=_minimum(1))
    warning_threshold: int = field(default=10, metadata=_minimum(1))
    critical_threshold: int = field(default=20, metadata=_minimum(1))
    global_circuit_breaker_threshold: int = field(default=30, metadata=_minimum(1))
    unknown_tool_threshold: int = field(default=10, metadata=_minimum(1))
    warning_bucket_size: int = 10
    detectors: DetectorSwitches = DetectorSwitches()
    session_no_progress: SessionNoProgressConfig = SessionNoProgressConfig()
    normalisation: NormalisationConfig = NormalisationConfig()
    burn_rate: BurnRateConfig = BurnRateConfig()
    diminishing_returns: DiminishingReturnsConfig = DiminishingReturnsConfig()
    context_bloat: ContextBloatConfig = ContextBloatConfig()
    turn_failures: TurnFailuresConfig = TurnFailuresConfig()
    post_compaction_repeat: PostCompactionConfig = PostCompactionConfig()
    iteration_budget: IterationBudgetConfig = IterationBudgetConfig()
    hung_process: HungProcessConfig = HungProcessConfig()


@dataclass(frozen=True)
class BudgetsConfig:
    session_tokens: int | None = None
    agent_tokens: int | None = None
    nightly_tokens: int | None = None
    reset_time: str = field(default="00:00", metadata={"check": _check_time})
    warning_percent: float = 90.0
    critical_percent: float = 100.0


ActionKind = Literal["alert", "stop", "kill"]


@dataclass(frozen=True)
class ActionsConfig:
    mode: Literal["off", "dry-run", "auto"] = "off"
    on_critical: ActionKind = "alert"
    audit_log: str | None = None
    triggers: dict[str, ActionKind] = field(default_factory=dict,
                                            metadata={"check_key": _check_trigger})
    stop_method: Literal["abort", "stop-text", "cli"] = "abort"
    cooldown_seconds: float = 60.0
    max_actions_per_hour: int = 20
    kill_grace_seconds: float = 5.0


def _check_url(value: str) -> str | None:
    return None if value.strip() else "must not be empty"


@dataclass(frozen=True)
class WebhookConfig:
    url: str = field(default="", metadata={"check": _check_url, "required": True})
    template: str | None = None
    retries: int = 3
    timeout_seconds: float = 5.0
    min_level: Literal["warning", "critical"] = "critical"


@dataclass(frozen=True)
class AlertsConfig:
    bell: bool = True
    bell_repeat_seconds: float = 0.0
    desktop_notifications: bool = False
    webhooks: tuple[WebhookConfig, ...] = ()


@dataclass(frozen=True)
class UiConfig:
    theme: str = "dark"


@dataclass(frozen=True)
class GatewayConfig:
    url: str | None = None
    token_env: str = "OPENCLAW_GATEWAY_TOKEN"


SECTIONS: dict[str, type] = {
    "detection": DetectionConfig, "budgets": BudgetsConfig, "actions": ActionsConfig,
    "alerts": AlertsConfig, "ui": UiConfig, "gateway": GatewayConfig,
}

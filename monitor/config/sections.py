"""clawwatch configuration sections: one frozen dataclass per YAML section, with defaults.

The defaults here are the built-in layer (the repo's ``config.yaml`` documents them key by
key). A field's ``metadata`` carries what the loader (``monitor.config.schema``) checks beyond
its type: ``min`` and ``max`` (inclusive bounds: every number has both, so no value can
overflow a C long, a ``deque`` length or ``time.sleep``; floats must also be finite) and
``check`` (a function returning an error or None).
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


# Sane upper bounds: far above any real setting, far below 2**63.
COUNT_MAX = 1_000_000              # repeats, streaks, thresholds, messages
WINDOW_MAX = 10_000                # lengths of per-session windows kept in memory
TOKENS_MAX = 10**15                # token counts and budgets
SECONDS_MAX = 366 * 24 * 3600      # durations (a year)
FACTOR_MAX = 1_000_000.0           # ratios and factors
PERCENT_MAX = 10_000.0             # percentages of a budget
REGEX_MAX_CHARS = 1000             # one extra normalisation pattern


def _range(low: float, high: float) -> dict:
    return {"min": low, "max": high}


def _minimum(value: int) -> dict:
    """A count of at least ``value`` (and at most ``COUNT_MAX``)."""
    return _range(value, COUNT_MAX)


def _check_regex(value: str) -> str | None:
    if len(value) > REGEX_MAX_CHARS:
        return f"regular expression longer than {REGEX_MAX_CHARS} characters"
    try:
        re.compile(value)
    except (re.error, RecursionError, OverflowError, ValueError) as exc:
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
    window: int = field(default=30, metadata=_range(1, WINDOW_MAX))


DEFAULT_VOLATILE_KEYS = (
    "durationMs", "elapsedMs", "pid", "ppid", "sessionId", "cwd", "startedAt", "endedAt",
    "createdAt", "updatedAt", "timestamp", "ts", "runId", "toolCallId", "messageId",
    "requestId", "traceId",
)


@dataclass(frozen=True)
class NormalisationConfig:
    builtin_patterns: bool = True
    extra_patterns: tuple[str, ...] = field(default=(), metadata={"check": _check_regex,
                                                                  "max_items": 200})
    volatile_keys: tuple[str, ...] = DEFAULT_VOLATILE_KEYS


@dataclass(frozen=True)
class BurnRateConfig:
    window_seconds: int = field(default=300, metadata=_range(1, SECONDS_MAX))
    min_messages: int = field(default=3, metadata=_minimum(1))
    warning_tokens_per_minute: int | None = field(default=None, metadata=_range(0, TOKENS_MAX))
    critical_tokens_per_minute: int | None = field(default=None,
                                                   metadata=_range(0, TOKENS_MAX))
    eta_warning_minutes: float = field(default=15.0, metadata=_range(0, SECONDS_MAX / 60))
    eta_critical_minutes: float = field(default=5.0, metadata=_range(0, SECONDS_MAX / 60))


@dataclass(frozen=True)
class DiminishingReturnsConfig:
    min_delta_tokens: int = field(default=500, metadata=_range(0, TOKENS_MAX))
    min_continuations: int = field(default=3, metadata=_minimum(1))
    warning_streak: int = field(default=2, metadata=_minimum(1))
    critical_streak: int = field(default=4, metadata=_minimum(1))
    continuation_prompt_max_chars: int = field(default=40, metadata=_range(0, COUNT_MAX))


@dataclass(frozen=True)
class ContextBloatConfig:
    baseline_messages: int = field(default=3, metadata=_range(1, WINDOW_MAX))
    warning_factor: float = field(default=4.0, metadata=_range(0, FACTOR_MAX))
    # None: no critical. A long productive run grows its prompt too; the limit is the user's.
    critical_factor: float | None = field(default=None, metadata=_range(0, FACTOR_MAX))
    min_input_tokens: int = field(default=50_000, metadata=_range(0, TOKENS_MAX))
    max_efficiency: float = field(default=0.002, metadata=_range(0, FACTOR_MAX))


@dataclass(frozen=True)
class TurnFailuresConfig:
    warning_threshold: int = field(default=3, metadata=_minimum(1))
    critical_threshold: int = field(default=5, metadata=_minimum(1))


@dataclass(frozen=True)
class PostCompactionConfig:
    window_calls: int = field(default=3, metadata=_range(1, WINDOW_MAX))
    warning_threshold: int = field(default=2, metadata=_minimum(1))
    critical_threshold: int = field(default=3, metadata=_minimum(1))


@dataclass(frozen=True)
class IterationBudgetConfig:
    warning_tool_calls: int = field(default=100, metadata=_minimum(1))
    # None: no critical. A long productive run is not a loop; the limit is the user's to set.
    critical_tool_calls: int | None = field(default=None, metadata=_minimum(1))


@dataclass(frozen=True)
class HungProcessConfig:
    warning_seconds: int = field(default=600, metadata=_range(1, SECONDS_MAX))
    critical_seconds: int = field(default=1800, metadata=_range(1, SECONDS_MAX))


@dataclass(frozen=True)
class DetectionConfig:
    enabled: bool = True
    history_size: int = field(default=30, metadata=_range(1, WINDOW_MAX))
    warning_threshold: int = field(default=10, metadata=_minimum(1))
    critical_threshold: int = field(default=20, metadata=_minimum(1))
    global_circuit_breaker_threshold: int = field(default=30, metadata=_minimum(1))
    unknown_tool_threshold: int = field(default=10, metadata=_minimum(1))
    warning_bucket_size: int = field(default=10, metadata=_range(0, COUNT_MAX))
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
    session_tokens: int | None = field(default=None, metadata=_range(0, TOKENS_MAX))
    agent_tokens: int | None = field(default=None, metadata=_range(0, TOKENS_MAX))
    nightly_tokens: int | None = field(default=None, metadata=_range(0, TOKENS_MAX))
    reset_time: str = field(default="00:00", metadata={"check": _check_time})
    warning_percent: float = field(default=90.0, metadata=_range(0, PERCENT_MAX))
    critical_percent: float = field(default=100.0, metadata=_range(0, PERCENT_MAX))


ActionKind = Literal["alert", "stop", "kill"]


def _check_file_name(value: str) -> str | None:
    """A path a file can have: a NUL or a lone surrogate (YAML's ``"\\0"``, ``"\\ud800"``)
    is refused by every system call, so a file there could never be written."""
    from monitor.sources.transcript_names import nameable

    if nameable(value):
        return None
    return ("no file can have this name (it holds a NUL or a lone surrogate); give a path, "
            "or leave it out for the default")


@dataclass(frozen=True)
class ActionsConfig:
    mode: Literal["off", "dry-run", "auto"] = "off"
    on_critical: ActionKind = "alert"
    # None: on_critical. Loop detectors' criticals / budget detectors' criticals (see
    # monitor.detect.findings.LOOP_DETECTORS, BUDGET_DETECTORS).
    on_loop_critical: ActionKind | None = None
    on_budget_critical: ActionKind | None = None
    audit_log: str | None = field(default=None, metadata={"check": _check_file_name})
    triggers: dict[str, ActionKind] = field(default_factory=dict,
                                            metadata={"check_key": _check_trigger})
    stop_method: Literal["abort", "stop-text", "cli"] = "abort"
    cooldown_seconds: float = field(default=60.0, metadata=_range(0, SECONDS_MAX))
    max_actions_per_hour: int = field(default=20, metadata=_range(0, COUNT_MAX))
    kill_grace_seconds: float = field(default=5.0, metadata=_range(0, 3600))


def _check_url(value: str) -> str | None:
    """A webhook URL clawwatch can POST to: ``http(s)://HOST[:PORT]/...``. The message never
    holds the URL, whose path or query is often the hook's secret."""
    from urllib.parse import urlsplit

    if not value.strip():
        return "must not be empty"
    form = "give http://HOST[:PORT]/PATH or https://…"
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        return f"not a URL clawwatch can post to (a bad host or port); {form}"
    if parts.scheme.lower() not in ("http", "https"):
        return f"not http:// or https://; {form}"
    if not parts.hostname or port == 0 or any(c.isspace() for c in value):
        return f"no host, or a bad port or character; {form}"
    return None


@dataclass(frozen=True)
class WebhookConfig:
    url: str = field(default="", metadata={"check": _check_url, "required": True})
    template: str | None = None
    retries: int = field(default=3, metadata=_range(0, 100))
    timeout_seconds: float = field(default=5.0, metadata=_range(0, 3600))
    min_level: Literal["warning", "critical"] = "critical"


@dataclass(frozen=True)
class AlertsConfig:
    bell: bool = True
    bell_repeat_seconds: float = field(default=0.0, metadata=_range(0, SECONDS_MAX))
    desktop_notifications: bool = False
    webhooks: tuple[WebhookConfig, ...] = ()


@dataclass(frozen=True)
class UiConfig:
    theme: str = "dark"


def _check_gateway_url(value: str) -> str | None:
    from monitor.act.gateway_url import gateway_url_problem

    return gateway_url_problem(value) if value else None


@dataclass(frozen=True)
class GatewayConfig:
    url: str | None = field(default=None, metadata={"check": _check_gateway_url})
    token_env: str = "OPENCLAW_GATEWAY_TOKEN"


def _check_listen(value: str | None) -> str | None:
    from monitor.metrics_server import check_listen

    return check_listen(value)


@dataclass(frozen=True)
class MetricsConfig:
    """``--metrics``: the Prometheus endpoint of ``watch --headless`` / ``demo --headless``."""

    listen: str | None = field(default=None, metadata={"check": _check_listen})
    max_sessions: int = field(default=500, metadata=_minimum(1))
    session_lookback_seconds: float = field(default=900.0, metadata=_minimum(1))


@dataclass(frozen=True)
class HistoryConfig:
    """How much of the past the board and ``watch`` run the detectors on."""

    #: Seconds: transcript events older than this are counted (tokens, tool calls) but not
    #: detected on, unless the index says their session is running; null: all history.
    active_within: float | None = field(default=86_400.0, metadata=_range(0, 10**10))
    #: Seconds: a session with no event for this long (and not running by the index)
    #: hibernates: its detector state shrinks to a summary that keeps its call numbering,
    #: token total and raised levels, and wakes on its next event; null: never.
    hibernate_after: float | None = field(default=1800.0, metadata=_range(0, 10**10))
    #: Processes that read counted history beside the first scan (legacy transcripts,
    #: SQLite sessions); null: one fewer than the cores (at most 3); 0: none.
    reader_processes: int | None = field(default=None, metadata=_range(0, 16))


SECTIONS: dict[str, type] = {
    "detection": DetectionConfig, "budgets": BudgetsConfig, "actions": ActionsConfig,
    "alerts": AlertsConfig, "ui": UiConfig, "gateway": GatewayConfig,
    "metrics": MetricsConfig, "history": HistoryConfig,
}

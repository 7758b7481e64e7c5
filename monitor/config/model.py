"""The effective config: one typed section per YAML section, and each agent's view of it
(``agents.<agentId>.<section>`` merged field by field over the global sections)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from monitor.config.schema import ConfigError, build_sections
from monitor.config.sections import (
    ActionsConfig,
    AlertsConfig,
    BudgetsConfig,
    DetectionConfig,
    GatewayConfig,
    HistoryConfig,
    MetricsConfig,
    UiConfig,
)

DEFAULTS_LABEL = "(built-in defaults)"


@dataclass(frozen=True)
class Config:
    detection: DetectionConfig = field(default_factory=DetectionConfig)
    budgets: BudgetsConfig = field(default_factory=BudgetsConfig)
    actions: ActionsConfig = field(default_factory=ActionsConfig)
    alerts: AlertsConfig = field(default_factory=AlertsConfig)
    ui: UiConfig = field(default_factory=UiConfig)
    gateway: GatewayConfig = field(default_factory=GatewayConfig)
    metrics: MetricsConfig = field(default_factory=MetricsConfig)
    history: HistoryConfig = field(default_factory=HistoryConfig)
    agents: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    source: str = DEFAULTS_LABEL
    warnings: tuple[str, ...] = ()
    _raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)
    _per_agent: dict = field(default_factory=dict, repr=False, compare=False)

    def for_agent(self, agent_id: str | None) -> Config:
        """This config with ``agents.<agent_id>`` merged over it (self when there is none)."""
        if not agent_id or agent_id not in self.agents:
            return self
        cached = self._per_agent.get(agent_id)
        if cached is None:
            merged = deep_merge(self._raw, dict(self.agents[agent_id]))
            errors: list[str] = []
            sections, warnings = build_sections(merged, self.source, errors,
                                                f"agents.{agent_id}.")
            if errors:
                raise ConfigError(errors)
            cached = dataclasses.replace(self, **sections, agents={}, warnings=tuple(warnings),
                                         _per_agent={})
            self._per_agent[agent_id] = cached
        return cached


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


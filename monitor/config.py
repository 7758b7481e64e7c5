"""clawwatch configuration: layering, validation and per-agent overrides of the typed
sections in ``monitor.config_sections``.

Layers, lowest first: built-in defaults (the sections' dataclass defaults, which
the repo's ``config.yaml`` documents key by key) → one YAML file (``--config
FILE`` → ``$CLAWWATCH_CONFIG`` → ``~/.config/clawwatch/config.yaml``) →
environment variables ``CLAWWATCH_<SECTION>__<KEY>[__<KEY>…]`` whose values are
YAML scalars. ``agents.<agentId>.<section>`` overrides are merged field by
field (nested maps too) over the global sections. Every error is reported as
``FILE:dotted.key: message``.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import sys
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from monitor.config_sections import (
    AGENT_SECTIONS,
    SECTIONS,
    ActionsConfig,
    AlertsConfig,
    BudgetsConfig,
    DetectionConfig,
    GatewayConfig,
    UiConfig,
)

DEFAULTS_LABEL = "(built-in defaults)"


class ConfigError(Exception):
    """A config that cannot be used; ``errors`` holds every ``FILE:key: message`` line."""

    def __init__(self, errors: list[str]) -> None:
        errors = [_one_line(error) for error in errors]
        super().__init__("\n".join(errors))
        self.errors = errors


def _one_line(text: str) -> str:
    """``text`` with control characters escaped: a YAML key can hold a newline, and each
    error must stay one ``FILE:key: message`` line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


@dataclass(frozen=True)
class Config:
    detection: DetectionConfig = field(default_factory=DetectionConfig)
    budgets: BudgetsConfig = field(default_factory=BudgetsConfig)
    actions: ActionsConfig = field(default_factory=ActionsConfig)
    alerts: AlertsConfig = field(default_factory=AlertsConfig)
    ui: UiConfig = field(default_factory=UiConfig)
    gateway: GatewayConfig = field(default_factory=GatewayConfig)
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
            merged = _deep_merge(self._raw, dict(self.agents[agent_id]))
            errors: list[str] = []
            sections, warnings = _build_sections(merged, self.source, errors,
                                                 f"agents.{agent_id}.")
            if errors:
                raise ConfigError(errors)
            cached = dataclasses.replace(self, **sections, agents={}, warnings=tuple(warnings),
                                         _per_agent={})
            self._per_agent[agent_id] = cached
        return cached


# --------------------------------------------------------------------------- validation

def _type_hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _describe(hint: Any) -> str:
    origin = typing.get_origin(hint)
    if origin is Literal:
        return "one of: " + ", ".join(str(v) for v in typing.get_args(hint))
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(hint) if a is not type(None)]
        return _describe(inner[0]) + " or null"
    if origin is tuple:
        return "a list"
    if origin is dict:
        return "a mapping"
    if dataclasses.is_dataclass(hint):
        return "a mapping"
    return {bool: "true or false", int: "an integer", float: "a number",
            str: "a string"}.get(hint, str(hint))


def _coerce(value: Any, hint: Any, key: str, label: str, errors: list[str],
            meta: Mapping[str, Any]) -> Any:
    def fail(message: str) -> None:
        errors.append(f"{label}:{key}: {message}")

    origin = typing.get_origin(hint)
    if dataclasses.is_dataclass(hint):
        if not isinstance(value, dict):
            fail(f"must be a mapping, got {type(value).__name__}")
            return hint()
        return _build(hint, value, key, label, errors)
    if origin in (typing.Union, types.UnionType):
        if value is None:
            return None
        inner = next(a for a in typing.get_args(hint) if a is not type(None))
        return _coerce(value, inner, key, label, errors, meta)
    if origin is Literal:
        options = typing.get_args(hint)
        if value is False and "off" in options:
            value = "off"
        if value not in options:
            fail(f"must be {_describe(hint)}; got {value!r}")
            return options[0]
        return value
    if origin is tuple:
        item_hint = typing.get_args(hint)[0]
        if not isinstance(value, list):
            fail(f"must be a list, got {type(value).__name__}")
            return ()
        return tuple(_coerce(item, item_hint, f"{key}[{index}]", label, errors, meta)
                     for index, item in enumerate(value))
    if origin is dict:
        value_hint = typing.get_args(hint)[1]
        if not isinstance(value, dict):
            fail(f"must be a mapping, got {type(value).__name__}")
            return {}
        result = {}
        for item_key, item in value.items():
            item_key = str(item_key)
            problem = meta.get("check_key", lambda _k: None)(item_key)
            if problem:
                errors.append(f"{label}:{key}.{item_key}: {problem}")
                continue
            result[item_key] = _coerce(item, value_hint, f"{key}.{item_key}", label, errors, {})
        return result
    if hint is bool:
        if not isinstance(value, bool):
            fail(f"must be true or false, got {value!r}")
            return False
        return value
    if hint in (int, float):
        ok = isinstance(value, (int, float)) if hint is float else isinstance(value, int)
        if isinstance(value, bool) or not ok:
            fail(f"must be {_describe(hint)}, got {value!r}")
            return hint(0)
        minimum = meta.get("min", 0)
        if value < minimum:
            fail(f"must be >= {minimum}, got {value!r}")
        return hint(value)
    if hint is str:
        if not isinstance(value, str):
            fail(f"must be a string, got {value!r}")
            return ""
        problem = meta.get("check", lambda _v: None)(value)
        if problem:
            fail(problem)
        return value
    return value


def _build(cls: type, raw: Mapping[str, Any], path: str, label: str, errors: list[str]) -> Any:
    hints = _type_hints(cls)
    known = {f.name: f for f in dataclasses.fields(cls)}
    values = {}
    for key, value in raw.items():
        dotted = f"{path}.{key}" if path else str(key)
        if key not in known:
            close = difflib.get_close_matches(str(key), list(known), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            errors.append(f"{label}:{dotted}: unknown key{hint}")
            continue
        meta = known[key].metadata
        if meta.get("check") and typing.get_origin(hints[key]) is tuple:
            for index, item in enumerate(value if isinstance(value, list) else []):
                problem = meta["check"](item) if isinstance(item, str) else None
                if problem:
                    errors.append(f"{label}:{dotted}[{index}]: {problem}")
        values[key] = _coerce(value, hints[key], dotted, label, errors,
                              {k: v for k, v in meta.items()
                               if typing.get_origin(hints[key]) is not tuple})
    for name, spec in known.items():
        if spec.metadata.get("required") and name not in raw:
            errors.append(f"{label}:{path}.{name}: required")
    return cls(**values)


def _clamp_pair(section: Any, low: str, high: str, where: str, label: str,
                warnings: list[str], step: float = 1) -> Any:
    low_value, high_value = getattr(section, low), getattr(section, high)
    if high_value <= low_value:
        fixed = low_value + step
        warnings.append(f"{label}:{where}.{high}: {high_value} is not above {low} "
                        f"({low_value}); using {fixed}")
        section = dataclasses.replace(section, **{high: type(high_value)(fixed)})
    return section


def _clamp(sections: dict[str, Any], label: str, prefix: str) -> list[str]:
    warnings: list[str] = []
    det = sections["detection"]
    where = f"{prefix}detection"
    det = _clamp_pair(det, "warning_threshold", "critical_threshold", where, label, warnings)
    det = _clamp_pair(det, "critical_threshold", "global_circuit_breaker_threshold", where,
                      label, warnings)
    pairs = {
        "session_no_progress": ("warning_threshold", "critical_threshold", 1),
        "turn_failures": ("warning_threshold", "critical_threshold", 1),
        "post_compaction_repeat": ("warning_threshold", "critical_threshold", 1),
        "iteration_budget": ("warning_tool_calls", "critical_tool_calls", 1),
        "diminishing_returns": ("warning_streak", "critical_streak", 1),
        "context_bloat": ("warning_factor", "critical_factor", 1.0),
    }
    for name, (low, high, step) in pairs.items():
        sub = _clamp_pair(getattr(det, name), low, high, f"{where}.{name}", label, warnings,
                          step)
        det = dataclasses.replace(det, **{name: sub})
    sections["detection"] = det
    budgets = sections["budgets"]
    if budgets.critical_percent < budgets.warning_percent:
        warnings.append(f"{label}:{prefix}budgets.critical_percent: "
                        f"{budgets.critical_percent} is below warning_percent "
                        f"({budgets.warning_percent}); using {budgets.warning_percent}")
        sections["budgets"] = dataclasses.replace(budgets,
                                                  critical_percent=budgets.warning_percent)
    return warnings


def _build_sections(raw: Mapping[str, Any], label: str, errors: list[str], prefix: str = ""
                    ) -> tuple[dict[str, Any], list[str]]:
    sections = {}
    for name, cls in SECTIONS.items():
        value = raw.get(name, {})
        if value is None:
            value = {}
        if not isinstance(value, dict):
            errors.append(f"{label}:{prefix}{name}: must be a mapping")
            value = {}
        sections[name] = _build(cls, value, f"{prefix}{name}", label, errors)
    return sections, _clamp(sections, label, prefix)


def _validate_layer(raw: Any, label: str, errors: list[str]) -> dict[str, Any]:
    """Check one layer on its own so each error names where it came from."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        errors.append(f"{label}:(root): must be a mapping of sections")
        return {}
    for key, value in raw.items():
        if key == "agents":
            _validate_agents(value, label, errors)
        elif key not in SECTIONS:
            close = difflib.get_close_matches(str(key), [*SECTIONS, "agents"], n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            errors.append(f"{label}:{key}: unknown section{hint}")
        elif value is not None and not isinstance(value, dict):
            errors.append(f"{label}:{key}: must be a mapping")
        else:
            _build(SECTIONS[key], value or {}, key, label, errors)
    return raw


def _validate_agents(value: Any, label: str, errors: list[str]) -> None:
    if value is None:
        return
    if not isinstance(value, dict):
        errors.append(f"{label}:agents: must be a mapping of agent ids")
        return
    for agent_id, override in value.items():
        if override is None:
            continue
        if not isinstance(override, dict):
            errors.append(f"{label}:agents.{agent_id}: must be a mapping")
            continue
        for section, body in override.items():
            if section not in AGENT_SECTIONS:
                errors.append(f"{label}:agents.{agent_id}.{section}: not overridable per agent"
                              f" (one of: {', '.join(AGENT_SECTIONS)})")
            elif body is not None and not isinstance(body, dict):
                errors.append(f"{label}:agents.{agent_id}.{section}: must be a mapping")
            else:
                _build(SECTIONS[section], body or {}, f"agents.{agent_id}.{section}", label,
                       errors)


def _deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


# ------------------------------------------------------------------------------ loading

def _env_layers(env: Mapping[str, str]) -> list[tuple[str, dict[str, Any]]]:
    layers = []
    for name in sorted(env):
        if not name.startswith("CLAWWATCH_") or "__" not in name:
            continue
        parts = [p.lower() for p in name[len("CLAWWATCH_"):].split("__")]
        if any(not p for p in parts):
            continue
        try:
            value = yaml.safe_load(env[name]) if env[name].strip() else None
        except yaml.YAMLError:
            value = env[name]
        nested: dict[str, Any] = value
        for part in reversed(parts):
            nested = {part: nested}
        layers.append((f"${name}", nested))
    return layers


def resolve_config_path(path: str | None, env: Mapping[str, str] = os.environ
                        ) -> tuple[str | None, bool]:
    """(path to read, whether it must exist): ``--config`` → ``$CLAWWATCH_CONFIG`` → home."""
    if path:
        return path, True
    if env.get("CLAWWATCH_CONFIG"):
        return env["CLAWWATCH_CONFIG"], True
    home = env.get("HOME") or os.path.expanduser("~")
    return str(Path(home) / ".config" / "clawwatch" / "config.yaml"), False


def _read_file(path: str, required: bool, errors: list[str]) -> Any:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        if required:
            errors.append(f"{path}:(file): no such file")
        return None
    except OSError as exc:
        errors.append(f"{path}:(file): cannot read: {exc.strerror or exc}")
        return None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        errors.append(f"{path}:(yaml): invalid YAML{where}: {problem}")
        return None


def load_config(path: str | None = None, env: Mapping[str, str] = os.environ) -> Config:
    """The effective config; raises ``ConfigError`` listing every problem found."""
    errors: list[str] = []
    file_path, required = resolve_config_path(path, env)
    label = DEFAULTS_LABEL
    merged: dict[str, Any] = {}
    if file_path:
        raw = _read_file(file_path, required, errors)
        if raw is not None or required:
            label = file_path
        merged = _deep_merge(merged, _validate_layer(raw, file_path, errors))
    for env_label, layer in _env_layers(env):
        merged = _deep_merge(merged, _validate_layer(layer, env_label, errors))
    if errors:
        raise ConfigError(errors)
    sections, warnings = _build_sections(merged, label, errors)
    agents = {str(k): v or {} for k, v in (merged.get("agents") or {}).items()}
    config = Config(**sections, agents=agents, source=label, warnings=tuple(warnings),
                    _raw={k: v for k, v in merged.items() if k != "agents"})
    for agent_id in agents:
        try:
            warnings.extend(config.for_agent(agent_id).warnings)
        except ConfigError as exc:
            errors.extend(exc.errors)
    if errors:
        raise ConfigError(errors)
    return dataclasses.replace(config, warnings=tuple(dict.fromkeys(warnings)),
                               _per_agent={})


def check_config_main(path: str | None, env: Mapping[str, str] = os.environ,
                      out=None) -> int:
    """``clawwatch config check [FILE]``: 0 and ``OK: FILE``, or 2 and every error."""
    out = out or sys.stdout
    try:
        config = load_config(path, env)
    except ConfigError as exc:
        for line in exc.errors:
            print(line, file=out)
        return 2
    for line in config.warnings:
        print(f"warning: {line}", file=out)
    print(f"OK: {config.source}", file=out)
    return 0

"""The schema check of clawwatch's config: raw YAML mappings (one layer, or all layers
merged) checked and coerced into the typed sections of :mod:`monitor.config.sections`.

Every error is collected as ``LABEL:dotted.key: message`` (``LABEL`` names the file or the
``$CLAWWATCH_*`` variable the value came from) and raised at once as ``ConfigError``.
Numbers must be finite and within their field's ``min``/``max``; an unknown key is an
error that suggests the closest known one; a pair of levels out of order (a critical not
above its warning) is fixed with a warning, or is an error when its bound leaves no room.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import math
import re
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal

from monitor.config.sections import AGENT_SECTIONS, SECTIONS

MAX_ERROR_CHARS = 1000       # one error line; a hostile key or value cannot flood the terminal


class ConfigError(Exception):
    """A config that cannot be used; ``errors`` holds every ``FILE:key: message`` line."""

    def __init__(self, errors: list[str]) -> None:
        errors = [_cap(_one_line(error)) for error in errors]
        super().__init__("\n".join(errors))
        self.errors = errors


def _one_line(text: str) -> str:
    """``text`` with control characters escaped: a YAML key can hold a newline, and each
    error must stay one ``FILE:key: message`` line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _cap(text: str) -> str:
    if len(text) <= MAX_ERROR_CHARS:
        return text
    return f"{text[:MAX_ERROR_CHARS]}… ({len(text) - MAX_ERROR_CHARS} more characters)"


_PLAIN_KEY = re.compile(r"[A-Za-z0-9_.:-]{1,64}")


def _shown_key(key: Any) -> str:
    """A key from the config as an error shows it: redacted, for a key is data too (a webhook
    URL with its password, mis-indented into a key). A plain name is shown as it is, without
    loading redaction."""
    text = str(key)
    if _PLAIN_KEY.fullmatch(text):
        return text
    from monitor.redaction import redacted_start

    return redacted_start(text, MAX_ERROR_CHARS)


def _show(value: Any, limit: int = 80) -> str:
    """``repr(value)`` redacted, then cut to ``limit`` characters (a value may be a 1 MiB
    string, or a secret in the wrong place: a webhook URL with a password written as a
    list). Redaction is imported here, for a config with an error only."""
    from monitor.redaction import redacted_start

    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**limit:
        return f"an integer of {len(str(abs(value)))} digits"
    text = repr(value) if not isinstance(value, (dict, list)) or len(value) < 50 \
        else f"a {type(value).__name__} of {len(value)} items"
    text = redacted_start(text, limit)
    return text if len(text) <= limit else text[:limit] + "…"


# --------------------------------------------------------------------------- validation

@functools.cache
def _type_hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)     # slow; a config with many agents asks it often


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
            fail(f"must be {_describe(hint)}; got {_show(value)}")
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
            item_path = f"{key}.{_shown_key(item_key)}"
            problem = meta.get("check_key", lambda _k: None)(item_key)
            if problem:
                errors.append(f"{label}:{item_path}: {problem}")
                continue
            result[item_key] = _coerce(item, value_hint, item_path, label, errors, {})
        return result
    if hint is bool:
        if not isinstance(value, bool):
            fail(f"must be true or false, got {_show(value)}")
            return False
        return value
    if hint in (int, float):
        ok = isinstance(value, (int, float)) if hint is float else isinstance(value, int)
        if isinstance(value, bool) or not ok:
            fail(f"must be {_describe(hint)}, got {_show(value)}")
            return hint(0)
        if isinstance(value, float) and not math.isfinite(value):
            fail(f"must be a finite number, got {value!r}")
            return hint(meta.get("min", 0))
        minimum, maximum = meta.get("min", 0), meta.get("max")
        if value < minimum:
            fail(f"must be >= {_number(minimum)}, got {_show(value)}")
            return hint(minimum)
        if maximum is not None and value > maximum:
            fail(f"must be <= {_number(maximum)}, got {_show(value)}")
            return hint(maximum)
        return hint(value)
    if hint is str:
        if not isinstance(value, str):
            fail(f"must be a string, got {_show(value)}")
            return ""
        problem = meta.get("check", lambda _v: None)(value)
        if problem:
            fail(problem)
        return value
    return value


def _number(bound: float) -> str:
    """A bound as written in config.yaml: ``1000000``, ``0.5``, ``527040``."""
    return str(int(bound)) if float(bound).is_integer() else str(bound)


def _build(cls: type, raw: Mapping[str, Any], path: str, label: str, errors: list[str]) -> Any:
    hints = _type_hints(cls)
    known = {f.name: f for f in dataclasses.fields(cls)}
    values = {}
    for key, value in raw.items():
        dotted = f"{path}.{key}" if path else str(key)
        if key not in known:
            close = difflib.get_close_matches(str(key)[:100], list(known), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            shown = f"{path}.{_shown_key(key)}" if path else _shown_key(key)
            errors.append(f"{label}:{shown}: unknown key{hint}")
            continue
        meta = known[key].metadata
        limit = meta.get("max_items")
        if limit is not None and isinstance(value, list) and len(value) > limit:
            errors.append(f"{label}:{dotted}: more than {limit} items ({len(value)})")
            continue
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
                warnings: list[str], step: float = 1, errors: list[str] | None = None) -> Any:
    low_value, high_value = getattr(section, low), getattr(section, high)
    if low_value is None or high_value is None:  # a level that is off (e.g. null critical)
        return section
    if high_value <= low_value:
        fixed = low_value + step
        maximum = _field_meta(section, high).get("max")
        if maximum is not None and fixed > maximum:   # no room: an error, not a clamp
            if errors is not None:
                errors.append(f"{label}:{where}.{low}: {low_value} leaves no room for {high} "
                              f"above it (at most {_number(maximum)})")
            return section
        warnings.append(f"{label}:{where}.{high}: {high_value} is not above {low} "
                        f"({low_value}); using {fixed}")
        section = dataclasses.replace(section, **{high: type(high_value)(fixed)})
    return section


def _field_meta(section: Any, name: str) -> Mapping[str, Any]:
    return next(f.metadata for f in dataclasses.fields(section) if f.name == name)


def _clamp(sections: dict[str, Any], label: str, prefix: str,
           errors: list[str] | None = None) -> list[str]:
    warnings: list[str] = []
    det = sections["detection"]
    where = f"{prefix}detection"
    det = _clamp_pair(det, "warning_threshold", "critical_threshold", where, label, warnings,
                      errors=errors)
    det = _clamp_pair(det, "critical_threshold", "global_circuit_breaker_threshold", where,
                      label, warnings, errors=errors)
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
                          step, errors)
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


def build_sections(raw: Mapping[str, Any], label: str, errors: list[str], prefix: str = ""
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
    return sections, _clamp(sections, label, prefix, errors)


def validate_layer(raw: Any, label: str, errors: list[str]) -> dict[str, Any]:
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
            close = difflib.get_close_matches(str(key)[:100], [*SECTIONS, "agents"], n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            errors.append(f"{label}:{_shown_key(key)}: unknown section{hint}")
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
        where = f"agents.{_shown_key(agent_id)}"
        if not isinstance(override, dict):
            errors.append(f"{label}:{where}: must be a mapping")
            continue
        for section, body in override.items():
            if section not in AGENT_SECTIONS:
                errors.append(f"{label}:{where}.{_shown_key(section)}: not overridable per "
                              f"agent (one of: {', '.join(AGENT_SECTIONS)})")
            elif body is not None and not isinstance(body, dict):
                errors.append(f"{label}:{where}.{section}: must be a mapping")
            else:
                _build(SECTIONS[section], body or {}, f"{where}.{section}", label, errors)

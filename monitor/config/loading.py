"""Loading clawwatch's config: the YAML file and the ``$CLAWWATCH_*`` variables, layered
over the built-in defaults, each layer checked on its own so every error names its source.

Any input is refused cheaply rather than loaded at any cost (``monitor.safe_yaml``): the
file must be a regular file of at most 1 MiB of UTF-8; YAML nesting, nodes and aliases
are bounded; duplicate keys are errors.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from monitor import safe_yaml
from monitor.config.env_names import misnamed_variables, setting_parts
from monitor.config.model import DEFAULTS_LABEL, Config, deep_merge
from monitor.config.schema import ConfigError, build_sections, validate_layer


def _env_layers(env: Mapping[str, str], errors: list[str] | None = None
                ) -> list[tuple[str, dict[str, Any]]]:
    """One layer per ``CLAWWATCH_<SECTION>__<KEY>…`` variable. Its value is read as YAML
    under the same bounds as the file; a value that is not YAML at all is taken as a
    string (``must be …`` errors follow), a refused one (a bound, a duplicate key, not
    UTF-8) is an error of its own."""
    layers = []
    for name in sorted(env):
        parts = setting_parts(name)
        if not parts or not all(parts):     # no setting's name (``misnamed_variables``)
            continue
        try:
            value = safe_yaml.load_yaml(env[name]) if env[name].strip() else None
        except safe_yaml.YamlRefused as exc:
            key, message = safe_yaml.describe_yaml_error(exc)
            dotted = ".".join(parts) + ("" if key == "(yaml)" else
                                        ("" if key.startswith("[") else ".") + key)
            if errors is not None:
                errors.append(f"${name}:{dotted}: {message}")
            continue
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
    """The parsed file, or None with an error: it must be a regular file (a FIFO or a
    device is refused without blocking) of at most 1 MiB of UTF-8, and bounded YAML."""
    try:
        text = safe_yaml.decode_utf8(safe_yaml.read_regular_file(path))
    except FileNotFoundError:
        if required:
            errors.append(f"{path}:(file): no such file")
        return None
    except OSError as exc:
        errors.append(f"{path}:(file): cannot read: {exc.strerror or exc}")
        return None
    except safe_yaml.InputRefused as exc:
        errors.append(f"{path}:(file): {exc.message}")
        return None
    try:
        return safe_yaml.load_yaml(text)
    except yaml.YAMLError as exc:
        key, message = safe_yaml.describe_yaml_error(exc)
        errors.append(f"{path}:{key}: {message}")
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
        merged = deep_merge(merged, validate_layer(raw, file_path, errors))
    for env_label, layer in _env_layers(env, errors):
        merged = deep_merge(merged, validate_layer(layer, env_label, errors))
    name_errors, name_warnings = misnamed_variables(env)
    errors.extend(name_errors)
    if errors:
        raise ConfigError(errors)
    sections, warnings = build_sections(merged, label, errors)
    warnings = name_warnings + warnings
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
    from monitor.display import printable

    out = out or sys.stdout
    try:
        config = load_config(path, env)
    except ConfigError as exc:
        for line in exc.errors:
            print(printable(line), file=out)
        return 2
    for line in config.warnings:
        print(printable(f"warning: {line}"), file=out)
    print(printable(f"OK: {config.source}"), file=out)
    return 0

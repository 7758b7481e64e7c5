"""clawwatch configuration: layering, validation and per-agent overrides of typed sections.

Layers, lowest first: built-in defaults (the sections' dataclass defaults, which
the repo's ``config.yaml`` documents key by key) → one YAML file (``--config
FILE`` → ``$CLAWWATCH_CONFIG`` → ``~/.config/clawwatch/config.yaml``) →
environment variables ``CLAWWATCH_<SECTION>__<KEY>[__<KEY>…]`` whose values are
YAML scalars. ``agents.<agentId>.<section>`` overrides are merged field by
field (nested maps too) over the global sections. Every error is reported as
``FILE:dotted.key: message``.

Any input is refused cheaply rather than loaded at any cost (``monitor.safe_yaml``): the
file must be a regular file of at most 1 MiB of UTF-8; YAML nesting, nodes and aliases
are bounded; duplicate keys are errors; every number must be finite and within its
field's ``min``/``max`` (``monitor.config.sections``), in the file and in ``$CLAWWATCH_*``
alike, so a loaded ``Config`` cannot overflow anything downstream.

* :mod:`monitor.config.sections`: the typed sections, their defaults and bounds;
* :mod:`monitor.config.schema`: a raw mapping checked and coerced into those sections;
* :mod:`monitor.config.model`: ``Config``, the effective config and each agent's view of it;
* :mod:`monitor.config.loading`: the file and ``$CLAWWATCH_*`` layers, ``load_config`` and
  ``clawwatch config check``;
* :mod:`monitor.config.env_names`: which ``$CLAWWATCH_*`` names are settings, and what a
  mistyped one likely meant.
"""

from monitor.config.loading import check_config_main, load_config, resolve_config_path
from monitor.config.model import DEFAULTS_LABEL, Config
from monitor.config.schema import MAX_ERROR_CHARS, ConfigError
from monitor.config.sections import (
    AGENT_SECTIONS,
    DETECTORS,
    SECTIONS,
    ActionsConfig,
    AlertsConfig,
    BudgetsConfig,
    DetectionConfig,
    GatewayConfig,
    HistoryConfig,
    MetricsConfig,
    UiConfig,
)

__all__ = [
    "AGENT_SECTIONS",
    "DEFAULTS_LABEL",
    "DETECTORS",
    "MAX_ERROR_CHARS",
    "SECTIONS",
    "ActionsConfig",
    "AlertsConfig",
    "BudgetsConfig",
    "Config",
    "ConfigError",
    "DetectionConfig",
    "GatewayConfig",
    "HistoryConfig",
    "MetricsConfig",
    "UiConfig",
    "check_config_main",
    "load_config",
    "resolve_config_path",
]

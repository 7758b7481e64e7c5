"""One agent's effective detection settings, prepared once for the hot path.

The engine keeps one ``Settings`` per agent; the detectors (``streaks``, ``turns``) read
it without importing the engine.
"""

from __future__ import annotations

from dataclasses import dataclass

from monitor.config import Config
from monitor.config.sections import DetectionConfig
from monitor.detect.loopcore import Thresholds
from monitor.detect.normalise import Normaliser


@dataclass(frozen=True, slots=True)
class Settings:
    """One agent's effective detection settings, prepared for the hot path."""

    config: Config
    detection: DetectionConfig
    thresholds: Thresholds
    normaliser: Normaliser


def build_settings(config: Config) -> Settings:
    """The ``Settings`` of ``config`` (already the agent's view: ``Config.for_agent``)."""
    det = config.detection
    switches = det.detectors
    thresholds = Thresholds(
        warning=det.warning_threshold, critical=det.critical_threshold,
        global_breaker=det.global_circuit_breaker_threshold,
        unknown_tool=det.unknown_tool_threshold,
        generic_repeat=switches.generic_repeat,
        known_poll_no_progress=switches.known_poll_no_progress,
        ping_pong=switches.ping_pong, unknown_tool_repeat=switches.unknown_tool_repeat,
        global_circuit_breaker=switches.global_circuit_breaker,
        argument_churn=switches.argument_churn,
    )
    norm = det.normalisation
    return Settings(config, det, thresholds,
                    Normaliser(norm.builtin_patterns, norm.extra_patterns, norm.volatile_keys))

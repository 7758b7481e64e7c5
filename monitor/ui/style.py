"""Rich styles resolved from the current theme's variables, and number/time formatting.

Table cells and Static tables are Rich text, which cannot name Textual
CSS variables; ``Palette`` resolves the variables (``$text-error``,
``$text-warning``…) of the active theme into concrete styles. Panes rebuild
their text when the theme changes, so every colour still comes from the theme.
"""

from __future__ import annotations

import time

from rich.style import Style
from textual.color import Color, ColorParseError

LEVEL_VARIABLE = {"critical": "text-error", "warning": "text-warning", "action": "text-accent",
                  "error": "text-error", "ok": "text-success"}
STATE_VARIABLE = {"looping": "text-error", "stalled": "text-warning", "running": "text-success",
                  "idle": "foreground-muted", "stopped": "text-accent", "done": "foreground-muted"}
LOG_LEVEL_VARIABLE = {"FATAL": "text-error", "ERROR": "text-error", "WARN": "text-warning",
                      "WARNING": "text-warning", "INFO": "text-primary",
                      "DEBUG": "foreground-muted", "TRACE": "foreground-muted"}
LEVEL_GLYPH = {"critical": "✖", "warning": "▲", "action": "⚡"}


class Palette:
    """Concrete Rich styles for the theme variables the panes use."""

    def __init__(self, variables: dict[str, str]) -> None:
        self.variables = variables
        self.background = self._colour("background") or Color(0, 0, 0)
        self._cache: dict[str, Style] = {}

    def _colour(self, name: str) -> Color | None:
        value = self.variables.get(name)
        if not value:
            return None
        try:
            colour = Color.parse(value.split()[0] if " " in value else value)
        except ColorParseError:
            return None
        return colour

    def style(self, variable: str, *, bold: bool = False, dim: bool = False,
              reverse: bool = False) -> Style:
        key = f"{variable}:{bold}:{dim}:{reverse}"
        cached = self._cache.get(key)
        if cached is None:
            colour = self._colour(variable) or self._colour("foreground")
            if colour is not None and colour.a < 1.0:
                colour = self.background.blend(colour.with_alpha(1.0), colour.a)
            cached = Style(color=colour.hex if colour else None, bold=bold, dim=dim,
                           reverse=reverse)
            self._cache[key] = cached
        return cached

    def level(self, level: str | None, **kw) -> Style:
        return self.style(LEVEL_VARIABLE.get(level or "", "foreground"), **kw)

    def state(self, state: str) -> Style:
        return self.style(STATE_VARIABLE.get(state, "foreground"), bold=state == "looping")

    def log_level(self, level: str) -> Style:
        return self.style(LOG_LEVEL_VARIABLE.get(level, "foreground"))

    @property
    def muted(self) -> Style:
        return self.style("foreground-muted")

    @property
    def match(self) -> Style:
        return Style(color=self.style("background").color,
                     bgcolor=self.style("text-warning").color, bold=True)

    @property
    def current_match(self) -> Style:
        return Style(color=self.style("background").color,
                     bgcolor=self.style("text-accent").color, bold=True, underline=True)


def tokens(value: float | int | None) -> str:
    """1234 → ``1.2k``, 2_500_000 → ``2.5M``."""
    if value is None:
        return "-"
    value = float(value)
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= size:
            return f"{value / size:.1f}{unit}"
    return f"{value:.0f}"


def duration(seconds: float | None) -> str:
    """Seconds as ``42s``, ``7m``, ``3h05``, ``2d``."""
    if seconds is None:
        return "-"
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.0f}s"
    if seconds < 3600:
        return f"{seconds // 60:.0f}m"
    if seconds < 86400:
        return f"{seconds // 3600:.0f}h{(seconds % 3600) // 60:02.0f}"
    return f"{seconds // 86400:.0f}d"


def clock_time(ts: float | None) -> str:
    """Local wall-clock time of ``ts`` as HH:MM:SS."""
    return time.strftime("%H:%M:%S", time.localtime(ts)) if ts else "--:--:--"


def percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}%"

"""The Textual dashboard. ``build_app`` is what the CLI calls; imports stay lazy so that
``import monitor.ui`` alone does not load Textual."""

from __future__ import annotations

__all__ = ["ClawwatchApp", "DashboardOptions", "build_app"]


def __getattr__(name: str):
    if name == "ClawwatchApp":
        from monitor.ui.app import ClawwatchApp

        return ClawwatchApp
    if name in ("DashboardOptions", "build_app"):
        from monitor.ui import factory

        return getattr(factory, name)
    raise AttributeError(name)

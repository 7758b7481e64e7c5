"""``build_app``: the one way the dashboard is made, by the CLI and by the tests alike.

``clawwatch`` (no sub-command) watches the discovered OpenClaw; ``clawwatch
demo`` watches a ``DemoWorld`` simulator. Discovery and config errors are
raised (``DiscoveryError``, ``ConfigError``) for the CLI to print and exit 2.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from monitor.act.api import ActionController, DryRunController
from monitor.config import Config, UiConfig, load_config
from monitor.ui.app import ClawwatchApp

STATE_HINT = "pass --state-dir DIR (or set $OPENCLAW_STATE_DIR), or --profile NAME"
LOG_HINT = "pass --log FILE (the gateway writes /tmp/openclaw/openclaw-YYYY-MM-DD.log)"


@dataclass
class DashboardOptions:
    """What the CLI flags say; an argparse namespace with these names works too."""

    demo: bool = False
    state_dir: str | None = None
    profile: str | None = None
    log: str | None = None
    gateway: str | None = None
    config: str | None = None
    theme: str | None = None
    legacy: bool = False
    claude_dir: list[str] | None = None     # --claude-dir, --codex-dir, --source (issue 14)
    codex_dir: list[str] | None = None
    source: str | None = None


def options_from(args) -> DashboardOptions:
    if isinstance(args, DashboardOptions):
        return args
    return DashboardOptions(
        demo=getattr(args, "command", None) == "demo" or bool(getattr(args, "demo", False)),
        **{name: getattr(args, name, None) for name in
           ("state_dir", "profile", "log", "gateway", "config", "theme", "claude_dir",
            "codex_dir", "source")},
        legacy=bool(getattr(args, "legacy", False)))


def _monitor_factory(state_dir: str | None, log_path: str | None, config: Config,
                     clock: Callable[[], float], *, claude_dirs: tuple[str, ...] = (),
                     codex_dirs: tuple[str, ...] = (), rolling: dict | None = None
                     ) -> Callable[[], object]:
    """The board's monitor; ``clock`` (the app's) places the history cutoff. ``rolling``:
    ``rolling_log_dirs`` and ``rolling_log_family`` when the log was found by its dated
    name, so a board left running past midnight moves to the gateway's next day's file."""
    def make():
        from monitor.detect.engine import DetectionEngine
        from monitor.pipeline import Monitor, history_cutoff
        from monitor.sources.history_split import reader_processes
        from monitor.sources.sourceset import SourceSet

        readers = reader_processes(config.history.reader_processes)
        return Monitor(SourceSet(state_dir=state_dir, log_path=log_path,
                                 claude_dirs=claude_dirs, codex_dirs=codex_dirs,
                                 history_readers=readers, **(rolling or {})),
                       DetectionEngine(config), detect_since=history_cutoff(config, clock()))

    return make


def _theme(options: DashboardOptions, config: Config) -> str | None:
    return options.theme or (config.ui.theme if config.ui.theme != UiConfig().theme else None)


def _demo_app(options: DashboardOptions, config: Config | None,
              controller: ActionController | None, clock: Callable[[], float],
              poll_seconds: float, mode: str | None, app_options: dict) -> ClawwatchApp:
    """The dashboard on a ``DemoWorld``. Without a ``controller`` the keys and ``--act``
    act through the demo's own gateway endpoint, with the demo config overlay over the
    user's config (unless ``config`` is given)."""
    from monitor.demo import DemoWorld

    world = DemoWorld(era="legacy" if options.legacy else "sqlite").start()
    try:
        config = config if config is not None else load_config(options.config,
                                                                world.config_env())
        wiring = world.dashboard_actions(config, mode) if controller is None else {}
    except BaseException:
        world.close()
        raise
    controller = wiring.pop("controller", controller)
    on_close = [*wiring.pop("on_close", []), *app_options.pop("on_close", []), world.close]
    return ClawwatchApp(
        _monitor_factory(str(world.state_dir), str(world.log_path), config, clock,
                         claude_dirs=world.claude_dirs), controller,
        config, theme=_theme(options, config), clock=clock, poll_seconds=poll_seconds,
        sub_title="demo: simulated sessions", on_close=on_close, **wiring, **app_options)


def build_app(args_or_options, *, config: Config | None = None,
              controller: ActionController | None = None,
              clock: Callable[[], float] = time.time, poll_seconds: float = 0.5,
              **app_options) -> ClawwatchApp:
    """The dashboard for ``clawwatch`` / ``clawwatch demo``; call ``.run()`` on it.

    ``config`` defaults to ``load_config(options.config)``; ``controller`` to the
    dry-run stand-in. Extra keyword arguments go to ``ClawwatchApp``.
    """
    options = options_from(args_or_options)
    if options.demo:
        return _demo_app(options, config, controller, clock, poll_seconds,
                         getattr(args_or_options, "act", None), app_options)
    config = config if config is not None else load_config(options.config)
    controller = controller if controller is not None else DryRunController()
    theme = _theme(options, config)
    from monitor.discovery import discover, parse_sources, require_something, rolling_log

    found = discover(state_dir=options.state_dir, profile=options.profile, log=options.log,
                     gateway=options.gateway, claude_dir=options.claude_dir or (),
                     codex_dir=options.codex_dir or (), sources=parse_sources(options.source))
    require_something(found)
    expected = [("state dir", found.state_dir, STATE_HINT), ("gateway log", found.log_path,
                                                               LOG_HINT)]
    return ClawwatchApp(
        _monitor_factory(found.state_dir, found.log_path, config, clock,
                         claude_dirs=tuple(found.claude_dirs), codex_dirs=tuple(found.codex_dirs),
                         rolling=rolling_log(found)),
        controller, config, theme=theme, clock=clock, poll_seconds=poll_seconds,
        sub_title=found.state_dir or found.log_path or found.cli_sources_text(),
        expected=expected, **app_options)

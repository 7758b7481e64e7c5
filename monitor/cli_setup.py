"""What the replay, watch, demo and dashboard commands start from, made from their arguments:
the config, the inputs found (``--state-dir``, ``--log``, ``--journal``, ``--claude-dir``,
``--source`` …), the ``SourceSet`` over them and the ``--metrics`` server.

Anything wrong with them is a ``SetupError``: ``main`` prints its text and exits 2.
"""

from __future__ import annotations

import sys

from monitor.discovery import (
    DiscoveryError,
    claude_projects_dir,
    codex_sessions_dir,
    discover,
    discovery_notes,
    no_openclaw_note,
    parse_sources,
    require_something,
)
from monitor.display import printable
from monitor.named_inputs import missing_log_note


class SetupError(Exception):
    """Bad setup: printed as is, exit code 2."""


def checked_config(path: str | None, env=None):
    """The config at ``path`` (the default places when None), its warnings printed."""
    from monitor.config import ConfigError, load_config

    try:
        config = load_config(path) if env is None else load_config(path, env)
    except ConfigError as exc:
        raise SetupError("\n".join(exc.errors)) from None
    for warning in config.warnings:
        print(printable(f"clawwatch: warning: {warning}"), file=sys.stderr)
    return config


def detection_engine(config):
    from monitor.detect.engine import DetectionEngine

    return DetectionEngine(config)


def start_metrics_if_asked(args, config, monitor):
    """``(hub, server)`` of ``--metrics`` (or ``metrics.listen``), or ``(None, None)``.
    ``monitor`` may be None (the dashboard's is made later, in its ingest thread)."""
    from monitor.config.sections import MetricsConfig

    settings = config.metrics if config is not None else MetricsConfig()
    listen = getattr(args, "metrics", None) or settings.listen
    if not listen:
        return None, None
    from monitor.metrics_server import MetricsListenError, start_metrics

    try:
        hub, server = start_metrics(monitor, listen, max_sessions=settings.max_sessions,
                                    lookback_seconds=settings.session_lookback_seconds)
    except MetricsListenError as exc:
        raise SetupError(f"clawwatch: metrics: {exc}") from None
    print(f"clawwatch: metrics at {server.url}", file=sys.stderr, flush=True)
    return hub, server


def chosen_sources(args) -> frozenset[str]:
    """``--source`` as a set (every source when not given)."""
    try:
        return parse_sources(getattr(args, "source", None))
    except ValueError as exc:
        raise SetupError(f"clawwatch: --source: {exc}") from None


def discover_inputs(args) -> object:
    log = None if log_stream(args) else args.log
    found = discover(state_dir=args.state_dir, profile=args.profile, log=log,
                     gateway=args.gateway, claude_dir=getattr(args, "claude_dir", None) or (),
                     codex_dir=getattr(args, "codex_dir", None) or (),
                     sources=chosen_sources(args))
    return found


def require_inputs(args, found) -> None:
    """Something to watch was ``found``, else bad setup; what is missing of it is noted."""
    try:
        require_something(found)
    except DiscoveryError as exc:
        raise SetupError(str(exc)) from None
    if "openclaw" in chosen_sources(args):
        note(no_openclaw_note(found))
        for line in discovery_notes(found, live=True):
            note(line)
    note(missing_log_note(args, chosen_sources(args)))


def explicit_cli_dirs(args) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The ``--claude-dir`` / ``--codex-dir`` dirs as given (no discovery), those ``--source``
    keeps."""
    chosen = chosen_sources(args)
    claude = tuple(dict.fromkeys(claude_projects_dir(d) for d in args.claude_dir or ())) \
        if "claude-code" in chosen else ()
    codex = tuple(dict.fromkeys(codex_sessions_dir(d) for d in args.codex_dir or ())) \
        if "codex" in chosen else ()
    return claude, codex


def note(message: str | None) -> None:
    if message:
        print(printable(message), file=sys.stderr, flush=True)


def log_stream(args) -> str | None:
    """The log as a stream: "-" (``--log -``, standard input) or "journal:UNIT"."""
    journal = getattr(args, "journal", None)
    log = getattr(args, "log", None)
    if journal is not None and log is not None:
        raise SetupError(f"clawwatch: give one gateway log: --journal {journal} or --log {log}")
    if log == "-":
        return "-"
    return f"journal:{journal}" if journal is not None else None


def source_set(**options):
    """A ``SourceSet``; a stream that cannot be read at all (no journalctl) is bad setup."""
    from monitor.sources.sourceset import SourceSet
    from monitor.sources.stream import StreamSetupError

    try:
        return SourceSet(**options)
    except StreamSetupError as exc:
        raise SetupError(str(exc)) from None

"""The ``clawwatch`` command line (shared/CONTRACT.md): ``main`` picks the command, and the
dashboard (no sub-command, or ``watch`` / ``demo`` without ``--headless``) is run here.

The headless commands live in ``monitor.cli_replay`` and ``monitor.cli_watch``, what they
all start from (config, inputs, metrics) in ``monitor.cli_setup``.
"""

from __future__ import annotations

import signal
import sys

from monitor.cli_parser import build_parser, refuse_unused_globals
from monitor.cli_replay import cmd_replay
from monitor.cli_setup import (
    SetupError,
    checked_config,
    discover_inputs,
    log_stream,
    require_inputs,
    start_metrics_if_asked,
)
from monitor.cli_watch import cmd_demo, cmd_watch
from monitor.discovery import DiscoveryError
from monitor.display import printable
from monitor.sources.sqlite_guard import stop_queries


def cmd_dashboard(args) -> int:
    from monitor.config import ConfigError
    from monitor.ui import build_app

    if getattr(args, "command", None) != "demo" and log_stream(args):
        raise SetupError("clawwatch: --log - and --journal are read by 'clawwatch replay' and "
                         "'clawwatch watch --headless', not by the dashboard")
    if getattr(args, "command", None) == "demo":
        config, options = None, {}      # the demo loads it with its overlay
    else:
        config = checked_config(args.config)
        found = discover_inputs(args)
        require_inputs(args, found)
        options = _dashboard_actions(found, config, getattr(args, "act", None), args.gateway)
    hub, server = start_metrics_if_asked(args, config, None)
    try:
        try:
            app = build_app(args, config=config, metrics=hub, **options)
        except DiscoveryError as exc:
            raise SetupError(str(exc)) from None
        except ConfigError as exc:
            raise SetupError("\n".join(exc.errors)) from None
        # Quit cleanly when told to: the terminal restored, the ingest thread stopped (and
        # for the demo its temp dir and children removed).
        for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(signum, lambda number, frame: (stop_queries(), app.exit()))
        app.run()
    finally:
        if server is not None:
            server.close()
    return app.return_code or 0


def _dashboard_actions(found, config, mode: str | None, gateway_url: str | None) -> dict:
    """The real controller for the s/K keys, and the action policy run after each step."""
    from monitor.act.controller import GatewayActionController
    from monitor.act.loop import dashboard_action_hooks

    return dashboard_action_hooks(GatewayActionController(found, config, url=gateway_url),
                                  found, config, mode=mode, gateway_url=gateway_url)


def cmd_stop(args) -> int:
    from monitor.act.cli_stop import stop_main

    return stop_main(args)


def cmd_config(args) -> int:
    if args.config_command != "check":
        raise SetupError("usage: clawwatch config check [FILE]")
    from monitor.config import check_config_main

    if args.file and args.config and args.file != args.config:
        raise SetupError(f"clawwatch config check: two files given: {args.file} and "
                         f"--config {args.config}")
    return check_config_main(args.file or args.config)


def _never_fail_to_encode() -> None:
    """A character the terminal's encoding lacks (``␛``, the visible form of an ESC that
    data held, on a Latin-1 terminal) is written as its escape, not raised."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")


def main(argv: list[str] | None = None) -> int:
    _never_fail_to_encode()
    parser = build_parser()
    args = parser.parse_args(argv)
    refuse_unused_globals(parser, args)
    handlers = {None: cmd_dashboard, "replay": cmd_replay, "watch": cmd_watch, "demo": cmd_demo,
                "stop": cmd_stop, "config": cmd_config}
    try:
        if args.command in ("watch", "demo") and not args.headless:
            return cmd_dashboard(args)
        return handlers[args.command](args)
    except SetupError as exc:
        from monitor.redaction import redact_text

        print(printable(redact_text(str(exc)), keep_newlines=True), file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:       # SIGINT where no handler of ours runs (replay, setup)
        return 130


if __name__ == "__main__":
    sys.exit(main())

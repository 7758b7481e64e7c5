"""The ``clawwatch`` command line (shared/CONTRACT.md)."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys

from monitor import __version__
from monitor.discovery import DiscoveryError, discover, require_something


class SetupError(Exception):
    """Bad setup: printed as is, exit code 2."""


def _add_discovery_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--state-dir", help="OpenClaw state dir (default: $OPENCLAW_STATE_DIR, "
                                            "~/.openclaw)")
    parser.add_argument("--profile", help="use ~/.openclaw-<profile>")
    parser.add_argument("--log", help="gateway log file (default: logging.file, or the newest "
                                      "/tmp/openclaw/openclaw-*.log)")
    parser.add_argument("--gateway", help="gateway URL, ws://HOST:PORT")
    parser.add_argument("--config", help="clawwatch config file")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="clawwatch",
        description="Watch OpenClaw sessions for tool-call loops and token burn, and stop them.")
    parser.add_argument("--version", action="version", version=f"clawwatch {__version__}")
    _add_discovery_flags(parser)
    parser.add_argument("--theme", help="dashboard theme name")
    parser.add_argument("--act", choices=("off", "dry-run", "auto"),
                        help="action mode (default: actions.mode in the config)")
    commands = parser.add_subparsers(dest="command")

    replay = commands.add_parser("replay", help="read history to the end and report")
    _add_discovery_flags(replay)
    replay.add_argument("paths", nargs="*", metavar="PATH",
                        help="agent DBs, sessions dirs, transcripts or gateway logs")
    replay.add_argument("--json", action="store_true", help="print one JSON document")
    replay.add_argument("--archives", action="store_true",
                        help="also read *.jsonl.reset.* / *.jsonl.deleted.* archives")

    watch = commands.add_parser("watch", help="follow live and print findings")
    _add_discovery_flags(watch)
    watch.add_argument("--headless", action="store_true", help="no dashboard: print lines")
    watch.add_argument("--json", action="store_true", help="JSON lines")
    watch.add_argument("--seconds", type=float, help="stop after N seconds")
    watch.add_argument("--act", choices=("off", "dry-run", "auto"), help="action mode")
    watch.add_argument("--from-start", action="store_true",
                       help="report history too (default: catch up silently, then go live)")
    watch.add_argument("--checkpoint", help="checkpoint file (default: per-user state dir)")
    watch.add_argument("--no-checkpoint", action="store_true",
                       help="neither read nor write a checkpoint")
    watch.add_argument("--poll", type=float, default=1.0,
                       help="safety-net poll interval in seconds (default 1)")

    demo = commands.add_parser("demo", help="simulated looping sessions, watched live")
    demo.add_argument("--config", help="clawwatch config file")
    demo.add_argument("--headless", action="store_true", help="no dashboard: print lines")
    demo.add_argument("--json", action="store_true", help="JSON lines")
    demo.add_argument("--seconds", type=float, help="stop after N seconds")
    demo.add_argument("--legacy", action="store_true", help="write legacy JSONL, not SQLite")
    demo.add_argument("--act", choices=("off", "dry-run", "auto"), help="action mode")
    demo.add_argument("--theme", help="dashboard theme name")
    demo.add_argument("--rate", type=float,
                      help="simulated model turns per second, all sessions together (default 8)")

    stop = commands.add_parser("stop", help="abort a session's active run through the gateway")
    _add_discovery_flags(stop)
    stop.add_argument("session_key", metavar="SESSION_KEY")
    stop.add_argument("--kill", action="store_true", help="also kill the run's exec processes")
    stop.add_argument("--method", choices=("abort", "stop-text", "cli"),
                      help="chat.abort (default), a /stop message, or the openclaw CLI")
    stop.add_argument("--json", action="store_true", help="JSON lines")
    stop.add_argument("--timeout", type=float, help="seconds per gateway call attempt")

    config = commands.add_parser("config", help="configuration tools")
    config_commands = config.add_subparsers(dest="config_command")
    check = config_commands.add_parser("check", help="validate a config file")
    check.add_argument("file", nargs="?")
    return parser


# ---------------------------------------------------------------------- helpers

def _load_config(path: str | None, env=None):
    from monitor.config import ConfigError, load_config

    try:
        config = load_config(path) if env is None else load_config(path, env)
    except ConfigError as exc:
        raise SetupError("\n".join(exc.errors)) from None
    for warning in config.warnings:
        print(f"clawwatch: warning: {warning}", file=sys.stderr)
    return config


def _engine(config):
    from monitor.detect.engine import DetectionEngine

    return DetectionEngine(config)


def _discover(args) -> object:
    found = discover(state_dir=args.state_dir, profile=args.profile, log=args.log,
                     gateway=args.gateway)
    return found


def _emit(records: list[dict], as_json: bool, out=sys.stdout) -> None:
    for record in records:
        if as_json:
            out.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
        else:
            out.write(_human_line(record) + "\n")
    out.flush()


def _human_line(record: dict) -> str:
    kind = record["type"]
    if kind == "finding":
        return (f"{record['ts']} {record['level'].upper():8} {record['key']} "
                f"{record['detector']} x{record['count']} (call {record['at_call']}): "
                f"{record['message']}")
    if kind == "tool_call":
        return f"{record['ts']} call     {record['key']} #{record['at_call']} {record['name']}"
    if kind == "session":
        return f"{record['ts']} session  {record['key']} {record['status']}"
    if kind == "action":
        return f"{record['ts']} ACTION   {record['key']} {record['action']} ok={record['ok']}"
    return f"{record['ts']} {kind:8} {record.get('path', '')} {record.get('where', '')} " \
           f"{record.get('message', '')}"


# --------------------------------------------------------------------- commands

def cmd_replay(args) -> int:
    from monitor.pipeline import Monitor
    from monitor.sources.sourceset import SourceSet

    for path in args.paths:
        if not os.path.exists(path):
            raise SetupError(f"clawwatch replay: {path}: no such file or directory")
    found = _discover(args) if (args.state_dir or not args.paths) else None
    state_dir = found.state_dir if found else None
    if found is not None and not args.paths:
        if not state_dir or not os.path.isdir(state_dir):
            raise SetupError(
                f"clawwatch replay: no OpenClaw state dir at {state_dir or '(none)'}; "
                "pass --state-dir DIR or PATHs to read")
    log_path = args.log or (found.log_path if found and found.log_path
                            and os.path.exists(found.log_path) else None)
    config = _load_config(args.config)
    sources = SourceSet(state_dir=state_dir, log_path=log_path, paths=tuple(args.paths),
                        include_archives=args.archives, replay=True)
    if not sources.sources and not state_dir:
        raise SetupError("clawwatch replay: nothing readable was given")
    monitor = Monitor(sources, _engine(config))
    monitor.quiet = True
    previous = -1
    while True:
        monitor.step()
        total = sum(s.events + s.errors for s in sources.sources)
        if total == previous and not sources.behind:
            break
        previous = total
    document = monitor.report()
    sources.close()
    if args.json:
        sys.stdout.write(json.dumps(document, ensure_ascii=False) + "\n")
    else:
        _print_replay_table(document)
    return 0


def _print_replay_table(document: dict) -> None:
    for source in document["sources"]:
        print(f"{source['kind']:12} {source['events']:>9} events {source['errors']:>5} errors  "
              f"{source['path']}")
    for session in document["sessions"]:
        tokens = session["tokens"]
        worst = max((f["level"] for f in session["findings"]), default="-",
                    key=lambda level: {"warning": 1, "critical": 2}.get(level, 0))
        print(f"{session['key']:40} {session['status'] or '-':8} calls={session['tool_calls']:<5}"
              f" in={tokens['input']:<9} out={tokens['output']:<7} worst={worst}")


def cmd_watch(args) -> int:
    from monitor.act.loop import build_action_loop
    from monitor.live import run_live
    from monitor.pipeline import Monitor
    from monitor.sources.checkpoint import CheckpointStore, default_checkpoint_path
    from monitor.sources.sourceset import SourceSet

    found = _discover(args)
    try:
        require_something(found)
    except DiscoveryError as exc:
        raise SetupError(str(exc)) from None
    config = _load_config(args.config)
    store = None
    if not args.no_checkpoint:
        store = CheckpointStore(args.checkpoint or default_checkpoint_path(
            found.state_dir, found.log_path))
    resume = store.load() if store else None
    sources = SourceSet(state_dir=found.state_dir, log_path=found.log_path, resume=resume,
                        rolling_log_dirs=tuple(found.log_dirs) if found.log_is_rolling else ())
    monitor = Monitor(sources, _engine(config))
    actions = build_action_loop(monitor, found, config, mode=args.act, gateway_url=args.gateway)
    try:
        run_live(monitor, actions.wrap_emit(lambda records: _emit(records, args.json)),
                 seconds=args.seconds, poll_seconds=args.poll, store=store,
                 catch_up_quietly=resume is None and not args.from_start)
    finally:
        _emit(actions.close(), args.json)
        sources.close()
    return 0


def cmd_demo(args) -> int:
    if not args.headless:
        return cmd_dashboard(args)
    from monitor.act.loop import build_action_loop
    from monitor.demo import DemoWorld
    from monitor.live import install_stop_signals, run_live
    from monitor.pipeline import Monitor
    from monitor.sources.sourceset import SourceSet

    stop = install_stop_signals()
    world = DemoWorld(era="legacy" if args.legacy else "sqlite", rate=args.rate).start()
    actions = sources = None
    try:
        config = _load_config(args.config, env=world.config_env())
        sources = SourceSet(state_dir=str(world.state_dir), log_path=str(world.log_path))
        monitor = Monitor(sources, _engine(config))
        actions = build_action_loop(monitor, world.discovered(), config, mode=args.act,
                                    controller=world.controller(config))
        run_live(monitor, actions.wrap_emit(lambda records: _emit(records, args.json)),
                 seconds=args.seconds, poll_seconds=0.5, catch_up_quietly=False, stop=stop)
    finally:
        if actions is not None:
            _emit(actions.close(), args.json)
        if sources is not None:
            sources.close()
        world.close()
    return 0


def cmd_dashboard(args) -> int:
    from monitor.config import ConfigError
    from monitor.ui import build_app

    if getattr(args, "command", None) == "demo":
        config, options = None, {}      # the demo loads it with its overlay
    else:
        config = _load_config(args.config)
        found = _discover(args)
        try:
            require_something(found)
        except DiscoveryError as exc:
            raise SetupError(str(exc)) from None
        options = _dashboard_actions(found, config, getattr(args, "act", None), args.gateway)
    try:
        app = build_app(args, config=config, **options)
    except DiscoveryError as exc:
        raise SetupError(str(exc)) from None
    except ConfigError as exc:
        raise SetupError("\n".join(exc.errors)) from None
    if config is None:      # the demo: quit cleanly (temp dir, children) when told to
        for signum in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, lambda number, frame: app.exit())
    app.run()
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

    return check_config_main(args.file)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handlers = {None: cmd_dashboard, "replay": cmd_replay, "watch": cmd_watch, "demo": cmd_demo,
                "stop": cmd_stop, "config": cmd_config}
    try:
        if args.command == "watch" and not args.headless:
            return cmd_dashboard(args)
        return handlers[args.command](args)
    except SetupError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())

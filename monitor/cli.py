"""The ``clawwatch`` command line (shared/CONTRACT.md)."""

from __future__ import annotations

import functools
import os
import signal
import sys

from monitor.cli_parser import build_parser, refuse_unused_globals
from monitor.discovery import (
    DiscoveryError,
    claude_projects_dir,
    codex_sessions_dir,
    discover,
    no_openclaw_note,
    parse_sources,
    require_something,
)
from monitor.display import json_dumps, printable
from monitor.named_inputs import missing_log_note, unreadable_named_input
from monitor.records import (
    ActionRecord,
    ErrorRecord,
    FindingRecord,
    Record,
    SessionRecord,
    ToolCallRecord,
    redacted,
    redacted_json,
)
from monitor.redaction import redact_record
from monitor.sources.sqlite_guard import stop_queries


class SetupError(Exception):
    """Bad setup: printed as is, exit code 2."""


# ---------------------------------------------------------------------- helpers

def _load_config(path: str | None, env=None):
    from monitor.config import ConfigError, load_config

    try:
        config = load_config(path) if env is None else load_config(path, env)
    except ConfigError as exc:
        raise SetupError("\n".join(exc.errors)) from None
    for warning in config.warnings:
        print(printable(f"clawwatch: warning: {warning}"), file=sys.stderr)
    return config


def _engine(config):
    from monitor.detect.engine import DetectionEngine

    return DetectionEngine(config)


def _start_metrics(args, config, monitor):
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


def _sources(args) -> frozenset[str]:
    """``--source`` as a set (every source when not given)."""
    try:
        return parse_sources(getattr(args, "source", None))
    except ValueError as exc:
        raise SetupError(f"clawwatch: --source: {exc}") from None


def _discover(args) -> object:
    log = None if _log_stream(args) else args.log
    found = discover(state_dir=args.state_dir, profile=args.profile, log=log,
                     gateway=args.gateway, claude_dir=getattr(args, "claude_dir", None) or (),
                     codex_dir=getattr(args, "codex_dir", None) or (), sources=_sources(args))
    return found


def _explicit_cli_dirs(args) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The ``--claude-dir`` / ``--codex-dir`` dirs as given (no discovery), those ``--source``
    keeps."""
    chosen = _sources(args)
    claude = tuple(dict.fromkeys(claude_projects_dir(d) for d in args.claude_dir or ())) \
        if "claude-code" in chosen else ()
    codex = tuple(dict.fromkeys(codex_sessions_dir(d) for d in args.codex_dir or ())) \
        if "codex" in chosen else ()
    return claude, codex


def _note(message: str | None) -> None:
    if message:
        print(printable(message), file=sys.stderr, flush=True)


def _log_stream(args) -> str | None:
    """The log as a stream: "-" (``--log -``, standard input) or "journal:UNIT"."""
    journal = getattr(args, "journal", None)
    log = getattr(args, "log", None)
    if journal is not None and log is not None:
        raise SetupError(f"clawwatch: give one gateway log: --journal {journal} or --log {log}")
    if log == "-":
        return "-"
    return f"journal:{journal}" if journal is not None else None


def _source_set(**options):
    """A ``SourceSet``; a stream that cannot be read at all (no journalctl) is bad setup."""
    from monitor.sources.sourceset import SourceSet
    from monitor.sources.stream import StreamSetupError

    try:
        return SourceSet(**options)
    except StreamSetupError as exc:
        raise SetupError(str(exc)) from None


def _emit(records: list[Record], as_json: bool, out=sys.stdout) -> None:
    """The records as lines; every output has its secrets masked."""
    if as_json:
        out.writelines(json_dumps(redacted_json(record), default=str) + "\n"
                       for record in records)
    else:
        out.writelines(_human_line(redacted(record)) + "\n" for record in records)
    out.flush()


def _human_line(record: Record) -> str:
    """One record as one line of plain text; data in it made printable (one line, no
    control character reaches the terminal)."""
    return printable(_human_text(record))


def _human_text(record: Record) -> str:
    if isinstance(record, FindingRecord):
        return (f"{record.ts} {record.level.upper():8} {record.key} {record.detector} "
                f"x{record.count} (call {record.at_call}): {record.message}")
    if isinstance(record, ToolCallRecord):
        return f"{record.ts} call     {record.key} #{record.at_call} {record.name}"
    if isinstance(record, SessionRecord):
        return f"{record.ts} session  {record.key} {record.status}"
    if isinstance(record, ActionRecord):
        return f"{record.ts} ACTION   {record.key} {record.action} ok={record.ok}"
    kind = "error" if isinstance(record, ErrorRecord) else "notice"
    return f"{record.ts} {kind:8} {record.path or ''} {getattr(record, 'where', None) or ''} " \
           f"{record.message}"


# --------------------------------------------------------------------- commands

def cmd_replay(args) -> int:
    from monitor.detect.engine import DetectionEngine
    from monitor.replay import ReplayInput, default_jobs, replay
    from monitor.replay_cache import cache_dir

    problem = unreadable_named_input(args, _sources(args))
    if problem:
        raise SetupError(f"clawwatch replay: {problem}")
    if args.jobs is not None and args.jobs < 1:
        raise SetupError("clawwatch replay: --jobs must be 1 or more")
    stream = _log_stream(args)
    found = _discover(args) if (args.state_dir or not args.paths) else None
    state_dir = found.state_dir if found else None
    # Claude Code / Codex dirs: discovered with the rest, or with PATHs only those given.
    claude_dirs, codex_dirs = (tuple(found.claude_dirs), tuple(found.codex_dirs)) if found \
        else _explicit_cli_dirs(args)
    if found is not None and not args.paths:
        if not state_dir or not os.path.isdir(state_dir):
            if not (stream or args.log or claude_dirs or codex_dirs) or args.state_dir:
                raise SetupError(
                    f"clawwatch replay: no OpenClaw state dir at {state_dir or '(none)'}, "
                    "nor a Claude Code or Codex dir; pass --state-dir DIR, --claude-dir DIR, "
                    "--codex-dir DIR or PATHs to read")
            if "openclaw" in _sources(args) and not (stream or args.log):
                _note(no_openclaw_note(found, "reading"))
            state_dir = None        # the log, Claude Code or Codex alone
    log_path = None if stream else args.log or (
        found.log_path if found and found.log_path and os.path.exists(found.log_path) else None)
    config = _load_config(args.config)
    what = ReplayInput(state_dir=state_dir, log_path=log_path, paths=tuple(args.paths),
                       include_archives=args.archives, log_stream=stream,
                       claude_dirs=claude_dirs, codex_dirs=codex_dirs)
    sources = _source_set(state_dir=state_dir, log_path=log_path, paths=what.paths,
                          include_archives=args.archives, replay=True, log_stream=stream,
                          claude_dirs=claude_dirs, codex_dirs=codex_dirs)
    if not sources.sources and not state_dir:
        raise SetupError("clawwatch replay: nothing readable was given")
    document = redact_record(replay(what, config, DetectionEngine, args.jobs or default_jobs(),
                                    sources=sources,
                                    cache=None if args.no_cache else cache_dir()))
    for note in sources.stream_notes():
        _note(f"clawwatch: {note}")
    if args.json:
        sys.stdout.write(json_dumps(document) + "\n")
    else:
        _print_replay_table(document)
    return 0


def _print_replay_table(document: dict) -> None:
    for source in document["sources"]:
        print(printable(f"{source['kind']:12} {source['events']:>9} events "
                        f"{source['errors']:>5} errors  {source['path']}"))
    for session in document["sessions"]:
        tokens = session["tokens"]
        worst = max((f["level"] for f in session["findings"]), default="-",
                    key=lambda level: {"warning": 1, "critical": 2}.get(level, 0))
        print(printable(f"{session['key']:40} {session['status'] or '-':8} "
                        f"calls={session['tool_calls']:<5} in={tokens['input']:<9} "
                        f"out={tokens['output']:<7} worst={worst}"))


def cmd_watch(args) -> int:
    from monitor.act.loop import build_action_loop
    from monitor.live import install_stop_signals, run_live
    from monitor.pipeline import Monitor, history_cutoff
    from monitor.restart import ReportedBefore, rewound
    from monitor.sources.checkpoint import (
        CheckpointPathError,
        CheckpointStore,
        default_checkpoint_path,
        unreadable_checkpoint_note,
    )
    from monitor.sources.history_split import reader_processes

    stop = install_stop_signals()       # a signal during setup ends the loop at its start
    stream = _log_stream(args)
    found = _discover(args)
    if stream is not None:              # the stream is the log; a state dir only if there
        if not (found.state_dir and os.path.isdir(found.state_dir)):
            found.state_dir = None
        found.log_path = None
    else:
        try:
            require_something(found)
        except DiscoveryError as exc:
            raise SetupError(str(exc)) from None
        if "openclaw" in _sources(args):
            _note(no_openclaw_note(found))
        _note(missing_log_note(args, _sources(args)))
    config = _load_config(args.config)
    store = None
    if not args.no_checkpoint:
        store = CheckpointStore(args.checkpoint or default_checkpoint_path(
            found.state_dir, stream or found.log_path, claude_dirs=found.claude_dirs,
            codex_dirs=found.codex_dirs))
        try:
            store.check_writable()
        except CheckpointPathError as exc:
            raise SetupError(f"clawwatch watch: {exc} (give --checkpoint FILE or "
                             "--no-checkpoint)") from None
    resume = store.load() if store else None
    if store is not None and store.unreadable:
        _note(unreadable_checkpoint_note(store))
    sources = _source_set(
        state_dir=found.state_dir, log_path=found.log_path,
        resume=resume if args.from_start else rewound(resume), log_stream=stream,
        from_start=args.from_start, claude_dirs=tuple(found.claude_dirs),
        codex_dirs=tuple(found.codex_dirs),
        rolling_log_dirs=tuple(found.log_dirs) if found.log_is_rolling and not stream else (),
        history_readers=reader_processes(config.history.reader_processes))
    monitor = Monitor(sources, _engine(config),
                      detect_since=None if args.from_start else history_cutoff(config))
    if resume is not None and not args.from_start:
        monitor.reported_before = ReportedBefore(resume)
    try:
        hub, server = _start_metrics(args, config, monitor)
    except SetupError:
        sources.close()
        raise
    printer = functools.partial(_emit, as_json=args.json)
    actions = build_action_loop(monitor, found, config, mode=args.act, gateway_url=args.gateway)
    try:
        run_live(monitor, actions.wrap_emit(hub.wrap_emit(printer) if hub else printer),
                 seconds=args.seconds, poll_seconds=args.poll, store=store,
                 catch_up_quietly=resume is None and not args.from_start, stop=stop,
                 step=hub.step if hub else None)
        actions.finish(stop)
    finally:
        _emit(actions.close(), args.json)
        if server is not None:
            server.close()
        sources.close()
    for failure in sources.stream_failures():
        print(printable(f"clawwatch: {failure}"), file=sys.stderr)
        return 2
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
    actions = sources = server = None
    try:
        config = _load_config(args.config, env=world.config_env())
        sources = SourceSet(state_dir=str(world.state_dir), log_path=str(world.log_path),
                            claude_dirs=world.claude_dirs)
        monitor = Monitor(sources, _engine(config))
        hub, server = _start_metrics(args, config, monitor)
        printer = functools.partial(_emit, as_json=args.json)
        actions = build_action_loop(monitor, world.discovered(), config, mode=args.act,
                                    controller=world.controller(config))
        run_live(monitor, actions.wrap_emit(hub.wrap_emit(printer) if hub else printer),
                 seconds=args.seconds, poll_seconds=0.5, catch_up_quietly=False, stop=stop,
                 step=hub.step if hub else None)
    finally:
        if actions is not None:
            _emit(actions.close(), args.json)
        if server is not None:
            server.close()
        if sources is not None:
            sources.close()
        world.close()
    return 0


def cmd_dashboard(args) -> int:
    from monitor.config import ConfigError
    from monitor.ui import build_app

    if getattr(args, "command", None) != "demo" and _log_stream(args):
        raise SetupError("clawwatch: --log - and --journal are read by 'clawwatch replay' and "
                         "'clawwatch watch --headless', not by the dashboard")
    if getattr(args, "command", None) == "demo":
        config, options = None, {}      # the demo loads it with its overlay
    else:
        config = _load_config(args.config)
        found = _discover(args)
        try:
            require_something(found)
        except DiscoveryError as exc:
            raise SetupError(str(exc)) from None
        if "openclaw" in _sources(args):
            _note(no_openclaw_note(found))
        _note(missing_log_note(args, _sources(args)))
        options = _dashboard_actions(found, config, getattr(args, "act", None), args.gateway)
    hub, server = _start_metrics(args, config, None)
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
        if args.command == "watch" and not args.headless:
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

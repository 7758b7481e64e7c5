"""``clawwatch watch --headless`` and ``clawwatch demo --headless``: follow the sources live
and print each step's records as lines (JSON with ``--json``, else plain text), every
secret in them masked."""

from __future__ import annotations

import errno
import functools
import os
import sys

from monitor.cli_setup import (
    SetupError,
    checked_config,
    detection_engine,
    discover_inputs,
    log_stream,
    note,
    require_inputs,
    source_set,
    start_metrics_if_asked,
)
from monitor.discovery import Discovered, rolling_log
from monitor.display import json_dumps, printable
from monitor.log_names import every_days_log
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


def cmd_watch(args) -> int:
    from monitor.act.loop import build_action_loop
    from monitor.live import install_stop_signals, run_live
    from monitor.pipeline import Monitor, history_cutoff
    from monitor.restart import ReportedBefore, rewound
    from monitor.sources.checkpoint import (
        CheckpointInUse,
        CheckpointPathError,
        CheckpointStore,
        default_checkpoint_path,
        unreadable_checkpoint_note,
    )
    from monitor.sources.history_split import reader_processes

    stop = install_stop_signals()       # a signal during setup ends the loop at its start
    stream = log_stream(args)
    found = discover_inputs(args)
    if stream is not None:              # the stream is the log; a state dir only if there
        if not (found.state_dir and os.path.isdir(found.state_dir)):
            found.state_dir = None
        found.log_path = None
    else:
        require_inputs(args, found)
    config = checked_config(args.config)
    store = None
    if not args.no_checkpoint:
        store = CheckpointStore(args.checkpoint or default_checkpoint_path(
            found.state_dir, stream or checkpoint_log_name(found), claude_dirs=found.claude_dirs,
            codex_dirs=found.codex_dirs))
        try:
            store.check_writable()
            store.claim()
        except CheckpointPathError as exc:
            raise SetupError(f"clawwatch watch: {exc} (give --checkpoint FILE or "
                             "--no-checkpoint)") from None
        except CheckpointInUse as exc:
            note(f"clawwatch watch: {exc}; this one neither reads nor writes it (give it "
                 "a --checkpoint FILE of its own)")
            store = None
    resume = store.load() if store else None
    if store is not None and store.unreadable:
        note(unreadable_checkpoint_note(store))
    sources = source_set(
        state_dir=found.state_dir, log_path=found.log_path,
        resume=resume if args.from_start else rewound(resume), log_stream=stream,
        from_start=args.from_start, claude_dirs=tuple(found.claude_dirs),
        codex_dirs=tuple(found.codex_dirs),
        **({} if stream else rolling_log(found)),
        history_readers=reader_processes(config.history.reader_processes))
    monitor = Monitor(sources, detection_engine(config),
                      detect_since=None if args.from_start else history_cutoff(config))
    if resume is not None and not args.from_start:
        monitor.reported_before = ReportedBefore(resume)
    try:
        hub, server = start_metrics_if_asked(args, config, monitor)
    except SetupError:
        sources.close()
        raise
    printer = functools.partial(emit_records, as_json=args.json)
    actions = build_action_loop(monitor, found, config, mode=args.act, gateway_url=args.gateway)
    try:
        run_live(monitor, actions.wrap_emit(hub.wrap_emit(printer) if hub else printer),
                 seconds=args.seconds, poll_seconds=args.poll, store=store,
                 catch_up_quietly=resume is None and not args.from_start, stop=stop,
                 step=hub.step if hub else None,
                 caught_up=lambda seconds: note(
                     f"clawwatch watch: caught up on the history ({len(monitor.sessions)} "
                     f"sessions, {seconds:.1f} s); reporting from here"))
        actions.finish(stop)
    finally:
        emit_records(actions.close(), args.json)
        if server is not None:
            server.close()
        sources.close()
        if store is not None:
            store.release()
    for failure in sources.stream_failures():
        print(printable(f"clawwatch: {failure}"), file=sys.stderr)
        return 2
    return 0


def checkpoint_log_name(found: Discovered) -> str | None:
    """The log as the default checkpoint's name holds it: a dated log found by its rolling
    name is every day's file (``every_days_log``), so a watch restarted after the gateway moved
    to the next day's file resumes from the checkpoint it saved the day before."""
    if found.log_is_rolling:
        return every_days_log(found.log_dirs, found.log_family)
    return found.log_path


def cmd_demo(args) -> int:
    """The demo's simulated sessions, watched as ``watch --headless`` watches."""
    from monitor.act.loop import build_action_loop
    from monitor.demo import DemoWorld
    from monitor.live import install_stop_signals, run_live
    from monitor.pipeline import Monitor
    from monitor.sources.sourceset import SourceSet

    stop = install_stop_signals()
    world = DemoWorld(era="legacy" if args.legacy else "sqlite", rate=args.rate).start()
    actions = sources = server = None
    try:
        config = checked_config(args.config, env=world.config_env())
        sources = SourceSet(state_dir=str(world.state_dir), log_path=str(world.log_path),
                            claude_dirs=world.claude_dirs)
        monitor = Monitor(sources, detection_engine(config))
        hub, server = start_metrics_if_asked(args, config, monitor)
        printer = functools.partial(emit_records, as_json=args.json)
        actions = build_action_loop(monitor, world.discovered(), config, mode=args.act,
                                    controller=world.controller(config))
        run_live(monitor, actions.wrap_emit(hub.wrap_emit(printer) if hub else printer),
                 seconds=args.seconds, poll_seconds=0.5, catch_up_quietly=False, stop=stop,
                 step=hub.step if hub else None)
    finally:
        if actions is not None:
            emit_records(actions.close(), args.json)
        if server is not None:
            server.close()
        if sources is not None:
            sources.close()
        world.close()
    return 0


def emit_records(records: list[Record], as_json: bool, out=None) -> None:
    """The records as lines (to standard output unless ``out`` is given); every output has
    its secrets masked. With standard output closed (``>&-``) they are written nowhere, as
    ``print`` writes nothing; a terminal that was closed (``EIO``) is a reader gone, as a
    broken pipe is."""
    out = sys.stdout if out is None else out
    if out is None:
        return
    try:
        if as_json:
            out.writelines(json_dumps(redacted_json(record), default=str) + "\n"
                           for record in records)
        else:
            out.writelines(_human_line(redacted(record)) + "\n" for record in records)
        out.flush()
    except OSError as exc:
        if exc.errno != errno.EIO:
            raise
        raise BrokenPipeError(errno.EPIPE, "the terminal was closed") from None


def _human_line(record: Record) -> str:
    """One record as one line of plain text; data in it made printable (one line, no
    control character reaches the terminal)."""
    return printable(_human_text(record))


def _human_text(record: Record) -> str:
    if isinstance(record, FindingRecord):
        return (f"{record.ts} {record.level.upper():8} {record.key} {record.detector} "
                f"x{record.count} (call {record.at_call}): {record.message}"
                + (" [under way when the watch started]" if record.caught_up else ""))
    if isinstance(record, ToolCallRecord):
        return f"{record.ts} call     {record.key} #{record.at_call} {record.name}"
    if isinstance(record, SessionRecord):
        return f"{record.ts} session  {record.key} {record.status}"
    if isinstance(record, ActionRecord):
        return f"{record.ts} ACTION   {record.key} {record.action} ok={record.ok}"
    kind = "error" if isinstance(record, ErrorRecord) else "notice"
    return f"{record.ts} {kind:8} {record.path or ''} {getattr(record, 'where', None) or ''} " \
           f"{record.message}"

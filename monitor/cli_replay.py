"""``clawwatch replay``: read the history given to its end (``monitor.replay``) and print
the replay document, as JSON or as a table of sources and sessions."""

from __future__ import annotations

import os
import sys

from monitor.cli_setup import (
    SetupError,
    checked_config,
    chosen_sources,
    discover_inputs,
    explicit_cli_dirs,
    log_stream,
    note,
    source_set,
)
from monitor.discovery import agents_dir_problem, discovery_notes, no_openclaw_note
from monitor.display import json_dumps, printable
from monitor.named_inputs import unreadable_named_input
from monitor.redaction import redact_record


def cmd_replay(args) -> int:
    from monitor.detect.engine import DetectionEngine
    from monitor.replay import ReplayInput, default_jobs, replay
    from monitor.replay_cache import cache_dir

    problem = unreadable_named_input(args, chosen_sources(args))
    if problem:
        raise SetupError(f"clawwatch replay: {problem}")
    if args.jobs is not None and args.jobs < 1:
        raise SetupError("clawwatch replay: --jobs must be 1 or more")
    stream = log_stream(args)
    found = discover_inputs(args) if (args.state_dir or not args.paths) else None
    state_dir = found.state_dir if found else None
    # Claude Code / Codex dirs: discovered with the rest, or with PATHs only those given.
    claude_dirs, codex_dirs = (tuple(found.claude_dirs), tuple(found.codex_dirs)) if found \
        else explicit_cli_dirs(args)
    if found is not None and not args.paths:
        if not state_dir or not os.path.isdir(state_dir):
            if not (stream or args.log or claude_dirs or codex_dirs) or args.state_dir:
                raise SetupError(
                    f"clawwatch replay: no OpenClaw state dir at {state_dir or '(none)'}, "
                    "nor a Claude Code or Codex dir; pass --state-dir DIR, --claude-dir DIR, "
                    "--codex-dir DIR or PATHs to read")
            if "openclaw" in chosen_sources(args) and not (stream or args.log):
                note(no_openclaw_note(found, "reading"))
            state_dir = None        # the log, Claude Code or Codex alone
    if found is not None and not stream:
        for line in discovery_notes(found, live=False):
            note(line)
    log_path = None if stream else args.log or (
        found.log_path if found and found.log_path and os.path.exists(found.log_path) else None)
    config = checked_config(args.config)
    what = ReplayInput(state_dir=state_dir, log_path=log_path, paths=tuple(args.paths),
                       include_archives=args.archives, log_stream=stream,
                       claude_dirs=claude_dirs, codex_dirs=codex_dirs)
    sources = source_set(state_dir=state_dir, log_path=log_path, paths=what.paths,
                         include_archives=args.archives, replay=True, log_stream=stream,
                         claude_dirs=claude_dirs, codex_dirs=codex_dirs)
    if not sources.sources and (not state_dir or agents_dir_problem(state_dir)):
        raise SetupError("clawwatch replay: nothing readable was given")
    document = redact_record(replay(what, config, DetectionEngine, args.jobs or default_jobs(),
                                    sources=sources,
                                    cache=None if args.no_cache else cache_dir()))
    for stream_note in sources.stream_notes():
        note(f"clawwatch: {stream_note}")
    if args.json:
        sys.stdout.write(json_dumps(document) + "\n")
    else:
        print_replay_table(document)
    return 0


def print_replay_table(document: dict) -> None:
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

"""The ``clawwatch`` command line's options (shared/CONTRACT.md): the sub-commands and the
global options each of them takes."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

from monitor import __version__

# Global options: given before the sub-command (``clawwatch --act off demo``) or after it
# (``clawwatch demo --act off``), they mean the same; given in both places, the one after
# the sub-command wins. The top-level parser defines each with default None; a sub-command
# defines the ones it uses with default SUPPRESS, so that its namespace, which argparse
# copies over the top-level one, only holds those given after it. A global option a
# sub-command does not use is refused (exit 2), never silently dropped.
GLOBAL_OPTIONS: dict[str, tuple[str, dict]] = {
    "state_dir": ("--state-dir", {"help": "OpenClaw state dir (default: $OPENCLAW_STATE_DIR, "
                                          "~/.openclaw)"}),
    "profile": ("--profile", {"help": "use ~/.openclaw-<profile>"}),
    "log": ("--log", {"help": "gateway log file, or - for standard input (default: "
                              "logging.file, or the newest /tmp/openclaw/openclaw-*.log); "
                              "any form: the JSON file log, console output (docker logs), "
                              "journalctl -o json or -o short-iso"}),
    "journal": ("--journal", {"metavar": "UNIT", "help": (
        "read the gateway log from the systemd journal of UNIT (journalctl -o json -u UNIT; "
        "watch follows it)")}),
    "gateway": ("--gateway", {"help": "gateway URL, ws://HOST:PORT"}),
    "claude_dir": ("--claude-dir", {"metavar": "DIR", "action": "append", "help": (
        "Claude Code projects dir, or a config dir holding projects/ (repeatable; default: "
        "$CLAUDE_CONFIG_DIR, ~/.config/claude/projects and ~/.claude/projects)")}),
    "codex_dir": ("--codex-dir", {"metavar": "DIR", "action": "append", "help": (
        "Codex CLI sessions dir, or a Codex home holding sessions/ (repeatable; default: "
        "$CODEX_HOME/sessions, ~/.codex/sessions)")}),
    "source": ("--source", {"metavar": "LIST", "help": (
        "what to watch, comma-separated: openclaw,claude-code,codex (default: every source "
        "found)")}),
    "config": ("--config", {"help": "clawwatch config file"}),
    "theme": ("--theme", {"help": "dashboard theme name"}),
    "act": ("--act", {"choices": ("off", "dry-run", "auto"),
                      "help": "action mode (default: actions.mode in the config)"}),
    "metrics": ("--metrics", {"metavar": "HOST:PORT", "help": (
        "serve Prometheus/OpenMetrics at http://HOST:PORT/metrics (default: metrics.listen "
        "in the config; keep it on loopback, e.g. 127.0.0.1:9464)")}),
}
DISCOVERY = ("state_dir", "profile", "log", "gateway", "config", "claude_dir", "codex_dir",
             "source")
#: The global options each sub-command uses (None: the dashboard, which uses them all).
USES: dict[str | None, tuple[str, ...]] = {
    None: tuple(GLOBAL_OPTIONS),
    "replay": (*DISCOVERY, "journal"),
    "watch": (*DISCOVERY, "journal", "act", "theme", "metrics"),
    "demo": ("config", "act", "theme", "metrics"),
    "stop": DISCOVERY,
    "config": ("config",),
}


def number_from(low: float, high: float) -> Callable[[str], float]:
    """An argparse type: a number from ``low`` to ``high``. NaN, infinities and numbers
    outside are refused (exit 2, naming the range): a poll of 0 spins a core, a deadline of
    NaN never comes, a rate of -5 runs unthrottled."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not (math.isfinite(value) and low <= value <= high):
            raise argparse.ArgumentTypeError(
                f"{text!r}: give a number from {low:.10g} to {high:.10g}")
        return value
    return parse


#: ``--seconds``: at most a year (leave it out to run until stopped).
SECONDS = number_from(0.01, 365 * 24 * 3600)
#: ``--poll``: below 0.05 s the safety-net poll would keep a core busy.
POLL_SECONDS = number_from(0.05, 3600)
#: ``--rate``: simulated turns per second, all demo sessions together.
DEMO_RATE = number_from(0.01, 1000)
#: ``stop --timeout``: seconds per gateway call attempt.
RPC_TIMEOUT = number_from(0.01, 3600)


def _add_global_options(parser: argparse.ArgumentParser, names: tuple[str, ...], *,
                        top: bool = False) -> None:
    for name in names:
        flag, options = GLOBAL_OPTIONS[name]
        parser.add_argument(flag, dest=name, default=None if top else argparse.SUPPRESS,
                            **options)


def refuse_unused_globals(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Exit 2 naming a global option the sub-command would ignore."""
    used = USES.get(args.command, tuple(GLOBAL_OPTIONS))
    for name, (flag, _) in GLOBAL_OPTIONS.items():
        if name not in used and getattr(args, name, None) is not None:
            parser.error(f"{flag} does not apply to 'clawwatch {args.command}'")


class _VersionAction(argparse.Action):
    """``--version``: the version and the build (pure Python or compiled), found only when
    asked for."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="show the version and build, and exit")

    def __call__(self, parser, namespace, values, option_string=None):
        from monitor.compiled import build_description

        print(f"clawwatch {__version__} ({build_description()})")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="clawwatch",
        description="Watch OpenClaw sessions for tool-call loops and token burn, and stop them.")
    parser.add_argument("--version", action=_VersionAction)
    _add_global_options(parser, tuple(GLOBAL_OPTIONS), top=True)
    commands = parser.add_subparsers(dest="command")

    replay = commands.add_parser("replay", help="read history to the end and report")
    _add_global_options(replay, USES["replay"])
    replay.add_argument("paths", nargs="*", metavar="PATH",
                        help="agent DBs, sessions dirs, transcripts or gateway logs")
    replay.add_argument("--json", action="store_true", help="print one JSON document")
    replay.add_argument("--archives", action="store_true",
                        help="also read *.jsonl.reset.* / *.jsonl.deleted.* archives")
    replay.add_argument("--jobs", type=int, metavar="N",
                        help="worker processes reading sessions in parallel (default: every "
                             "core); the document is the same for any N")
    replay.add_argument("--no-cache", action="store_true",
                        help="a cold run: read every session, neither reading nor writing "
                             "the replay cache (~/.cache/clawwatch/replay)")

    watch = commands.add_parser("watch", help="follow live and print findings")
    _add_global_options(watch, USES["watch"])
    watch.add_argument("--headless", action="store_true", help="no dashboard: print lines")
    watch.add_argument("--json", action="store_true", help="JSON lines")
    watch.add_argument("--seconds", type=SECONDS, help="stop after N seconds")
    watch.add_argument("--from-start", action="store_true",
                       help="report history too (default: catch up silently, then go live)")
    watch.add_argument("--checkpoint", help="checkpoint file (default: per-user state dir)")
    watch.add_argument("--no-checkpoint", action="store_true",
                       help="neither read nor write a checkpoint")
    watch.add_argument("--poll", type=POLL_SECONDS, default=1.0,
                       help="safety-net poll interval in seconds (default 1)")

    demo = commands.add_parser("demo", help="simulated looping sessions, watched live")
    _add_global_options(demo, USES["demo"])
    demo.add_argument("--headless", action="store_true", help="no dashboard: print lines")
    demo.add_argument("--json", action="store_true", help="JSON lines")
    demo.add_argument("--seconds", type=SECONDS, help="stop after N seconds")
    demo.add_argument("--legacy", action="store_true", help="write legacy JSONL, not SQLite")
    demo.add_argument("--rate", type=DEMO_RATE,
                      help="simulated model turns per second, all sessions together (default 8)")

    stop = commands.add_parser("stop", help="abort a session's active run through the gateway")
    _add_global_options(stop, USES["stop"])
    stop.add_argument("session_key", metavar="SESSION_KEY")
    stop.add_argument("--kill", action="store_true", help="also kill the run's exec processes")
    stop.add_argument("--method", choices=("abort", "stop-text", "cli"),
                      help="chat.abort (default), a /stop message, or the openclaw CLI")
    stop.add_argument("--json", action="store_true", help="JSON lines")
    stop.add_argument("--timeout", type=RPC_TIMEOUT, help="seconds per gateway call attempt")

    config = commands.add_parser("config", help="configuration tools")
    config_commands = config.add_subparsers(dest="config_command")
    check = config_commands.add_parser("check", help="validate a config file")
    check.add_argument("file", nargs="?", help="the file to check (default: --config, "
                                               "$CLAWWATCH_CONFIG, the user config)")
    _add_global_options(check, USES["config"])
    return parser

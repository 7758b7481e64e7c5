"""``clawwatch watch --headless --json --act MODE`` as the CLI runs it once actions are wired.

Usage: ``python -m tests.e2e.act_watch --state-dir DIR --log FILE --config FILE --act auto
--seconds N``. Builds the same pipeline as ``monitor.cli_watch.cmd_watch`` (discovery, config,
sources, detection engine, ``run_live``) plus ``monitor.act.loop.build_action_loop``, and
prints JSON lines (plus one ``notice`` "caught up" once history is read). The e2e tests
run it so they exercise the action integration exactly as the CLI does, independently of
when the CLI wiring lands.
"""

from __future__ import annotations

import argparse
import json
import sys

from monitor.act.loop import build_action_loop
from monitor.config import load_config
from monitor.detect.engine import DetectionEngine
from monitor.discovery import discover
from monitor.live import run_live
from monitor.pipeline import Monitor
from monitor.records import NoticeRecord, Record, as_json
from monitor.sources.sourceset import SourceSet


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--state-dir")
    parser.add_argument("--log")
    parser.add_argument("--gateway")
    parser.add_argument("--config")
    parser.add_argument("--act", choices=("off", "dry-run", "auto"))
    parser.add_argument("--seconds", type=float)
    parser.add_argument("--poll", type=float, default=1.0)
    parser.add_argument("--hung-interval", type=float, default=5.0)
    args = parser.parse_args(argv)
    found = discover(state_dir=args.state_dir, log=args.log, gateway=args.gateway)
    config = load_config(args.config)
    sources = SourceSet(state_dir=found.state_dir, log_path=found.log_path)
    monitor = Monitor(sources, DetectionEngine(config))

    def emit(records: list[Record]) -> None:
        for record in records:
            sys.stdout.write(json.dumps(as_json(record), ensure_ascii=False) + "\n")
        sys.stdout.flush()

    actions = build_action_loop(monitor, found, config, mode=args.act,
                                hung_interval=args.hung_interval)
    try:
        run_live(monitor, actions.wrap_emit(emit), seconds=args.seconds,
                 poll_seconds=args.poll, catch_up_quietly=True,
                 caught_up=lambda seconds: emit([NoticeRecord(
                     ts="", source="act_watch", path=None, message="caught up")]))
    finally:
        emit(actions.close())
        sources.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

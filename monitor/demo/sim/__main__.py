"""``python -m monitor.demo.sim``: write simulated sessions into a state dir, print the
ground truth."""

from __future__ import annotations

import argparse
import json
import sys

from monitor.demo.sim.scenarios import SCENARIOS, make_scenario
from monitor.demo.sim.simulator import Simulator


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m monitor.demo.sim",
        description="Write simulated OpenClaw sessions live and print what was written as JSON.")
    parser.add_argument("--state-dir", required=True, help="OpenClaw state dir to write into")
    parser.add_argument("--era", choices=["sqlite", "legacy"], default="sqlite")
    parser.add_argument("--log", help="gateway log file to append to")
    parser.add_argument("--agent", default="main", help="agent id (default: main)")
    parser.add_argument("--scenarios", default="hammer,pingpong,healthy",
                        help=f"comma-separated, from: {', '.join(SCENARIOS)}")
    parser.add_argument("--limit", type=int, default=None,
                        help="end every session after this many tool calls")
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--calls", type=int, help="stop after this many tool calls in total")
    budget.add_argument("--seconds", type=float, help="stop after this many seconds")
    parser.add_argument("--rate", type=float, default=10.0,
                        help="model turns per second across all sessions (0: no pause)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--loop-warnings", action="store_true",
                        help="also log OpenClaw's generic-repeat loop warnings at 10, 20, ...")
    parser.add_argument("--split-writes", action="store_true",
                        help="legacy era: write each JSONL line in two flushed chunks")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    names = [name.strip() for name in args.scenarios.split(",") if name.strip()]
    try:
        params = {} if args.limit is None else {"limit": args.limit}
        scenarios = [make_scenario(name, **params) for name in names]
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    calls = args.calls if args.calls is not None or args.seconds is not None else 50
    with Simulator(args.state_dir, era=args.era, log_path=args.log, agent_id=args.agent,
                   seed=args.seed, loop_warnings=args.loop_warnings,
                   split_writes=args.split_writes) as sim:
        for scenario in scenarios:
            sim.add_session(scenario)
        try:
            sim.run(duration=args.seconds, calls=calls, rate=args.rate or None)
        except KeyboardInterrupt:
            pass
        summary = {"state_dir": args.state_dir, "era": args.era, "path": str(sim.path),
                   "log": args.log, "sessions": sim.expected()}
    json.dump(summary, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

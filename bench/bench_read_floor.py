"""Replay against the bare read floor of the same state dir, in the same shell.

The floor is what any reader must do before it can detect anything, in plain Python in one
process: in the SQLite era, select every row of every agent's ``transcript_events`` and
decompress every ``event_zstd`` blob; in the legacy era, read every transcript's bytes and
split them into lines. ``python -m monitor replay --json --no-cache`` (every detector on,
``--jobs`` at its default: all cores) is timed against it, the two alternating for
``--runs`` rounds after one warm-up each; medians, the spread (max−min over median) and
the ratio replay/floor are printed. CPU time and the largest process's peak RSS come from
``wait4``; the whole tree's peak memory is sampled (summed PSS).

    .venv/bin/python bench/bench_read_floor.py [--dir /tmp/clawwatch-bench] [--runs 3]
        [--eras sqlite,legacy] [--results FILE] [--breakdown] [--monitor-root DIR]

``--breakdown`` also times the replay with every detector off (``reading``) in the same
rounds: how far reading, decoding, typing and counting alone are from the floor.

The dirs are ``bench/gen_large_state.py``'s (one per era, same content).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

from bench_replay import median_of, spread, timed, without_detectors  # noqa: E402


def read_floor_sqlite(state_dir: Path) -> dict[str, int]:
    """Every row of every agent database, every blob decompressed."""
    import zstandard

    decompressor = zstandard.ZstdDecompressor()
    rows = text_bytes = 0
    for database in sorted(state_dir.glob("agents/*/agent/*.sqlite")):
        conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
        try:
            for event_json, event_zstd, utf8_bytes in conn.execute(
                    "SELECT event_json, event_zstd, event_utf8_bytes FROM transcript_events"):
                rows += 1
                if event_json is not None:
                    text_bytes += len(event_json)
                elif event_zstd is not None:
                    text_bytes += len(decompressor.decompress(
                        event_zstd, max_output_size=utf8_bytes or 0))
        finally:
            conn.close()
    return {"rows": rows, "bytes": text_bytes}


def read_floor_legacy(state_dir: Path) -> dict[str, int]:
    """Every transcript's bytes, split into lines."""
    lines = total = 0
    for transcript in sorted(state_dir.glob("agents/*/sessions/*.jsonl")):
        data = transcript.read_bytes()
        total += len(data)
        lines += len(data.splitlines())
    return {"rows": lines, "bytes": total}


FLOORS = {"sqlite": read_floor_sqlite, "legacy": read_floor_legacy}


def bench_era(era: str, state_dir: Path, runs: int, out_dir: Path,
              breakdown: bool = False, monitor_root: Path = REPO) -> dict:
    commands = {
        "replay": [sys.executable, "-m", "monitor", "replay", "--state-dir", str(state_dir),
                   "--json", "--no-cache"],
        "floor": [sys.executable, __file__, "--floor", era, str(state_dir)],
    }
    if breakdown:
        commands["reading"] = without_detectors(commands["replay"], out_dir)
    results: dict[str, list[dict]] = {name: [] for name in commands}
    for round_number in range(runs + 1):
        for name, command in commands.items():
            figures = timed(command, out_dir / f"{era}-{name}.out",
                            REPO if name == "floor" else monitor_root, None)
            if round_number:                     # round 0 warms the page cache
                results[name].append(figures)
    floor_counts = json.loads((out_dir / f"{era}-floor.out").read_text())
    replay = median_of(results["replay"])
    floor = median_of(results["floor"])
    summary = {"era": era, "dir": str(state_dir), "floor_counts": floor_counts,
               "replay": replay, "floor": floor,
               "replay_spread": spread(results["replay"]),
               "floor_spread": spread(results["floor"]),
               "ratio_wall": replay["wall"] / floor["wall"],
               "ratio_cpu": replay["cpu"] / floor["cpu"]}
    if breakdown:
        reading = median_of(results["reading"])
        summary.update(reading=reading, reading_spread=spread(results["reading"]),
                       reading_ratio_wall=reading["wall"] / floor["wall"])
    return summary


def print_era(summary: dict) -> None:
    replay, floor = summary["replay"], summary["floor"]
    counts = summary["floor_counts"]
    print(f"{summary['era']}: {summary['dir']} ({counts['rows']:,} rows, "
          f"{counts['bytes'] / 1e6:,.0f} MB of event text)")
    rows = [("replay", replay, summary["replay_spread"]),
            ("floor", floor, summary["floor_spread"])]
    if "reading" in summary:
        rows.append(("reading", summary["reading"], summary["reading_spread"]))
    for name, figures, spread_of in rows:
        print(f"  {name:7} wall {figures['wall']:7.2f} s (spread {spread_of:4.0%})  "
              f"cpu {figures['cpu']:7.2f} s  peak RSS {figures['rss_mb']:6.0f} MB, "
              f"whole tree {figures['tree_mb']:6.0f} MB")
    print(f"  replay / floor: {summary['ratio_wall']:.1f}x wall, "
          f"{summary['ratio_cpu']:.1f}x cpu")
    if "reading" in summary:
        print(f"  reading (every detector off) / floor: "
              f"{summary['reading_ratio_wall']:.1f}x wall")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", default="/tmp/clawwatch-bench",
                        help="the root gen_large_state.py wrote (one subdir per era)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--eras", default="sqlite,legacy")
    parser.add_argument("--results", help="write the figures as JSON here")
    parser.add_argument("--breakdown", action="store_true",
                        help="also time the replay with every detector off (`reading`)")
    parser.add_argument("--monitor-root", default=str(REPO),
                        help="run `python -m monitor` from this dir (a patched or compiled "
                             "copy, bench/build_compiled.py)")
    parser.add_argument("--floor", nargs=2, metavar=("ERA", "DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.floor:
        era, state_dir = args.floor
        print(json.dumps(FLOORS[era](Path(state_dir))))
        return 0
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    root = Path(args.dir)
    eras = [era.strip() for era in args.eras.split(",") if era.strip()]
    unknown = [era for era in eras if era not in FLOORS]
    if unknown:
        parser.error(f"unknown era {unknown[0]!r}: choose from {', '.join(FLOORS)}")
    missing = [root / era for era in eras if not (root / era).is_dir()]
    if missing:
        print(f"bench_read_floor: {missing[0]} is not a directory; write it with "
              f"bench/gen_large_state.py --out {root}", file=sys.stderr)
        return 2
    out_dir = root / "bench-out"
    out_dir.mkdir(exist_ok=True)
    summaries = []
    for era in eras:
        summary = bench_era(era, root / era, args.runs, out_dir, args.breakdown,
                            Path(args.monitor_root))
        print_era(summary)
        summaries.append(summary)
    if args.results:
        Path(args.results).write_text(json.dumps(summaries, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

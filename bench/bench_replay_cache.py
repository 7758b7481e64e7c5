"""Warm replay against cold: ``clawwatch replay`` of an unchanged dir answered from the
replay cache, and after one session was appended to, as a share of a cold read.

Runs, per era, ``--runs`` times: a cold replay into an empty private ``XDG_CACHE_HOME`` (which
writes the cache) and a warm one from it; then appends a line to one
transcript and times the next replay (the line is removed again). Medians; the documents
must be identical.
Goal (issue 11): warm ≤ 0.1× cold. The data comes from ``bench/gen_large_state.py``.

    .venv/bin/python bench/bench_replay_cache.py [--dir /tmp/clawwatch-bench] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GOAL = 0.1


def timed(state_dir: Path, env: dict, *extra: str) -> tuple[float, str]:
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "monitor", "replay", "--state-dir",
                             str(state_dir), "--json", *extra], cwd=REPO, env=env,
                            capture_output=True, text=True, check=True)
    return time.perf_counter() - started, result.stdout


def append_line(state_dir: Path) -> tuple[Path, int]:
    """Append a user line to the largest transcript; the file and its size before."""
    sessions = state_dir / "agents" / "main" / "sessions"
    path = max(sessions.glob("*.jsonl"), key=lambda p: p.stat().st_size)
    size = path.stat().st_size
    with path.open("a") as handle:
        handle.write('{"type":"message","timestamp":"2026-11-30T10:00:00Z",'
                     '"message":{"role":"user","content":"again"}}\n')
    return path, size


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", default="/tmp/clawwatch-bench")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--eras", default="legacy,sqlite")
    args = parser.parse_args()
    for era in args.eras.split(","):
        state_dir = Path(args.dir) / era
        colds, warms = [], []
        for _ in range(args.runs):
            with tempfile.TemporaryDirectory() as cache:
                env = {**os.environ, "XDG_CACHE_HOME": cache}
                seconds, cold = timed(state_dir, env)
                colds.append(seconds)
                seconds, warm = timed(state_dir, env)
                warms.append(seconds)
                assert warm == cold, "the warm document differs from the cold one"
                if era == "legacy" and len(colds) == args.runs:
                    path, size = append_line(state_dir)
                    try:
                        appended, _ = timed(state_dir, env)
                    finally:
                        os.truncate(path, size)     # the bench data as it was
        cold_s, warm_s = statistics.median(colds), statistics.median(warms)
        verdict = "met" if warm_s <= GOAL * cold_s else "missed"
        print(f"{era:7} cold {cold_s:6.2f} s  warm {warm_s:5.2f} s  "
              f"ratio {warm_s / cold_s:.3f} (goal <= {GOAL}: {verdict})")
        if era == "legacy":
            print(f"{era:7} after appending to the largest session: {appended:.2f} s "
                  f"({appended / cold_s:.3f} of cold)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

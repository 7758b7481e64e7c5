"""Time to first board: how soon the dashboard shows a large state dir's active sessions.

Builds the dashboard exactly as ``clawwatch --state-dir DIR`` does (``build_app``), runs it
headless, and timestamps every snapshot the ingest thread publishes. Reported per era:

- first rows: the first snapshot holding any session;
- active shown: the first snapshot holding every session the index lists as running
  (from the generator's manifest), each shown in a live state (not ``done``);
- first scan done: the whole history read (the progress indicator gone), and the RSS, the
  process CPU time and the number of snapshots published then (each era runs in a
  process of its own, so one era's memory is not counted in the next), with the CPU time
  and the peak RSS of the history reader processes (``history.reader_processes``;
  ``--readers 0,auto`` runs the board without them and with them, in turn);
- the MB still to read when the active sessions were shown;
- the board's CPU at rest after the first scan (``--at-rest`` seconds, nothing written: the
  snapshots it still builds and draws once a second, and its sweep of idle files);
- the first scan against the read floor of the same dir (``bench_read_floor``: every row
  read and every blob decompressed, or every transcript read and split into lines), timed
  in the same process after the board: the machine's speed varies from day to day, and
  the ratio holds still where the seconds do not;
- the MB each of them read from disk rather than the page cache: the first read of a dir
  since the machine booted (or since other work evicted it) comes from the disk, and is
  bound by it.

Goal: active sessions within 2 s. The data comes from ``bench/gen_large_state.py``.
Usage::

    .venv/bin/python bench/bench_first_board.py [--dir /tmp/clawwatch-bench] [--eras sqlite,legacy]
        [--readers 0,auto]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_read_floor import FLOORS  # noqa: E402

GOAL_SECONDS = 2.0
#: After the first scan, the board is left this long before its CPU at rest is measured.
AT_REST_SETTLE_SECONDS = 3.0
LIVE_STATES = ("running", "stalled", "looping", "idle")


async def measure(state_dir: str, running_keys: set[str], scan_limit: float,
                  readers: int | None = None, at_rest: float = 0.0) -> dict:
    from monitor.config import Config
    from monitor.ui.factory import DashboardOptions, build_app

    config = Config()
    config = dataclasses.replace(config, history=dataclasses.replace(
        config.history, reader_processes=readers))
    started = time.perf_counter()
    app = build_app(DashboardOptions(state_dir=state_dir), config=config)
    result: dict = {}
    cpu_started = time.process_time()
    children_cpu_started = _children_cpu()
    disk_started = _disk_read_bytes()
    readers_rss = Peak()
    seen = -1
    async with app.run_test(size=(200, 60)):
        while True:
            snapshot = app.latest
            now = time.perf_counter() - started
            readers_rss.sample()
            if now > scan_limit:
                result["scan_done_s"] = None
                break
            if snapshot.seq == seen:        # look at each snapshot once: the watching
                await asyncio.sleep(0.01)   # must not compete with the app for the GIL
                continue
            seen = snapshot.seq
            if snapshot.rows and "first_rows_s" not in result:
                result["first_rows_s"] = round(now, 2)
                result["first_rows_count"] = len(snapshot.rows)
            shown = {row.key for row in snapshot.rows
                     if row.key in running_keys and row.state in LIVE_STATES}
            if shown == running_keys and "active_shown_s" not in result:
                result["active_shown_s"] = round(now, 2)
                result["mb_left_then"] = round(snapshot.scan_bytes_left / 1e6, 1)
                result["still_scanning_then"] = snapshot.scanning
            if not snapshot.scanning and snapshot.seq > 1:
                result["scan_done_s"] = round(now, 2)
                result["sessions_on_board"] = len(snapshot.rows)
                result["rss_mb_then"] = round(psutil.Process().memory_info().rss / 1e6)
                result["cpu_s_then"] = round(time.process_time() - cpu_started, 1)
                result["reader_cpu_s"] = round(_children_cpu() - children_cpu_started, 1)
                result["reader_peak_rss_mb"] = round(readers_rss.peak / 1e6)
                result["disk_mb_then"] = round((_disk_read_bytes() - disk_started) / 1e6)
                result["snapshots"] = snapshot.seq
                break
            await asyncio.sleep(0.01)
        if at_rest and result.get("scan_done_s") is not None:
            await asyncio.sleep(AT_REST_SETTLE_SECONDS)
            cpu, wall = time.process_time(), time.perf_counter()
            await asyncio.sleep(at_rest)
            result["at_rest_core_percent"] = round(
                100 * (time.process_time() - cpu) / (time.perf_counter() - wall), 1)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default="/tmp/clawwatch-bench")
    parser.add_argument("--eras", default="sqlite,legacy")
    parser.add_argument("--scan-limit", type=float, default=900.0,
                        help="stop waiting for the first scan after this many seconds")
    parser.add_argument("--at-rest", type=float, default=20.0,
                        help="after the first scan, measure the board's CPU at rest over "
                             "this many seconds (0: not at all)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--readers", default="auto",
                        help="history.reader_processes to run with, comma-separated, each "
                             "in turn (auto: the config's default; 0: none), e.g. 0,auto")
    args = parser.parse_args(argv)
    root = Path(args.dir)
    running = running_keys(root)
    rows = []
    eras = args.eras.split(",")
    reader_counts = args.readers.split(",")
    for era in eras:
        for readers in reader_counts:
            if len(eras) > 1 or len(reader_counts) > 1:     # each run in a fresh process:
                out = subprocess.run(                        # RSS is not the last run's
                    [sys.executable, __file__, "--dir", args.dir, "--eras", era,
                     "--scan-limit", str(args.scan_limit), "--readers", readers,
                     "--at-rest", str(args.at_rest), "--json"],
                    check=True, capture_output=True, text=True).stdout
                rows.extend(json.loads(out))
                continue
            count = None if readers == "auto" else int(readers)
            result = asyncio.run(measure(str(root / era), running, args.scan_limit, count,
                                         args.at_rest))
            rows.append({"era": era, "readers": readers, "running_sessions": len(running),
                         **result, **read_floor(era, root / era)})
    if args.json:
        print(json.dumps(rows))
        return 0
    for row in rows:
        active = row.get("active_shown_s")
        verdict = "met" if active is not None and active <= GOAL_SECONDS else "missed"
        print(f"{row['era']:7} readers {row['readers']}: first rows {row.get('first_rows_s')} s "
              f"({row.get('first_rows_count')} sessions); {row['running_sessions']} running "
              f"sessions shown at {active} s with {row.get('mb_left_then')} MB still to read "
              f"({verdict}, goal <= {GOAL_SECONDS:g} s); first scan done at "
              f"{row.get('scan_done_s')} s, {row.get('sessions_on_board')} sessions, "
              f"RSS {row.get('rss_mb_then')} MB, CPU {row.get('cpu_s_then')} s (readers: "
              f"{row.get('reader_cpu_s')} s, peak RSS {row.get('reader_peak_rss_mb')} MB), "
              f"{row.get('disk_mb_then')} MB read from disk, {row.get('snapshots')} snapshots; "
              f"at rest after it: {row.get('at_rest_core_percent')} % of a core")
        if row.get("scan_done_s") is not None:
            print(f"{'':7} read floor {row['floor_s']} s wall, {row['floor_cpu_s']} s CPU: first "
                  f"scan / floor {row['scan_done_s'] / row['floor_s']:.1f}x wall, "
                  f"{row['cpu_s_then'] / row['floor_cpu_s']:.1f}x CPU; the floor read "
                  f"{row['floor_disk_mb']} MB from disk")
    return 0


def running_keys(root: Path) -> set[str]:
    """The keys the generator's manifest lists as running. The manifest is not kept: decoded,
    that of 10,003 sessions takes 16 MB, which the board's RSS would count."""
    manifest = json.loads((root / "manifest.json").read_text())
    return {s["key"] for s in manifest["sessions"] if s.get("status") == "running"}


class Peak:
    """The largest summed RSS of this process's reader processes, sampled at most every
    0.2 s (a board's first scan may start ``history.reader_processes`` of them). The
    children are listed again only every 2 s: listing them reads every process's
    ``/proc/<pid>/stat``, in the board's process, holding the GIL its ingest thread needs
    (listed at every sample, that took 1.8 s of the 19.6 s of CPU of a profiled scan)."""

    def __init__(self) -> None:
        self.peak = 0
        self._at = 0.0
        self._listed_at = float("-inf")
        self._children: list[psutil.Process] = []

    def sample(self) -> None:
        now = time.monotonic()
        if now - self._at < 0.2:
            return
        self._at = now
        if now - self._listed_at >= 2.0:
            self._listed_at = now
            self._children = psutil.Process().children(recursive=True)
        total = 0
        for child in self._children:
            try:
                total += child.memory_info().rss
            except psutil.Error:
                pass
        self.peak = max(self.peak, total)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def read_floor(era: str, state_dir: Path) -> dict:
    """The read floor of ``state_dir``, timed in this process."""
    wall, cpu, disk = time.perf_counter(), time.process_time(), _disk_read_bytes()
    FLOORS[era](state_dir)
    return {"floor_s": round(time.perf_counter() - wall, 2),
            "floor_cpu_s": round(time.process_time() - cpu, 2),
            "floor_disk_mb": round((_disk_read_bytes() - disk) / 1e6)}


def _disk_read_bytes() -> int:
    """What this process has read from storage (not the page cache): a scan that reads
    much of the dir from disk is bound by the disk, and its ratio to a floor that found the
    dir cached says more about the cache than about the code."""
    return psutil.Process().io_counters().read_bytes


if __name__ == "__main__":
    sys.exit(main())

"""Dashboard responsiveness: 1,000 sessions, 100 events/s, key press → screen, and CPU.

A writer process (this script with ``--writer``) fills a fresh state dir with
``--sessions`` simulated OpenClaw sessions (SQLite era plus gateway log), then
keeps writing ``--rate`` model turns per second (each a tool call, its result
and the index update, plus gateway log lines). The dashboard is built with
``build_app`` exactly as ``clawwatch --state-dir D --log L`` builds it, and run
headless (the compositor still renders every frame; each screen update is
timestamped together with the state it shows).

Measured, in the dashboard process only:
- first scan: seconds until the board holds every session;
- key latency: from a key event handed to the app (as the terminal driver hands it)
  until the first screen update that shows its effect, for cursor moves, filter,
  sort and pause — p50/p95/max (a cursor key at the end of the list changes nothing
  and is not counted);
- side panes: from a cursor move until the streak/burn panes show the new session
  (needs a snapshot from the ingest thread) — p50/p95/max;
- CPU: process CPU time / wall time over the live phase, in cores.

Goals: key latency p95 <= 100 ms, CPU < 1 core. Usage::

    .venv/bin/python bench/bench_ui.py [--sessions 1000] [--rate 100] [--presses 80]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

GOAL_P95_MS = 100.0
GOAL_CORES = 1.0
SCENARIOS = ("hammer", "pingpong", "poll", "burner", "rotation", "drift")
KEYS = ("down", "down", "up", "f", "o", "p", "p", "down")


def run_writer(state_dir: str, log: str, sessions: int, rate: float) -> int:
    """Fill ``state_dir`` with ``sessions`` sessions, print ``ready``, then write live."""
    from monitor.demo.sim.scenarios import make_scenario
    from monitor.demo.sim.simulator import Simulator

    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    with Simulator(state_dir, log_path=log, seed=1) as sim:
        for n in range(sessions):
            sim.add_session(make_scenario(SCENARIOS[n % len(SCENARIOS)]),
                            key=f"agent:main:bench-{n:04d}")
        for session in sim.sessions:
            sim.step(session)
        print("ready", flush=True)
        sim.run(rate=rate, stop_event=stop)
    return 0


def percentiles(samples: list[float]) -> dict:
    ordered = sorted(samples)
    if not ordered:
        return {"n": 0}
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"n": len(ordered), "p50_ms": round(statistics.median(ordered) * 1000, 1),
            "p95_ms": round(p95 * 1000, 1), "max_ms": round(ordered[-1] * 1000, 1)}


def send_key(app, key: str) -> None:
    """Deliver a key exactly as the terminal driver does (no pilot waiting)."""
    from textual import events

    event = events.Key(key, key if len(key) == 1 else None)
    event.set_sender(app)
    app._driver.send_message(event)


async def measure(state_dir: str, log: str, sessions: int, presses: int) -> dict:
    import psutil

    from monitor.config import Config
    from monitor.ui.factory import DashboardOptions, build_app
    from monitor.ui.panes.side import StreaksPane

    app = build_app(DashboardOptions(state_dir=state_dir, log=log), config=Config())
    process = psutil.Process()
    builds: list[float] = []
    frames: list[tuple[float, tuple]] = []
    result: dict = {}
    async with app.run_test(size=(200, 60)):
        started = time.perf_counter()
        while app.latest.scanning or len(app.latest.rows) < sessions:
            await asyncio.sleep(0.05)
            if time.perf_counter() - started > 300:
                raise SystemExit("first scan did not finish in 300 s")
        result["first_scan_s"] = round(time.perf_counter() - started, 2)
        builder = app.ingest.builder
        original_build = builder.build

        def timed_build():
            t0 = time.perf_counter()
            try:
                return original_build()
            finally:
                builds.append(time.perf_counter() - t0)

        builder.build = timed_build
        screen = app.screen
        streaks = app.query_one(StreaksPane)
        original_refresh = screen._compositor_refresh

        def recorded_refresh() -> None:
            original_refresh()
            frames.append((time.perf_counter(), (
                app.view.selected, app.view.board_filter, app.view.sort, app.view.paused,
                str(streaks.border_title))))

        screen._compositor_refresh = recorded_refresh
        await asyncio.sleep(1.0)
        cpu0, wall0, events0 = process.cpu_times(), time.perf_counter(), app.latest.events
        key_latency: list[float] = []
        side_latency: list[float] = []
        missed = 0
        by_key: dict[str, list[float]] = {}
        for n in range(presses):
            key = KEYS[n % len(KEYS)]
            before = (app.view.selected, app.view.board_filter, app.view.sort, app.view.paused)
            seen = len(frames)
            t0 = time.perf_counter()
            send_key(app, key)
            shown = await first_frame(frames, seen, lambda s, before=before: s[:4] != before,
                                      timeout=1.0 if key in ("down", "up") else 5.0)
            if shown is None:
                if key not in ("down", "up"):
                    missed += 1
                continue
            key_latency.append(shown[0] - t0)
            by_key.setdefault(key, []).append(shown[0] - t0)
            if key in ("down", "up"):
                label = app.latest.row(app.view.selected).label
                side = await first_frame(frames, seen, lambda s, label=label: label in s[4])
                if side is not None:
                    side_latency.append(side[0] - t0)
            await asyncio.sleep(0.2)
        cpu1, wall1 = process.cpu_times(), time.perf_counter()
        busy = (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system)
        result.update({
            "sessions_on_board": len(app.latest.rows),
            "events_folded_live": app.latest.events - events0,
            "live_seconds": round(wall1 - wall0, 1),
            "key_latency": percentiles(key_latency),
            "keys_never_shown": missed,
            "by_key": {key: percentiles(samples) for key, samples in by_key.items()},
            "side_panes_latency": percentiles(side_latency),
            "snapshot_build": percentiles(builds),
            "cpu_cores": round(busy / (wall1 - wall0), 2),
        })
    return result


async def first_frame(frames: list, start: int, shows, timeout: float = 5.0):
    """The first screen update after ``start`` whose recorded state satisfies ``shows``."""
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        for frame in frames[start:]:
            if shows(frame[1]):
                return frame
        await asyncio.sleep(0.001)
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=100.0, help="model turns per second")
    parser.add_argument("--presses", type=int, default=80)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--writer", nargs=2, metavar=("STATE_DIR", "LOG"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.writer:
        return run_writer(args.writer[0], args.writer[1], args.sessions, args.rate)
    root = Path(tempfile.mkdtemp(prefix="clawwatch-bench-ui-"))
    state_dir, log = str(root / "state"), str(root / "openclaw.log")
    writer = subprocess.Popen(
        [sys.executable, __file__, "--writer", state_dir, log, "--sessions", str(args.sessions),
         "--rate", str(args.rate)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        t0 = time.perf_counter()
        if writer.stdout.readline().strip() != "ready":
            raise SystemExit("writer failed")
        prepared = time.perf_counter() - t0
        result = asyncio.run(measure(state_dir, log, args.sessions, args.presses))
    finally:
        writer.stdin.close()
        writer.wait(30)
        shutil.rmtree(root, ignore_errors=True)
    result = {"sessions": args.sessions, "rate": args.rate, "prepare_s": round(prepared, 1),
              **result}
    if args.json:
        print(json.dumps(result))
        return 0
    key, side = result["key_latency"], result["side_panes_latency"]
    print(f"sessions {args.sessions}, {args.rate:g} turns/s; state prepared in "
          f"{result['prepare_s']} s; first scan {result['first_scan_s']} s")
    print(f"key press → screen:   p50 {key['p50_ms']} ms  p95 {key['p95_ms']} ms  "
          f"max {key['max_ms']} ms  (n={key['n']}, never shown: {result['keys_never_shown']}; "
          f"goal p95 <= {GOAL_P95_MS:g} ms)")
    print("  by key: " + ", ".join(f"{k} p95 {v['p95_ms']} ms" for k, v in
                                   result["by_key"].items()))
    if side.get("n"):
        print(f"cursor → side panes:  p50 {side['p50_ms']} ms  p95 {side['p95_ms']} ms  "
              f"max {side['max_ms']} ms  (n={side['n']})")
    build = result["snapshot_build"]
    if build.get("n"):
        print(f"snapshot build:       p50 {build['p50_ms']} ms  p95 {build['p95_ms']} ms "
              f"(n={build['n']})")
    print(f"CPU: {result['cpu_cores']} cores over {result['live_seconds']} s live, "
          f"{result['events_folded_live']:,} events folded (goal < {GOAL_CORES:g} core)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Soak: 1,000 live sessions at 500 transcript events/s against ``watch --headless``.

A writer process (the simulator, SQLite era by default, with its gateway log) keeps
``--sessions`` sessions busy at ``--rate`` transcript events per second, spread round-robin.
The monitor runs as its own process, exactly as a user would start it::

    python -m monitor watch --headless --json --no-checkpoint --state-dir DIR --log LOG

Every ``--sample-seconds`` (default 60) the monitor's RSS, open file descriptors, threads
and CPU time are sampled. After the warm-up the RSS slope (least squares, MB per hour)
and the fd range are reported; the monitor's tool-call lines are counted against the
calls written, to show it kept up. The writer's disk use stays bounded: each minute the
database drops rows older than ``--keep-minutes`` and the gateway log is rotated past
``--rotate-mb``. Sessions never end; each session's growing
``openclaw.cache-ttl`` entry is held to its last 48 tool results, as a time-to-live does.
The writer commits once per model turn; with ``--dir`` on a tmpfs (``/dev/shm``) it writes
~3,300 events/s alone here, ~1,900/s beside the monitor. A run ends at ``--minutes``, at
``--events`` written, or on SIGTERM, each with its summary.

    .venv/bin/python bench/bench_soak.py [--minutes 30] [--events N] [--sessions 1000] [--rate 500]
        [--era sqlite|legacy] [--dir /tmp/clawwatch-soak] [--results FILE]
        [--active-share 0.5 --shift-seconds 300] [--hibernate-after 120]

``--active-share``/``--shift-seconds`` make sessions go idle and come back: only that share
of them gets events at a time, and the busy set moves on every shift, so each session is
idle for a while between its shifts (with ``--hibernate-after`` below the idle time, it
hibernates and wakes every cycle). ``--hibernate-after`` is given to the monitor as
``history.hibernate_after`` in a config file. Besides MB/hour the summary gives the slope
over the second half of the run in MB per million events written. ``--heap-stats FILE``
runs the monitor through ``bench/soak_heap.py``, which samples where its memory is.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import psutil  # noqa: E402

SCENARIO_MIX = (("rotation", 30), ("drift", 20), ("burner", 20), ("hammer", 10),
                ("pingpong", 10), ("poll", 10))
CACHE_TTL_WINDOW = 48


# ------------------------------------------------------------------- writer process

def run_writer(args: argparse.Namespace) -> int:
    """Write ``args.rate`` events/s across ``args.sessions`` sessions until SIGTERM.

    Prints one JSON line per second: events and tool calls written so far."""
    from monitor.demo.sim import Simulator
    from monitor.demo.sim.scenarios import make_scenario
    from monitor.demo.sim.stores import SqliteStore

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    state_dir = Path(args.dir) / "state"
    sim = Simulator(state_dir, era=args.era, log_path=Path(args.dir) / "openclaw.log",
                    seed=args.seed, loop_warnings=True)
    names = [name for name, weight in SCENARIO_MIX for _ in range(weight)]
    sessions = [sim.add_session(make_scenario(names[i % len(names)]),
                                key=f"agent:main:soak-{i:04d}") for i in range(args.sessions)]
    # One transaction per model turn, as the gateway writes a turn: a commit per row held
    # the writer at ~1,400 events/s, below the rates a soak asks for.
    database = sim.store.writer if isinstance(sim.store, SqliteStore) else None
    if database is not None:
        database.autocommit = False
    events = calls = turn = 0
    started = time.monotonic()
    next_report = started + 1.0
    active = max(1, min(len(sessions), round(len(sessions) * args.active_share)))
    current_shift = 0
    keep_rows = int(args.rate * 60 * args.keep_minutes)
    next_trim = started + 60.0
    while not stop.is_set():
        if time.monotonic() >= next_trim:
            trim_store(sim, keep_rows, args.rotate_mb)
            next_trim += 60.0
        shift = int((time.monotonic() - started) / args.shift_seconds) \
            if active < len(sessions) else 0
        if shift != current_shift:
            pause_shift(sim, sessions, active, current_shift, shift)
            current_shift = shift
        session = sessions[(shift * active + turn % active) % len(sessions)]
        turn += 1
        before_events, before_calls = session.events, session.tool_calls
        sim.step(session)
        if database is not None:
            database.commit()
        if len(session.frozen) > CACHE_TTL_WINDOW:
            del session.frozen[:-CACHE_TTL_WINDOW]
        events += session.events - before_events
        calls += session.tool_calls - before_calls
        now = time.monotonic()
        ahead = events / args.rate - (now - started)
        if ahead > 0:
            stop.wait(ahead)
        if now >= next_report:
            print(json.dumps({"events": events, "calls": calls, "t": round(now - started, 1)}),
                  flush=True)
            next_report += 1.0
    sim.close()
    try:
        print(json.dumps({"events": events, "calls": calls, "done": True}), flush=True)
    except BrokenPipeError:
        pass
    return 0


def trim_store(sim, keep_rows: int, rotate_mb: float) -> None:
    """Keep the writer's disk use bounded for runs of hours: the database keeps its newest
    rows (SQLite era) and the gateway log is rotated by rename past ``rotate_mb``."""
    from monitor.demo.sim.stores import SqliteStore
    if isinstance(sim.store, SqliteStore):
        sim.store.writer.prune(keep_rows)
    if sim.log is not None and sim.log.path.stat().st_size > rotate_mb * 1e6:
        sim.log.rotate()


def pause_shift(sim, sessions, active: int, old: int, new: int) -> None:
    """The busy set moves on: the sessions leaving it pause (their index says "done", as
    when a run ends and the user comes back later), those joining it run again."""
    def members(shift: int) -> set[int]:
        return {(shift * active + i) % len(sessions) for i in range(active)}
    leaving, joining = members(old) - members(new), members(new) - members(old)
    for index in leaving:
        sessions[index].status = "done"
        sim.writer.index(sessions[index])
    for index in joining:
        sessions[index].status = "running"


# -------------------------------------------------------------------- the soak run

class LineCounter(threading.Thread):
    """Counts a process's stdout lines by their ``type`` (JSON lines) or last JSON value."""

    def __init__(self, stream) -> None:
        super().__init__(daemon=True)
        self.stream = stream
        self.types: Counter = Counter()
        self.last: dict = {}

    def run(self) -> None:
        for raw in self.stream:
            try:
                record = json.loads(raw)
            except ValueError:
                self.types["unparsed"] += 1
                continue
            self.types[record.get("type", "progress")] += 1
            self.last = record


def sample(process: psutil.Process, started: float) -> dict:
    with process.oneshot():
        cpu = process.cpu_times()
        return {"minute": round((time.monotonic() - started) / 60, 2),
                "rss_mb": round(process.memory_info().rss / 2**20, 1),
                "fds": process.num_fds(), "threads": process.num_threads(),
                "cpu_s": round(cpu.user + cpu.system, 1)}


def slope_per_hour(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of (minute, value), per hour."""
    if len(points) < 2:
        return 0.0
    n = len(points)
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    var = sum((x - mean_x) ** 2 for x, _ in points)
    if var == 0:
        return 0.0
    cov = sum((x - mean_x) * (y - mean_y) for x, y in points)
    return cov / var * 60.0


def run_soak(args: argparse.Namespace) -> dict:
    stopping = threading.Event()        # SIGTERM ends the run early, with its summary
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    root = Path(args.dir)
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENCLAW_", "CLAWWATCH_"))}
    env["PYTHONUNBUFFERED"] = "1"
    writer = subprocess.Popen(
        [sys.executable, __file__, "--writer", "--dir", str(root), "--era", args.era,
         "--sessions", str(args.sessions), "--rate", str(args.rate), "--seed", str(args.seed),
         "--active-share", str(args.active_share), "--shift-seconds", str(args.shift_seconds),
         "--keep-minutes", str(args.keep_minutes), "--rotate-mb", str(args.rotate_mb)],
        stdout=subprocess.PIPE, text=True, env=env, cwd=REPO)
    writer_lines = LineCounter(writer.stdout)
    writer_lines.start()
    deadline = time.monotonic() + 120
    while writer_lines.last.get("calls", 0) < args.sessions and time.monotonic() < deadline:
        time.sleep(0.5)
    config = []
    if args.hibernate_after is not None:
        (root / "config.yaml").write_text(f"history:\n  hibernate_after: {args.hibernate_after}\n")
        config = ["--config", str(root / "config.yaml")]
    launcher = ["-m", "monitor"]
    if args.heap_stats:     # the same CLI, with soak_heap.py's sampler thread beside it
        launcher = [str(REPO / "bench" / "soak_heap.py"), str(Path(args.heap_stats).resolve()),
                    "--every", str(args.sample_seconds), "--"]
    monitor = subprocess.Popen(
        [sys.executable, *launcher, "watch", "--headless", "--json", "--no-checkpoint",
         "--state-dir", str(root / "state"), "--log", str(root / "openclaw.log"), *config],
        stdout=subprocess.PIPE, stderr=open(root / "monitor.stderr", "w"), text=True,
        env=env, cwd=args.monitor_root)
    monitor_lines = LineCounter(monitor.stdout)
    monitor_lines.start()
    process = psutil.Process(monitor.pid)
    started = time.monotonic()
    before = dict(writer_lines.last)
    samples = []
    end = started + args.minutes * 60
    next_sample = started + args.sample_seconds
    try:
        while time.monotonic() < end and not stopping.is_set():
            stopping.wait(min(1.0, max(0.0, end - time.monotonic())))
            written = writer_lines.last.get("events", 0) - before.get("events", 0)
            done = (stopping.is_set() or time.monotonic() >= end
                    or (args.events is not None and written >= args.events))
            if time.monotonic() < next_sample and not done:
                continue
            next_sample += args.sample_seconds
            if monitor.poll() is not None:
                raise SystemExit(f"bench_soak: the monitor exited ({monitor.returncode}); "
                                 f"see {root / 'monitor.stderr'}")
            point = sample(process, started)
            point["written_events"] = writer_lines.last.get("events", 0)
            point["monitor_lines"] = sum(monitor_lines.types.values())
            samples.append(point)
            print(f"  {point['minute']:6.1f} min  rss {point['rss_mb']:7.1f} MB  fds "
                  f"{point['fds']:4}  threads {point['threads']:3}  cpu {point['cpu_s']:7.1f} s"
                  f"  written {point['written_events']:,}", file=sys.stderr, flush=True)
            if done:
                break
    finally:
        writer.send_signal(signal.SIGTERM)
        writer.wait(timeout=60)
        writer_lines.join(timeout=10)
        calls_written = writer_lines.last.get("calls", 0)
        catch_up = time.monotonic() + 30
        while monitor_lines.types["tool_call"] < calls_written - args.sessions \
                and time.monotonic() < catch_up:
            time.sleep(0.5)
        monitor.send_signal(signal.SIGTERM)
        monitor.wait(timeout=60)
        monitor_lines.join(timeout=10)
        elapsed = time.monotonic() - started
    return summarise(args, samples, before, writer_lines.last, monitor_lines, elapsed)


def summarise(args, samples, before, written, monitor_lines, elapsed) -> dict:
    warm = [s for s in samples if s["minute"] > args.warmup_minutes]
    rss = [(s["minute"], s["rss_mb"]) for s in warm]
    fds = [s["fds"] for s in warm]
    span = (samples[-1]["minute"] - samples[0]["minute"]) if len(samples) > 1 else 0
    cpu_share = ((samples[-1]["cpu_s"] - samples[0]["cpu_s"]) / (span * 60)
                 if span else 0.0)
    events = written.get("events", 0) - before.get("events", 0)
    half = samples[len(samples) // 2:] if len(samples) >= 4 else []
    # slope_per_hour is per 60 x-units: x in millions of events, so divide by 60
    per_million = slope_per_hour([(s["written_events"] / 1e6, s["rss_mb"]) for s in half]) / 60
    return {
        "minutes": round(elapsed / 60, 1), "sessions": args.sessions, "rate": args.rate,
        "era": args.era,
        "warmup_minutes": args.warmup_minutes, "samples": samples,
        "events_written": events, "events_per_s": round(events / elapsed, 1),
        "calls_written": written.get("calls", 0) - before.get("calls", 0),
        "monitor_lines": dict(monitor_lines.types),
        "rss_slope_mb_per_hour": round(slope_per_hour(rss), 2),
        "rss_slope_second_half_mb_per_million_events": round(per_million, 3),
        "second_half_from_minute": half[0]["minute"] if half else None,
        "rss_after_warmup_mb": [min((y for _, y in rss), default=0),
                                max((y for _, y in rss), default=0)],
        "fds_after_warmup": [min(fds, default=0), max(fds, default=0)],
        "cpu_share": round(cpu_share, 3),
    }


def print_summary(result: dict) -> None:
    print(f"\nsoak: {result['sessions']} sessions, {result['era']} era, {result['minutes']} "
          f"min; while watched: {result['events_written']:,} events written "
          f"({result['events_per_s']:.0f}/s), {result['calls_written']:,} tool calls")
    lines = result["monitor_lines"]
    print(f"monitor printed {lines.get('tool_call', 0):,} tool_call lines (history before its "
          f"start is caught up quietly), "
          f"{lines.get('finding', 0):,} findings, {lines.get('error', 0)} errors")
    low, high = result["rss_after_warmup_mb"]
    print(f"RSS after {result['warmup_minutes']:.3g} min warm-up: {low:.1f}..{high:.1f} MB, slope "
          f"{result['rss_slope_mb_per_hour']:+.2f} MB/hour")
    print(f"RSS slope over the second half (from minute {result['second_half_from_minute']}): "
          f"{result['rss_slope_second_half_mb_per_million_events']:+.3f} MB per million events")
    print(f"open fds after warm-up: {result['fds_after_warmup'][0]}.."
          f"{result['fds_after_warmup'][1]}; monitor CPU: {result['cpu_share'] * 100:.0f}% "
          "of one core")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--events", type=int, default=None,
                        help="end the run once this many events were written while watched")
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=500.0, help="transcript events per second")
    parser.add_argument("--era", choices=("sqlite", "legacy"), default="sqlite")
    parser.add_argument("--dir", default="/tmp/clawwatch-soak")
    parser.add_argument("--sample-seconds", type=float, default=60.0)
    parser.add_argument("--warmup-minutes", type=float, default=None,
                        help="samples before this are left out of the slope "
                             "(default: a third of the run, at most 5)")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--active-share", type=float, default=1.0,
                        help="share of the sessions busy at a time (the rest idle)")
    parser.add_argument("--shift-seconds", type=float, default=300.0,
                        help="the busy share moves on to the next sessions this often")
    parser.add_argument("--hibernate-after", type=float, default=None,
                        help="history.hibernate_after for the monitor (default: its config)")
    parser.add_argument("--keep-minutes", type=float, default=10.0,
                        help="SQLite era: each minute, delete event rows older than this "
                             "many minutes of writing (the monitor reads them within seconds)")
    parser.add_argument("--rotate-mb", type=float, default=1000.0,
                        help="rotate the gateway log by rename past this size")
    parser.add_argument("--results", help="write the figures as JSON here")
    parser.add_argument("--monitor-root", default=str(REPO),
                        help="run `python -m monitor` from this dir (a patched copy)")
    parser.add_argument("--heap-stats", metavar="FILE",
                        help="sample the monitor's allocators into FILE (bench/soak_heap.py)")
    parser.add_argument("--writer", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.warmup_minutes is None:
        args.warmup_minutes = min(5.0, args.minutes / 3)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.writer:
        return run_writer(args)
    result = run_soak(args)
    print_summary(result)
    if args.results:
        Path(args.results).write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``--metrics`` at scale: scrape time and series count with N active sessions.

The simulator writes N sessions (a mix of looping, burning and healthy scenarios, all with
an event in the last minute) into a temp state dir; a ``Monitor`` reads it all through a
``MetricsHub`` and its exporter serves ``/metrics`` on loopback. Measured, in one process:

- scrape: a full HTTP GET of ``/metrics`` (snapshot under the loop's lock + exposition);
- snapshot: the part of a scrape that holds the loop's lock (``MetricsHub.snapshot``);
- the peer: ``json.dumps(monitor.report())``, the replay document of the same state, i.e.
  what ``clawwatch replay --json`` writes for it;
- the series the page holds (per-session and in total) and its size.

Also the hot-path cost: ``MetricsHub.step`` against a plain ``Monitor.step`` when nothing
new is readable (the steady state between scrapes).

Usage::

    .venv/bin/python bench/bench_metrics.py [--sessions 1000] [--rounds 6] [--repeat 30]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

MIX = ("hammer", "pingpong", "poll", "rotation", "burner", "drift", "heavy")


def timed(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        out.append(time.perf_counter() - started)
    return out


def ms(values: list[float]) -> str:
    values = sorted(values)
    p95 = values[min(len(values) - 1, int(len(values) * 0.95))]
    return f"median {statistics.median(values) * 1e3:7.2f} ms  p95 {p95 * 1e3:7.2f} ms"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=6, help="model turns per session")
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--max-sessions", type=int, default=None,
                        help="metrics.max_sessions (default: the config default, 500)")
    args = parser.parse_args()

    from prometheus_client.parser import text_string_to_metric_families

    from monitor.config import MetricsConfig, load_config
    from monitor.demo.sim.simulator import Simulator
    from monitor.detect.engine import DetectionEngine
    from monitor.metrics import MetricsHub
    from monitor.metrics_server import MetricsServer
    from monitor.pipeline import Monitor
    from monitor.sources.sourceset import SourceSet

    max_sessions = args.max_sessions or MetricsConfig().max_sessions
    with tempfile.TemporaryDirectory(prefix="clawwatch-bench-metrics-") as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        sim = Simulator(root / "state", log_path=root / "gateway.log")
        for index in range(args.sessions):
            sim.add_session(MIX[index % len(MIX)], key=f"agent:main:bench-{index:05}")
        for _ in range(args.rounds):
            for session in sim.sessions:
                sim.step(session)
        prepared = time.perf_counter() - started

        config = load_config(None, {"CLAWWATCH_BUDGETS__SESSION_TOKENS": "2000000"})
        monitor = Monitor(SourceSet(state_dir=str(root / "state"),
                                    log_path=str(root / "gateway.log")),
                          DetectionEngine(config))
        hub = MetricsHub(monitor, max_sessions=max_sessions)
        monitor.quiet = True
        started = time.perf_counter()
        hub.step()
        while monitor.sources.behind:
            hub.step()
        hub.step()
        read = time.perf_counter() - started
        server = MetricsServer(hub, "127.0.0.1:0")

        def scrape() -> bytes:
            with urllib.request.urlopen(server.url, timeout=30) as response:
                return response.read()

        page = scrape()
        scrape_times = timed(scrape, args.repeat)
        snapshot_times = timed(hub.snapshot, args.repeat)
        report_times = timed(lambda: json.dumps(monitor.report()), args.repeat)
        step_times = timed(monitor.step, args.repeat * 10)
        hub_step_times = timed(hub.step, args.repeat * 10)

        families = list(text_string_to_metric_families(page.decode()))
        series = sum(len(f.samples) for f in families)
        per_session = sum(len(f.samples) for f in families if f.name.startswith(
            "clawwatch_session_"))
        snap = hub.snapshot()
        server.close()
        monitor.sources.close()
        sim.close()

    scrape_median = statistics.median(scrape_times)
    report_median = statistics.median(report_times)
    print(f"sessions {args.sessions} ({snap.active} active, {len(snap.sessions)} with their own "
          f"series, {snap.other_count} summed into _other; metrics.max_sessions "
          f"{max_sessions}); state written in {prepared:.1f} s, read in {read:.1f} s")
    print(f"page: {series:,} series ({per_session:,} per-session), {len(page) / 1024:.0f} KiB")
    print(f"scrape (HTTP GET /metrics):           {ms(scrape_times)}")
    print(f"  of which under the loop's lock:     {ms(snapshot_times)}")
    print(f"peer: json.dumps(replay document):    {ms(report_times)}")
    print(f"ratio scrape / replay document: {scrape_median / report_median:.2f}x")
    print(f"hot path, nothing new to read: Monitor.step {ms(step_times)}; "
          f"MetricsHub.step {ms(hub_step_times)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Append-to-emit latency of ``clawwatch watch``, beside a trivial polling reader as a peer.

Starts ``python -m monitor watch --headless --json --no-checkpoint --state-dir D --log L`` on a
fresh temp state dir, waits until it is live (it prints a marker tool call written after its
start), then runs two phases: legacy JSONL tool calls appended to a transcript, and SQLite
transcript rows committed one by one (WAL), each at a steady rate. Every append's wall time is
recorded; the watch output's ``tool_call`` lines are matched by ``call_id`` with their arrival
time. In the same run a peer process (a plain loop that polls the same file or table every
``--peer-interval`` seconds, what ``tail -F`` does) reads the same appends, so the ratio
between the two stays meaningful on a noisy machine.

Prints per phase and reader: p50/p90/p99/max latency (ms) and CPU seconds (psutil), plus the
p99 goal (300 ms). Usage::

    .venv/bin/python bench/bench_live_latency.py [--events 1000] [--rate 50] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

from monitor.sim.legacy_writer import LegacyWriter
from monitor.sim.sqlite_writer import SqliteAgentWriter
from monitor.sim.transcript import assistant_message, session_header, tool_call_item, usage

GOAL_P99_MS = 300.0
DRAIN_SECONDS = 30.0
LIVE_SECONDS = 30.0
REPO = Path(__file__).resolve().parent.parent
LEGACY_SESSION = "bench-legacy-0000-0000-000000000001"
SQLITE_SESSION = "bench-sqlite-0000-0000-000000000002"


def tool_call_event(call_id: str, ordinal: int) -> dict:
    now = time.time()
    return assistant_message(
        f"e{ordinal:08x}", f"p{ordinal:08x}", now,
        content=[tool_call_item(call_id, "exec", {"command": f"echo {ordinal}"})],
        model_usage=usage(100, 10), stop_reason="toolUse", started_ts=now,
        response_id=f"r{ordinal}", run_id="bench-run", provider="fake", model="bench-model",
        api="openai-completions")


def call_id_of(entry: dict) -> str | None:
    message = entry.get("message") if isinstance(entry, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    for item in content if isinstance(content, list) else []:
        if isinstance(item, dict) and item.get("type") == "toolCall":
            return item.get("id")
    return None


# ------------------------------------------------------------------------------ the peer

def run_peer(kind: str, path: str, interval: float) -> int:
    """The trivial reader: print each new tool call id, polling every ``interval`` seconds."""
    out = sys.stdout
    if kind == "jsonl":
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            pending = b""
            out.write("ready\n")
            out.flush()
            while True:
                data = pending + handle.read()
                *lines, pending = data.split(b"\n")
                for line in lines:
                    call_id = call_id_of(json.loads(line))
                    if call_id:
                        out.write(call_id + "\n")
                out.flush()
                time.sleep(interval)
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
    last = conn.execute("SELECT coalesce(max(rowid), 0) FROM transcript_events").fetchone()[0]
    out.write("ready\n")
    out.flush()
    while True:
        rows = conn.execute("SELECT rowid, event_json FROM transcript_events WHERE rowid > ?"
                            " ORDER BY rowid", (last,)).fetchall()
        for rowid, event_json in rows:
            last = rowid
            call_id = call_id_of(json.loads(event_json)) if event_json else None
            if call_id:
                out.write(call_id + "\n")
        out.flush()
        time.sleep(interval)


# ---------------------------------------------------------------------------- harness

class Arrivals:
    """Reads a child's stdout in a thread; records when each tool call id arrived."""

    def __init__(self, proc: subprocess.Popen, *, json_lines: bool) -> None:
        self.proc = proc
        self.json_lines = json_lines
        self.seen: dict[str, float] = {}
        self.other_lines: list[str] = []
        self.changed = threading.Condition()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            arrived = time.monotonic()
            text = raw.decode("utf-8", "replace").strip()
            call_id = None
            if self.json_lines:
                try:
                    record = json.loads(text)
                except ValueError:
                    record = {}
                if record.get("type") == "tool_call":
                    call_id = record.get("call_id")
            elif text != "ready":
                call_id = text
            with self.changed:
                if call_id:
                    self.seen.setdefault(call_id, arrived)
                else:
                    self.other_lines.append(text)
                self.changed.notify_all()

    def wait_for(self, condition, seconds: float) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: condition(self), timeout=seconds)


def cpu_seconds(pid: int) -> float:
    try:
        times = psutil.Process(pid).cpu_times()
    except psutil.Error:
        return float("nan")
    return times.user + times.system


def percentile(sorted_values: list[float], fraction: float) -> float:
    if not sorted_values:
        return float("nan")
    index = min(len(sorted_values) - 1, max(0, round(fraction * len(sorted_values)) - 1))
    return sorted_values[index]


def stats(appended: dict[str, float], arrivals: Arrivals) -> dict:
    latencies = sorted((arrivals.seen[c] - t) * 1000 for c, t in appended.items()
                       if c in arrivals.seen)
    return {"n": len(latencies), "missing": len(appended) - len(latencies),
            "p50": percentile(latencies, 0.50), "p90": percentile(latencies, 0.90),
            "p99": percentile(latencies, 0.99), "max": latencies[-1] if latencies else None}


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.root = Path(tempfile.mkdtemp(prefix="clawwatch-latency-"))
        self.state = self.root / "state"
        self.log = self.root / "gw.log"
        self.log.touch()
        agent = self.state / "agents" / "main"
        self.legacy = LegacyWriter(agent / "sessions")
        self.legacy.upsert_session("agent:main:bench-legacy",
                                   {"sessionId": LEGACY_SESSION, "status": "running"})
        self.legacy.append_event(LEGACY_SESSION, session_header(LEGACY_SESSION, time.time(), "/"))
        self.db_path = agent / "agent" / "openclaw-agent.sqlite"
        self.sqlite = SqliteAgentWriter(self.db_path)
        self.sqlite.upsert_session("agent:main:bench-sqlite", SQLITE_SESSION,
                                   {"sessionId": SQLITE_SESSION}, "running")
        self.sqlite.append_event(SQLITE_SESSION, session_header(SQLITE_SESSION, time.time(), "/"))
        self.ordinal = 0

    def append(self, phase: str, call_id: str) -> None:
        self.ordinal += 1
        event = tool_call_event(call_id, self.ordinal)
        if phase == "legacy":
            self.legacy.append_event(LEGACY_SESSION, event)
        else:
            self.sqlite.append_event(SQLITE_SESSION, event)

    def start_monitor(self) -> Arrivals:
        argv = [sys.executable, "-m", "monitor", "watch", "--headless", "--json",
                "--no-checkpoint", "--state-dir", str(self.state), "--log", str(self.log),
                "--poll", str(self.args.poll)]
        self.monitor = subprocess.Popen(argv, stdout=subprocess.PIPE, cwd=str(REPO))
        arrivals = Arrivals(self.monitor, json_lines=True)
        deadline = time.monotonic() + LIVE_SECONDS
        marker = 0
        while True:
            marker += 1
            call_id = f"marker-{marker}"
            self.append("legacy", call_id)
            if arrivals.wait_for(lambda a, c=call_id: c in a.seen, 0.5):
                return arrivals
            if time.monotonic() > deadline or self.monitor.poll() is not None:
                raise SystemExit("clawwatch watch did not go live: "
                                 + " | ".join(arrivals.other_lines[-5:]))

    def start_peer(self, phase: str) -> tuple[subprocess.Popen, Arrivals]:
        kind, path = ("jsonl", self.legacy.transcript_path(LEGACY_SESSION)) \
            if phase == "legacy" else ("sqlite", self.db_path)
        peer = subprocess.Popen(
            [sys.executable, __file__, "--peer", kind, str(path),
             "--peer-interval", str(self.args.peer_interval)],
            stdout=subprocess.PIPE, cwd=str(REPO))
        arrivals = Arrivals(peer, json_lines=False)
        if not arrivals.wait_for(lambda a: "ready" in a.other_lines, LIVE_SECONDS):
            raise SystemExit(f"the {kind} peer did not start")
        return peer, arrivals

    def run_phase(self, phase: str, monitor: Arrivals) -> list[dict]:
        peer, peer_arrivals = self.start_peer(phase)
        cpu_before = {"clawwatch": cpu_seconds(self.monitor.pid), "poll-loop": 0.0}
        appended: dict[str, float] = {}
        started = time.monotonic()
        for n in range(self.args.events):
            delay = started + n / self.args.rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            call_id = f"{phase}-{n:06d}"
            self.append(phase, call_id)
            appended[call_id] = time.monotonic()
        for arrivals in (monitor, peer_arrivals):
            arrivals.wait_for(lambda a: all(c in a.seen for c in appended), DRAIN_SECONDS)
        cpu_after = {"clawwatch": cpu_seconds(self.monitor.pid),
                     "poll-loop": cpu_seconds(peer.pid)}
        peer.send_signal(signal.SIGTERM)
        peer.wait(timeout=10)
        rows = []
        for reader, arrivals in (("clawwatch", monitor), ("poll-loop", peer_arrivals)):
            rows.append({"phase": phase, "reader": reader, **stats(appended, arrivals),
                         "cpu_s": cpu_after[reader] - cpu_before[reader],
                         "seconds": time.monotonic() - started})
        return rows

    def close(self) -> None:
        if getattr(self, "monitor", None) is not None and self.monitor.poll() is None:
            self.monitor.send_signal(signal.SIGTERM)
            try:
                self.monitor.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.monitor.kill()
        self.legacy.close()
        self.sqlite.close()
        shutil.rmtree(self.root, ignore_errors=True)


def print_table(rows: list[dict], args: argparse.Namespace) -> None:
    print(f"{args.events} appends per phase at {args.rate:g}/s; clawwatch watch --poll "
          f"{args.poll:g} (woken by file events); peer polls every {args.peer_interval:g}s")
    print(f"{'phase':8} {'reader':10} {'n':>5} {'miss':>4} {'p50 ms':>8} {'p90 ms':>8} "
          f"{'p99 ms':>8} {'max ms':>8} {'cpu s':>7}")
    for row in rows:
        print(f"{row['phase']:8} {row['reader']:10} {row['n']:5d} {row['missing']:4d} "
              f"{row['p50']:8.1f} {row['p90']:8.1f} {row['p99']:8.1f} {row['max'] or 0:8.1f} "
              f"{row['cpu_s']:7.2f}")
    for phase in dict.fromkeys(r["phase"] for r in rows):
        ours, peer = (next(r for r in rows if r["phase"] == phase and r["reader"] == who)
                      for who in ("clawwatch", "poll-loop"))
        verdict = "meets" if ours["p99"] <= GOAL_P99_MS and not ours["missing"] else "MISSES"
        print(f"{phase}: clawwatch p99 {ours['p99']:.1f} ms = {ours['p99'] / peer['p99']:.2f}x "
              f"the poll loop's; {verdict} the {GOAL_P99_MS:.0f} ms p99 goal")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1000, help="appends per phase")
    parser.add_argument("--rate", type=float, default=50.0, help="appends per second")
    parser.add_argument("--poll", type=float, default=1.0,
                        help="clawwatch watch --poll (its safety-net interval)")
    parser.add_argument("--peer-interval", type=float, default=0.05,
                        help="poll interval of the trivial reader")
    parser.add_argument("--phases", default="legacy,sqlite")
    parser.add_argument("--json", action="store_true", help="also print the rows as JSON")
    parser.add_argument("--peer", nargs=2, metavar=("KIND", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.peer:
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        return run_peer(args.peer[0], args.peer[1], args.peer_interval)
    bench = Bench(args)
    try:
        monitor = bench.start_monitor()
        rows = []
        for phase in args.phases.split(","):
            rows += bench.run_phase(phase, monitor)
    finally:
        bench.close()
    print_table(rows, args)
    if args.json:
        print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Append-to-emit latency of ``clawwatch watch`` over many sessions, beside a trivial polling
reader as a peer.

Builds a fresh temp state dir holding ``--sessions`` sessions per storage era, indexed the way
OpenClaw indexes them (``sessions.json`` entries for the legacy era, ``session_nodes`` /
``session_windows`` rows for the SQLite era, written through :mod:`monitor.demo.sim`). Every
``--loop-every``-th session loops: the same failing ``exec`` with the same result, call and
result appended together, its history pre-seeded so that the detectors' first threshold is
crossed during the run. Then it starts ``python -m monitor watch --headless --json
--no-checkpoint --state-dir D --log L``, waits until it is live (it prints a marker tool call
written after its start), and runs two phases: legacy JSONL tool calls appended to the
transcripts, and SQLite transcript rows committed one by one (WAL). In each phase ``--events``
tool calls go round-robin over the phase's sessions at ``--rate`` calls per second in total.

Every append's wall time is recorded. The watch output's ``tool_call`` lines are matched by
``call_id``; its ``finding`` lines by ``(session_id, at_call)`` to the append of the tool call
they name (the call's result, for a looping session, is written right after it, so a finding
raised by the result is timed from slightly before its trigger). In the same run a peer process
(a plain loop that polls the same files or table every ``--peer-interval`` seconds, what
``tail -F`` does) reads the same appends, so the ratio between the two stays meaningful on a
noisy machine.

Prints per phase, reader and record kind: p50/p90/p99/max latency (ms), plus CPU seconds of the
reader over the phase and that as a share of the phase's wall time (psutil), and whether the
p99 goal (300 ms) is met. ``--sessions 1`` is the single-session bench (no looping session
unless ``--loop-every 1``). Usage::

    .venv/bin/python bench/bench_live_latency.py [--sessions 200] [--events 1000] [--rate 50]
        [--monitor-root DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from monitor.config.sections import DetectionConfig
from monitor.demo.sim.scenarios import ScenarioEnv, ToolStep, hammer, healthy
from monitor.demo.sim.session import SimSession, session_entry
from monitor.demo.sim.stores import IndexRow, LegacyStore, SqliteStore
from monitor.demo.sim.transcript import (
    assistant_message,
    session_header,
    tool_call_item,
    tool_result,
    usage,
)

GOAL_P99_MS = 300.0
DRAIN_SECONDS = 30.0
LIVE_SECONDS = 30.0
REPO = Path(__file__).resolve().parent.parent
AGENT = "main"
PROVIDER, MODEL, API = "fake", "bench-model", "openai-completions"
PHASES = ("legacy", "sqlite")
MARKER_SESSION = "bench-marker-0000-0000-000000000000"


def loop_step() -> ToolStep:
    """The looping sessions' call: the first step of the simulator's ``hammer`` scenario."""
    step = next(hammer().steps(ScenarioEnv(rng=random.Random(0), cwd="/")))
    assert isinstance(step, ToolStep)
    return step


def finding_calls() -> tuple[int, ...]:
    """The 1-based call indices at which an unbroken identical-call loop raises a finding
    under the default config: one past each of the warning, critical and breaker counts."""
    det = DetectionConfig()
    return tuple(n + 1 for n in (det.warning_threshold, det.critical_threshold,
                                 det.global_circuit_breaker_threshold))


@dataclass(slots=True)
class BenchSession:
    """One indexed session of a phase, with the number of tool calls written to it."""

    key: str
    session_id: str
    run_id: str
    loops: bool
    calls: int = 0


def tool_call_event(call_id: str, ordinal: int, run_id: str, step: ToolStep | None) -> dict:
    """An assistant turn calling ``step``'s tool, or a distinct ``echo`` when ``step`` is None."""
    now = time.time()
    tool, arguments = (step.tool, step.arguments) if step else ("exec",
                                                                 {"command": f"echo {ordinal}"})
    return assistant_message(
        f"e{ordinal:08x}", f"p{ordinal:08x}", now,
        content=[tool_call_item(call_id, tool, arguments)],
        model_usage=usage(100, 10), stop_reason="toolUse", started_ts=now,
        response_id=f"r{ordinal}", run_id=run_id, provider=PROVIDER, model=MODEL, api=API)


def tool_result_event(call_id: str, ordinal: int, run_id: str, step: ToolStep) -> dict:
    return tool_result(f"t{ordinal:08x}", f"e{ordinal:08x}", time.time(), call_id=call_id,
                       tool=step.tool, text=step.result_text, details=step.details,
                       is_error=step.is_error, run_id=run_id)


def call_id_of(entry: dict) -> str | None:
    message = entry.get("message") if isinstance(entry, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    for item in content if isinstance(content, list) else []:
        if isinstance(item, dict) and item.get("type") == "toolCall":
            return item.get("id")
    return None


# ------------------------------------------------------------------------------ the peer

def run_peer(kind: str, path: str, interval: float) -> int:
    """The trivial reader: print each new tool call id, polling every ``interval`` seconds
    every transcript of the sessions dir ``path`` (``jsonl``) or the table (``sqlite``)."""
    out = sys.stdout
    if kind == "jsonl":
        handles = [open(file, "rb") for file in sorted(Path(path).glob("*.jsonl"))]
        for handle in handles:
            handle.seek(0, os.SEEK_END)
        pending = {handle: b"" for handle in handles}
        out.write("ready\n")
        out.flush()
        while True:
            for handle in handles:
                data = pending[handle] + handle.read()
                *lines, pending[handle] = data.split(b"\n")
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
    """Reads a child's stdout in a thread; records when each tool call id and each finding
    (keyed by session id and ``at_call``) arrived."""

    def __init__(self, proc: subprocess.Popen, *, json_lines: bool) -> None:
        self.proc = proc
        self.json_lines = json_lines
        self.seen: dict[str, float] = {}
        self.findings: list[tuple[tuple[str, int], float]] = []
        self.finding_keys: set[tuple[str, int]] = set()
        self.other_lines: list[str] = []
        self.changed = threading.Condition()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            arrived = time.monotonic()
            text = raw.decode("utf-8", "replace").strip()
            record: dict = {}
            if self.json_lines:
                try:
                    record = json.loads(text)
                except ValueError:
                    record = {}
            with self.changed:
                if record.get("type") == "tool_call" and record.get("call_id"):
                    self.seen.setdefault(record["call_id"], arrived)
                elif record.get("type") == "finding":
                    where = (str(record.get("session_id")), int(record.get("at_call") or 0))
                    self.findings.append((where, arrived))
                    self.finding_keys.add(where)
                elif not self.json_lines and text != "ready":
                    self.seen.setdefault(text, arrived)
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


def summary(latencies: list[float], missing: int) -> dict:
    latencies = sorted(latencies)
    return {"n": len(latencies), "missing": missing,
            "p50": percentile(latencies, 0.50), "p90": percentile(latencies, 0.90),
            "p99": percentile(latencies, 0.99), "max": latencies[-1] if latencies else None}


def tool_call_stats(appended: dict[str, float], arrivals: Arrivals) -> dict:
    latencies = [(arrivals.seen[c] - t) * 1000 for c, t in appended.items()
                 if c in arrivals.seen]
    return summary(latencies, len(appended) - len(latencies))


def finding_stats(calls: dict[tuple[str, int], float], expected: set[tuple[str, int]],
                  arrivals: Arrivals) -> dict:
    """Latency of every finding naming a call of this phase; ``missing`` counts the calls
    expected to raise one that raised none."""
    latencies = [(arrived - calls[where]) * 1000 for where, arrived in arrivals.findings
                 if where in calls]
    return summary(latencies, len(expected - arrivals.finding_keys))


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.root = Path(tempfile.mkdtemp(prefix="clawwatch-latency-"))
        self.state = self.root / "state"
        self.log = self.root / "gw.log"
        self.log.touch()
        self.stores = {"legacy": LegacyStore(self.state, AGENT),
                       "sqlite": SqliteStore(self.state, AGENT)}
        self.step = loop_step()
        self.ordinal = 0
        self.marker = BenchSession(f"agent:{AGENT}:bench-marker", MARKER_SESSION,
                                   "bench-marker-run", loops=False)
        self.index("legacy", self.marker)
        self.sessions = {phase: self.create_sessions(phase) for phase in PHASES}

    def create_sessions(self, phase: str) -> list[BenchSession]:
        """Index the phase's sessions and write their headers; pre-seed the looping ones so
        that the first finding falls on one of their live calls, spread over the phase."""
        args = self.args
        sessions = []
        looping = 0
        for i in range(args.sessions):
            loops = args.loop_every > 0 and i % args.loop_every == args.loop_every - 1
            session = BenchSession(f"agent:{AGENT}:bench-{phase}-{i:04d}",
                                   f"bench-{phase}-{i:08d}-0000-0000-000000000000",
                                   f"bench-run-{phase}-{i:04d}", loops)
            self.index(phase, session)
            header = session_header(session.session_id, time.time(), "/",
                                    3 if phase == "legacy" else 4)
            self.stores[phase].append(session.session_id, header, time.time())
            live_calls = len(range(i, args.events, args.sessions))
            if loops and live_calls:
                first = finding_calls()[0]
                for _ in range(first - 1 - looping % min(live_calls, first - 1)):
                    self.append_call(phase, session, f"seed-{phase}-{self.ordinal + 1:06d}")
                looping += 1
            sessions.append(session)
        return sessions

    def index(self, phase: str, session: BenchSession) -> None:
        now = time.time()
        scenario = hammer() if session.loops else healthy()
        sim = SimSession(session.key, session.session_id, session.run_id, AGENT, scenario,
                         started=True, created_at=now, started_at=now)
        self.stores[phase].index(IndexRow(
            key=session.key, session_id=session.session_id,
            entry=session_entry(sim, now, PROVIDER, MODEL), status="running", created=now,
            updated=now, started=now, ended=None, provider=PROVIDER, model=MODEL))

    def append_call(self, phase: str, session: BenchSession, call_id: str) -> float:
        """Append one tool call (and, for a looping session, its result right after);
        return the monotonic time at which the call was written."""
        self.ordinal += 1
        store = self.stores[phase]
        step = self.step if session.loops else None
        store.append(session.session_id,
                     tool_call_event(call_id, self.ordinal, session.run_id, step), time.time())
        written = time.monotonic()
        session.calls += 1
        if step is not None:
            store.append(session.session_id,
                         tool_result_event(call_id, self.ordinal, session.run_id, step),
                         time.time())
        return written

    def start_monitor(self) -> Arrivals:
        argv = [sys.executable, "-m", "monitor", "watch", "--headless", "--json",
                "--no-checkpoint", "--state-dir", str(self.state), "--log", str(self.log),
                "--poll", str(self.args.poll)]
        self.monitor = subprocess.Popen(argv, stdout=subprocess.PIPE,
                                        cwd=str(self.args.monitor_root))
        arrivals = Arrivals(self.monitor, json_lines=True)
        deadline = time.monotonic() + LIVE_SECONDS
        marker = 0
        while True:
            marker += 1
            call_id = f"marker-{marker}"
            self.append_call("legacy", self.marker, call_id)
            if arrivals.wait_for(lambda a, c=call_id: c in a.seen, 0.5):
                return arrivals
            if time.monotonic() > deadline or self.monitor.poll() is not None:
                raise SystemExit("clawwatch watch did not go live: "
                                 + " | ".join(arrivals.other_lines[-5:]))

    def start_peer(self, phase: str) -> tuple[subprocess.Popen, Arrivals]:
        kind, path = ("jsonl", self.stores["legacy"].path) if phase == "legacy" \
            else ("sqlite", self.stores["sqlite"].path)
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
        sessions = self.sessions[phase]
        appended: dict[str, float] = {}
        calls: dict[tuple[str, int], float] = {}
        expected: set[tuple[str, int]] = set()
        cpu_before = {"clawwatch": cpu_seconds(self.monitor.pid),
                      "poll-loop": cpu_seconds(peer.pid)}
        started = time.monotonic()
        for n in range(self.args.events):
            delay = started + n / self.args.rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            session = sessions[n % len(sessions)]
            call_id = f"{phase}-{n:06d}"
            written = self.append_call(phase, session, call_id)
            appended[call_id] = written
            calls[(session.session_id, session.calls)] = written
            if session.loops and session.calls in finding_calls():
                expected.add((session.session_id, session.calls))
        monitor.wait_for(lambda a: all(c in a.seen for c in appended)
                         and expected <= a.finding_keys, DRAIN_SECONDS)
        peer_arrivals.wait_for(lambda a: all(c in a.seen for c in appended), DRAIN_SECONDS)
        wall = time.monotonic() - started
        cpu_after = {"clawwatch": cpu_seconds(self.monitor.pid),
                     "poll-loop": cpu_seconds(peer.pid)}
        peer.send_signal(signal.SIGTERM)
        peer.wait(timeout=10)
        if self.monitor.poll() is not None:
            print(f"clawwatch watch exited with {self.monitor.returncode} during {phase}",
                  file=sys.stderr)
        rows = []
        for reader, arrivals in (("clawwatch", monitor), ("poll-loop", peer_arrivals)):
            cpu = cpu_after[reader] - cpu_before[reader]
            common = {"phase": phase, "reader": reader, "cpu_s": cpu, "cpu_share": cpu / wall,
                      "seconds": wall}
            rows.append({**common, "record": "tool_call",
                         **tool_call_stats(appended, arrivals)})
            findings = finding_stats(calls, expected, arrivals)
            if reader == "clawwatch" and (findings["n"] or findings["missing"]):
                rows.append({**common, "record": "finding", **findings})
        return rows

    def close(self) -> None:
        if getattr(self, "monitor", None) is not None and self.monitor.poll() is None:
            self.monitor.send_signal(signal.SIGTERM)
            try:
                self.monitor.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.monitor.kill()
        for store in self.stores.values():
            store.close()
        shutil.rmtree(self.root, ignore_errors=True)


def print_table(rows: list[dict], args: argparse.Namespace) -> None:
    looping = len(range(args.loop_every - 1, args.sessions, args.loop_every)) \
        if args.loop_every > 0 else 0
    print(f"{args.events} tool calls per phase at {args.rate:g}/s round-robin over "
          f"{args.sessions} sessions ({looping} looping: exec call + same result); "
          f"clawwatch watch --poll {args.poll:g} (woken by file events); "
          f"peer polls every {args.peer_interval:g}s")
    print(f"{'phase':7} {'reader':10} {'record':9} {'n':>5} {'miss':>4} {'p50 ms':>8} "
          f"{'p90 ms':>8} {'p99 ms':>8} {'max ms':>8} {'cpu s':>7} {'cpu %':>6}")
    for row in rows:
        print(f"{row['phase']:7} {row['reader']:10} {row['record']:9} {row['n']:5d} "
              f"{row['missing']:4d} {row['p50']:8.1f} {row['p90']:8.1f} {row['p99']:8.1f} "
              f"{row['max'] or 0:8.1f} {row['cpu_s']:7.2f} {100 * row['cpu_share']:6.1f}")
    for phase in dict.fromkeys(r["phase"] for r in rows):
        def row_of(reader: str, record: str, phase: str = phase) -> dict | None:
            return next((r for r in rows if (r["phase"], r["reader"], r["record"])
                         == (phase, reader, record)), None)
        ours, peer = row_of("clawwatch", "tool_call"), row_of("poll-loop", "tool_call")
        line = (f"{phase}: clawwatch tool_call p99 {ours['p99']:.1f} ms = "
                f"{ours['p99'] / peer['p99']:.2f}x the poll loop's")
        judged = [ours]
        finding = row_of("clawwatch", "finding")
        if finding is not None:
            line += f", finding p99 {finding['p99']:.1f} ms"
            judged.append(finding)
        meets = all(r["p99"] <= GOAL_P99_MS and not r["missing"] for r in judged)
        print(f"{line}; {'meets' if meets else 'MISSES'} the {GOAL_P99_MS:.0f} ms p99 goal")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200,
                        help="sessions per phase the appends are spread over, round-robin")
    parser.add_argument("--loop-every", type=int, default=10,
                        help="every Nth session loops (raises findings); 0: none")
    parser.add_argument("--events", type=int, default=1000, help="tool calls per phase")
    parser.add_argument("--rate", type=float, default=50.0,
                        help="tool calls per second, all sessions together")
    parser.add_argument("--poll", type=float, default=1.0,
                        help="clawwatch watch --poll (its safety-net interval)")
    parser.add_argument("--peer-interval", type=float, default=0.05,
                        help="poll interval of the trivial reader")
    parser.add_argument("--phases", default=",".join(PHASES))
    parser.add_argument("--json", action="store_true", help="also print the rows as JSON")
    parser.add_argument("--monitor-root", default=str(REPO),
                        help="run `python -m monitor` from this dir (a patched or compiled "
                             "copy, bench/build_compiled.py)")
    parser.add_argument("--peer", nargs=2, metavar=("KIND", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.peer:
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        return run_peer(args.peer[0], args.peer[1], args.peer_interval)
    if args.sessions < 1:
        parser.error("--sessions must be at least 1")
    build = subprocess.run([sys.executable, "-m", "monitor", "--version"], cwd=args.monitor_root,
                           capture_output=True, text=True, check=True).stdout.strip()
    print(f"{build}, from {args.monitor_root}")
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

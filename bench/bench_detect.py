"""Benchmark of the detection stage alone.

Feeds >= 1,000,000 synthetic transcript events (assistant messages, tool calls,
tool results across many concurrent sessions: healthy work, hammering, ping-pong
and timestamp drift) through ``DetectionEngine.observe`` and reports events/s,
next to a trivial peer pass (``json.dumps`` of the same events) timed in the
same process. Then measures memory per active session with tracemalloc, twice,
to show that it stays flat as sessions grow.

    .venv/bin/python bench/bench_detect.py [--events N] [--sessions N]
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from monitor.config import Config
from monitor.detect.engine import DetectionEngine
from monitor.events import AssistantMessage, ToolCall, ToolResult, Usage

CHUNK_STEPS = 20_000
FAIL = "ls: cannot access '/srv/x': No such file or directory\n\n(Command exited with code 2)"


def step_events(session: int, step: int) -> list:
    """One assistant turn (message, call, result) of a synthetic session."""
    sid = f"bench-{session:05d}"
    run = f"run-{step // 400}"
    ts = 1_800_000_000.0 + step * 2.0
    call_id = f"call_{step:07d}|fc_{session}"
    kind = session % 4
    if kind == 0:
        name, args = "read", {"path": f"/repo/src/file_{step % 5000}.py"}
        details, text = {"kind": "text"}, f"def f{step}(): return {step}\n"
    elif kind == 1:
        name, args = "exec", {"command": "ls -la /srv/x"}
        details = {"status": "completed", "exitCode": 2, "durationMs": step % 50,
                   "aggregated": FAIL, "cwd": "/repo"}
        text = FAIL
    elif kind == 2:
        if step % 2:
            name, args = "read", {"path": "/etc/hostname"}
            details, text = {"kind": "text", "content": "vm\n"}, "vm\n"
        else:
            name, args = "exec", {"command": "ls -la /srv/x"}
            details, text = {"status": "completed", "exitCode": 2, "aggregated": FAIL}, FAIL
    else:
        output = f"Sat Nov 29 13:{step % 60:02d}:07 UTC 2026\nalpha\nbeta"
        name, args = "exec", {"command": "date; ls /srv"}
        details = {"status": "completed", "exitCode": 0, "aggregated": output,
                   "durationMs": 4}
        text = output
    usage = Usage(input=20_000 + step * 3, output=40, total=20_040 + step * 3)
    return [
        AssistantMessage(sid, run, ts, usage, "toolUse", None, "m", "p", 1, 0),
        ToolCall(sid, call_id, name, args, run, ts),
        ToolResult(sid, call_id, name, False, details, text, run, ts + 0.5),
    ]


def as_dict(event) -> dict:
    return {name: getattr(event, name) for name in event.__struct_fields__}


def throughput(total_events: int, sessions: int) -> None:
    engine = DetectionEngine(Config())
    engine_seconds = peer_seconds = 0.0
    done = findings = 0
    step = 0
    while done < total_events:
        chunk = []
        for _ in range(CHUNK_STEPS):
            chunk.extend(step_events(step % sessions, step // sessions))
            step += 1
        dicts = [as_dict(event) for event in chunk]
        gc.collect()
        start = time.perf_counter()
        for event in chunk:
            findings += len(engine.observe("agent:main:" + event.session_id, "main", event))
        engine_seconds += time.perf_counter() - start
        start = time.perf_counter()
        for item in dicts:
            json.dumps(item, default=str)
        peer_seconds += time.perf_counter() - start
        done += len(chunk)
    engine_rate = done / engine_seconds
    peer_rate = done / peer_seconds
    print(f"events:            {done:,} across {sessions:,} sessions ({findings:,} findings)")
    print(f"detection engine:  {engine_rate:,.0f} events/s ({engine_seconds:.2f} s)")
    print(f"peer json.dumps:   {peer_rate:,.0f} events/s ({peer_seconds:.2f} s)")
    print(f"engine cost:       {engine_seconds / peer_seconds:.2f}x the json.dumps pass")


def memory_per_session(sessions: int) -> None:
    engine = DetectionEngine(Config())

    def feed(first_step: int, steps: int) -> None:
        for step in range(first_step, first_step + steps):
            for session in range(sessions):
                for event in step_events(session, step):
                    engine.observe("k", "main", event)

    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    done = 0
    points = []
    for calls in (100, 1000, 3000):
        feed(done, calls - done)
        done = calls
        gc.collect()
        used = tracemalloc.get_traced_memory()[0] - base
        points.append(f"{used / sessions / 1024:,.1f} KiB after {calls:,} calls")
    tracemalloc.stop()
    print(f"memory/session:    {', '.join(points)} ({sessions} active sessions)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--sessions", type=int, default=500)
    parser.add_argument("--memory-sessions", type=int, default=50)
    args = parser.parse_args()
    throughput(args.events, args.sessions)
    memory_per_session(args.memory_sessions)
    return 0


if __name__ == "__main__":
    sys.exit(main())

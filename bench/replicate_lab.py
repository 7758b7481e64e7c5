"""A large state dir made of real OpenClaw transcripts, both storage eras.

The transcripts a real OpenClaw 2026.9.6 gateway wrote in the lab (``tests/fixtures/oc-*.jsonl``:
a hammering loop, ping-pong, polls, drift, an unknown tool) are many
small events with short tool results, unlike ``gen_large_state.py``'s long-tailed outputs.
Each session here is one of them repeated until it holds ``--session-mb``: every copy is a new
run (run ids, idempotency keys, entry and tool-call ids made unique) later in time, so a
session reads like one agent given the same task again and again. Both eras and
``manifest.json`` (token truth per session) are written as ``gen_large_state.py`` writes
them, so ``bench_replay.py --dir`` and ``bench_read_floor.py --dir`` take the result.

    .venv/bin/python bench/replicate_lab.py [--out /tmp/clawwatch-lab] [--mb 1000]
        [--session-mb 1.25]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from gen_large_state import (
    LegacyEra,
    SessionPlan,
    SqliteEra,
    clear_eras,
    free_bytes,
    print_sizes,
    session_entry,
    trajectory_rows,
    tx,
    write_manifest,
    write_openclaw_config,
)

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures"
REAL_TRANSCRIPTS = ("oc-hammer.jsonl", "oc-pingpong.jsonl", "oc-drift.jsonl", "oc-poll.jsonl",
                    "oc-unknown-tool.jsonl")
START = datetime(2026, 10, 1, tzinfo=UTC).timestamp()
GAP_SECONDS = 60.0


def read_transcript(name: str) -> tuple[list[dict], float, float]:
    """The entries of one real transcript, and the first and last time in it."""
    entries = [json.loads(line) for line in (FIXTURES / name).read_text().splitlines()
               if line.strip()]
    times = [tx_seconds(e["timestamp"]) for e in entries if isinstance(e.get("timestamp"), str)]
    return entries, min(times), max(times)


def tx_seconds(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(
        timespec="milliseconds").replace("+00:00", "Z")


def copy_of(entry: dict, session_id: str, copy: int, shift: float) -> dict:
    """``entry`` as the ``copy``-th repetition in session ``session_id``: ids suffixed,
    times moved by ``shift`` seconds."""
    suffix = f"-{copy}"
    entry = json.loads(json.dumps(entry))
    if entry.get("type") == "session":
        entry["id"] = session_id
    elif isinstance(entry.get("id"), str):
        entry["id"] += suffix
    if isinstance(entry.get("parentId"), str):
        entry["parentId"] += suffix
    if isinstance(entry.get("timestamp"), str):
        entry["timestamp"] = iso(tx_seconds(entry["timestamp"]) + shift)
    message = entry.get("message")
    if isinstance(message, dict):
        if isinstance(message.get("timestamp"), (int, float)):
            message["timestamp"] = int(message["timestamp"] + shift * 1000)
        meta = message.get("__openclaw")
        if isinstance(meta, dict) and isinstance(meta.get("runId"), str):
            meta["runId"] += suffix
        key = message.get("idempotencyKey")
        if isinstance(key, str) and key.endswith(":user"):
            message["idempotencyKey"] = f"{key[:-len(':user')]}{suffix}:user"
        if isinstance(message.get("toolCallId"), str):
            message["toolCallId"] += suffix
        for item in message.get("content") if isinstance(message.get("content"), list) else ():
            if isinstance(item, dict) and item.get("type") == "toolCall" \
                    and isinstance(item.get("id"), str):
                item["id"] += suffix
    return entry


def replicate(args: argparse.Namespace) -> dict:
    out = Path(args.out)
    if free_bytes(out) < args.mb * 1e6 * 2.6:
        raise SystemExit(f"replicate_lab: {out} has {free_bytes(out) / 1e9:.1f} GB free; "
                         f"about {args.mb * 2.6 / 1e3:.1f} GB are needed")
    clear_eras(out)
    sources = [read_transcript(name) for name in REAL_TRANSCRIPTS]
    sqlite_era, legacy_era = SqliteEra(out / "sqlite"), LegacyEra(out / "legacy")
    for era in ("sqlite", "legacy"):
        write_openclaw_config(out / era).touch()     # no gateway log lines: transcripts only
    started = time.monotonic()
    manifest: list[dict] = []
    totals = {"events": 0, "bytes": 0, "zstd_rows": 0}
    clock = START
    index = 0
    while totals["bytes"] < args.mb * 1e6:
        entries, first, last = sources[index % len(sources)]
        session_id = f"{index:08x}-1ab0-4000-8000-{index:012x}"
        plan = SessionPlan(index=index, kind=REAL_TRANSCRIPTS[index % len(sources)], turns=0,
                           target_bytes=None, start=clock, key=f"agent:main:lab-{index:05d}",
                           session_id=session_id, created=clock)
        copy = 0
        while plan.bytes < args.session_mb * 1e6:
            shift = clock - first
            for entry in entries:
                if copy and entry.get("type") == "session":
                    continue
                event = copy_of(entry, session_id, copy, shift)
                text = tx.dumps(event)
                raw = text.encode()
                moment = tx_seconds(event["timestamp"]) if "timestamp" in event else clock
                sqlite_era.event(session_id, plan.events, event, text, raw, tx.to_ms(moment))
                legacy_era.event(session_id, raw)
                plan.events += 1
                plan.bytes += len(raw) + 1
                count_message(plan, event.get("message") if event.get("type") == "message"
                              else None)
            copy += 1
            clock += last - first + GAP_SECONDS
        plan.updated = plan.ended = clock
        entry = session_entry(plan, 0)
        sqlite_era.session(plan, entry, trajectory_rows(plan, "/tmp/lab/workspace"))
        legacy_era.session(plan, entry)
        manifest.append({"zstd_assistant": {"messages": 0, "input": 0, "output": 0,
                                            "total": 0}, **plan.summary()})
        totals["events"] += plan.events
        totals["bytes"] += plan.bytes
        index += 1
    totals["zstd_rows"] = sqlite_era.zstd_rows
    sqlite_era.close()
    legacy_era.close()
    document = {"seed": 0, "sessions": manifest, "totals": totals,
                "generate_seconds": round(time.monotonic() - started, 1)}
    write_manifest(out, document)
    return document


def count_message(plan: SessionPlan, message: dict | None) -> None:
    if not isinstance(message, dict):
        return
    if message.get("role") == "assistant":
        plan.assistant_messages += 1
        plan.run_id = (message.get("__openclaw") or {}).get("runId", plan.run_id)
        usage = message.get("usage") or {}
        plan.tokens.update(input=usage.get("input", 0), output=usage.get("output", 0),
                           cache_read=usage.get("cacheRead", 0),
                           cache_write=usage.get("cacheWrite", 0),
                           total=usage.get("totalTokens", 0))
        for item in message.get("content") or ():
            if isinstance(item, dict) and item.get("type") == "toolCall":
                plan.tool_calls += 1
                plan.tools[item.get("name", "?")] += 1


def megabytes(text: str) -> float:
    """A size in MB: a finite number above 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("not a number") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError("must be more than 0")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="/tmp/clawwatch-lab", help="output dir")
    parser.add_argument("--mb", type=megabytes, default=1000.0,
                        help="transcript JSON to write per era, in MB")
    parser.add_argument("--session-mb", type=megabytes, default=1.25,
                        help="transcript JSON per session, in MB")
    args = parser.parse_args(argv)
    print_sizes(Path(args.out), replicate(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Generate a large OpenClaw state dir in both storage eras, with the same content.

Writes, under ``--out`` (default ``/tmp/clawwatch-bench``):

* ``sqlite/``: ``agents/main/agent/openclaw-agent.sqlite`` (agent schema v23, WAL; events
  larger than 1,700 bytes stored zstd-compressed in ``event_zstd`` exactly as the gateway does)
* ``legacy/``: ``agents/main/sessions/<sessionId>.jsonl`` plus ``sessions.json``
* in each, ``openclaw.json`` whose ``logging.file`` names ``logs/openclaw.log`` (a gateway log
  with each run's lines and OpenClaw's own loop warnings), so ``--state-dir`` finds it
* ``manifest.json``: ground truth per session (events, bytes, tool calls, token sums, and
  what sits in zstd rows, which readers of ``event_json`` alone cannot see)

Events are built with the simulator's builders (``monitor.demo.sim.transcript``) and its loop
scenarios; healthy "work" sessions use read/exec/edit/write/web_fetch with a long-tailed
output size, thinking blocks, parallel calls and compactions. A few sessions are made
multi-hundred-MB (long runs with large tool outputs). Rows are written with batched
inserts and lines with buffered appends, so the full default (>= 10,000 sessions,
>= 1 GB per era) takes a few minutes.

    .venv/bin/python bench/gen_large_state.py [--out DIR] [--small] [--sessions N]
        [--big-mb 320,220,140] [--seed N]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shutil
import sqlite3
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import zstandard

from monitor.demo.sim import transcript as tx
from monitor.demo.sim.log_writer import GatewayLogWriter, Trace
from monitor.demo.sim.scenarios import EndStep, ScenarioEnv, ToolStep, make_scenario
from monitor.demo.sim.sqlite_writer import SCHEMA_PATH, ZSTD_THRESHOLD_BYTES

AGENT = "main"
FLUSH_BYTES = 32 << 20
INSERT_EVENT_JSON = ("INSERT INTO transcript_events (session_id, seq, event_json, created_at,"
                     " event_utf8_bytes) VALUES (?, ?, ?, ?, ?)")
INSERT_EVENT_ZSTD = ("INSERT INTO transcript_events (session_id, seq, event_json, created_at,"
                     " event_zstd, event_utf8_bytes, navigation_json)"
                     " VALUES (?, ?, NULL, ?, ?, ?, ?)")
INSERT_NODE = ("INSERT INTO session_nodes (session_key, current_session_id, entry_json,"
               " entry_valid, updated_at, status, created_at, created_via, label, display_name,"
               " last_interaction_at, last_activity_at)"
               " VALUES (?, ?, ?, 1, ?, ?, ?, 'operator', NULL, NULL, ?, ?)")
INSERT_WINDOW = ("INSERT INTO session_windows (session_id, session_key, reason, created_at,"
                 " updated_at, transcript_updated_at, transcript_observed_at,"
                 " session_entry_provenance, started_at, ended_at, status, chat_type,"
                 " model_provider, model, agent_harness_id)"
                 " VALUES (?, ?, 'initial', ?, ?, ?, ?, 1, ?, ?, ?, 'direct', ?, ?, 'openclaw')")
INSERT_TRAJECTORY = ("INSERT INTO trajectory_runtime_events (session_id, seq, run_id,"
                     " event_json, created_at) VALUES (?, ?, ?, ?, ?)")


CACHE_TTL_WINDOW = 48
COMPACT_AT_TOKENS = 170_000
MODELS = (("anthropic", "claude-sonnet-4-5", "anthropic-messages", (3.0, 15.0, 0.3, 3.75)),
          ("openai", "gpt-5", "openai-responses", (1.25, 10.0, 0.125, 0.0)),
          ("anthropic", "claude-haiku-4-5", "anthropic-messages", (1.0, 5.0, 0.1, 1.25)))
SYLLABLES = ("ka", "lo", "mi", "ser", "ton", "va", "dre", "qui", "pel", "nor", "ast", "ux",
             "bri", "gan", "tel", "or", "cy", "fen", "hal", "jor", "zet", "wi", "mo", "ra")


class TextPool:
    """Chunks of code, log and prose text (about 1 kB each) to assemble tool outputs from.

    Outputs pick chunks at random from 512 per kind, so a large output is not a repeat of
    itself and compresses about as well as real text does."""

    def __init__(self, rng: random.Random) -> None:
        self.words = ["".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 3)))
                      for _ in range(600)]
        self.chunks = {kind: [self._chunk(rng, kind) for _ in range(512)]
                       for kind in ("code", "log", "prose")}

    def _chunk(self, rng: random.Random, kind: str) -> str:
        lines, size = [], 0
        while size < 1000:
            w = rng.choice(self.words)
            if kind == "code":
                line = (f"    {w}_{rng.randint(0, 99)} = {rng.choice(self.words)}"
                        f"({rng.choice(self.words)!r}, limit={rng.randint(1, 5000)})")
            elif kind == "log":
                line = (f"2026-10-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:"
                        f"{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z "
                        f"{rng.choice(('INFO', 'INFO', 'WARN', 'DEBUG', 'ERROR'))} {w}: "
                        f"{' '.join(rng.choices(self.words, k=rng.randint(3, 12)))} "
                        f"id={rng.getrandbits(40):x}")
            else:
                line = " ".join(rng.choices(self.words, k=rng.randint(8, 20))).capitalize() + "."
            lines.append(line)
            size += len(line) + 1
        return "\n".join(lines) + "\n"

    def take(self, rng: random.Random, kind: str, size: int) -> str:
        parts = [f"# {rng.choice(self.words)} {rng.getrandbits(48):x}\n"]
        have = len(parts[0])
        chunks = self.chunks[kind]
        while have < size:
            chunk = chunks[rng.randrange(512)]
            parts.append(chunk)
            have += len(chunk)
        return "".join(parts)[:size]


@dataclass(eq=False)
class SessionPlan:
    """One session to write, and what was written (the manifest's ground truth)."""

    index: int
    kind: str
    turns: int
    target_bytes: int | None
    start: float
    key: str = ""
    session_id: str = ""
    run_id: str = ""
    provider: str = ""
    model: str = ""
    status: str = "done"
    created: float = 0.0
    updated: float = 0.0
    ended: float | None = None
    events: int = 0
    bytes: int = 0
    tool_calls: int = 0
    tools: Counter = field(default_factory=Counter)
    assistant_messages: int = 0
    tokens: Counter = field(default_factory=Counter)

    def summary(self) -> dict:
        return {"key": self.key, "session_id": self.session_id, "kind": self.kind,
                "status": self.status, "events": self.events, "bytes": self.bytes,
                "tool_calls": self.tool_calls, "tools": dict(sorted(self.tools.items())),
                "assistant_messages": self.assistant_messages, "tokens": dict(self.tokens)}


def output_size(rng: random.Random, giant: bool) -> int:
    """Long-tailed tool output sizes; giants (long sessions) read far more per call."""
    u = rng.random()
    if giant:
        return rng.randint(200, 4000) if u < 0.3 else rng.randint(20_000, 120_000) \
            if u < 0.8 else rng.randint(120_000, 600_000)
    if u < 0.62:
        return rng.randint(40, 1500)
    if u < 0.92:
        return rng.randint(1500, 12_000)
    return rng.randint(12_000, 60_000) if u < 0.995 else rng.randint(60_000, 400_000)


def work_steps(rng: random.Random, pool: TextPool, giant: bool, cwd: str
               ) -> Iterator[list[ToolStep]]:
    """Healthy agent work: every call different, outputs of every size."""
    files = [f"src/{rng.choice(pool.words)}/{rng.choice(pool.words)}_{n}.py" for n in range(60)]
    while True:
        r = rng.random()
        path = rng.choice(files)
        if r < 0.38:
            count = 2 if rng.random() < 0.25 else 1
            yield [ToolStep("read", {"path": p}, pool.take(rng, "code", output_size(rng, giant)),
                            None, output_tokens=rng.randint(20, 200))
                   for p in rng.sample(files, count)]
        elif r < 0.64:
            output = pool.take(rng, "log", output_size(rng, giant))
            code = 0 if rng.random() < 0.85 else rng.choice((1, 2))
            text, details = tx.exec_details(output, code, rng.randint(5, 9000), cwd)
            command = f"{rng.choice(('pytest -q', 'grep -rn', 'cat', 'make'))} {path}"
            yield [ToolStep("exec", {"command": command}, text, details,
                            output_tokens=rng.randint(20, 300))]
        elif r < 0.78:
            old = f"def {rng.choice(pool.words)}_{rng.randint(0, 999)}(request):"
            new = old[:-2] + ", *, strict=True):"
            diff = f"-{old}\n+{new}"
            yield [ToolStep("edit", {"path": path, "edits": [{"oldText": old, "newText": new}]},
                            f"Successfully replaced 1 block(s) in {path}.",
                            {"changed": True, "diff": diff,
                             "firstChangedLine": rng.randint(1, 900)},
                            output_tokens=rng.randint(80, 500))]
        elif r < 0.86:
            content = pool.take(rng, "code", rng.randint(1200, 16_000))
            yield [ToolStep("write", {"path": path, "content": content},
                            f"Successfully wrote {len(content)} bytes to {path}", None,
                            output_tokens=len(content) // 4)]
        else:
            marker = f"{rng.getrandbits(64):016x}"
            body = pool.take(rng, "prose", output_size(rng, giant))
            text = (f'<<<EXTERNAL_UNTRUSTED_CONTENT id="{marker}">>>\nSource: Web Fetch\n---\n'
                    f'{body}\n<<<END_EXTERNAL_UNTRUSTED_CONTENT id="{marker}">>>')
            url = f"https://docs.example.org/{rng.choice(pool.words)}/{rng.randint(1, 9999)}"
            yield [ToolStep("web_fetch", {"url": url, "extractMode": "markdown"}, text,
                            {"url": url, "status": 200, "extractMode": "markdown",
                             "truncated": False, "length": len(body)},
                            output_tokens=rng.randint(20, 120))]


class Clock:
    def __init__(self, start: float, rng: random.Random) -> None:
        self.now, self.rng = start, rng

    def __call__(self, low: float = 0.2, high: float = 4.0) -> float:
        self.now += self.rng.uniform(low, high)
        return self.now


def build_session(plan: SessionPlan, pool: TextPool, rng: random.Random,
                  emit: Callable[[dict, float], None]) -> tuple[dict, list[tuple], list[tuple]]:
    """Write one session through ``emit``; returns its index entry, trajectory rows and
    gateway log lines."""
    ids = tx.IdSource(rng)
    plan.session_id, plan.run_id = ids.uuid(), ids.uuid()
    plan.key = f"agent:{AGENT}:{plan.kind}-{plan.index:05d}"
    plan.provider, plan.model, api, prices = rng.choice(MODELS)
    clock = Clock(plan.start + rng.uniform(0, 600), rng)
    cwd = "/home/agent/.openclaw/workspace"
    plan.created = clock()
    request, log = Trace.new(ids), []
    run = request.child(ids)
    log.append((plan.created, "INFO", "gateway/ws",
                f"⇄ res ✓ chat.send 122ms runId={plan.run_id} conn={ids.hex(8)} id={ids.hex(8)}",
                request))
    log.append((plan.created, "DEBUG", "diagnostic",
                f"session turn created: runId={plan.run_id} sessionId={plan.session_id} "
                f"sessionKey={plan.key} agentId={AGENT} channel=webchat trigger=user", request))
    last = {"id": None}

    def put(event: dict, ts: float) -> None:
        emit(event, ts)
        last["id"] = event.get("id")

    def assistant(content: list, output_tokens: int, context: int, stop: str, ts: float,
                  first: bool, run_id: str) -> None:
        cache_read = 0 if first else int(context * 0.9)
        cache_write = 0 if first else rng.randint(0, 1500)
        fresh = context - cache_read
        total = fresh + output_tokens + cache_read + cache_write
        p_in, p_out, p_read, p_write = prices
        cost = {"input": fresh * p_in / 1e6, "output": output_tokens * p_out / 1e6,
                "cacheRead": cache_read * p_read / 1e6, "cacheWrite": cache_write * p_write / 1e6}
        cost["total"] = sum(cost.values())
        usage = {"input": fresh, "output": output_tokens, "cacheRead": cache_read,
                 "cacheWrite": cache_write, "totalTokens": total, "cost": cost}
        put(tx.assistant_message(ids.uuid(), last["id"], ts, content=content, model_usage=usage,
                                 stop_reason=stop, started_ts=ts - 1.0,
                                 response_id=ids.response_id(), run_id=run_id,
                                 provider=plan.provider, model=plan.model, api=api), ts)
        plan.assistant_messages += 1
        plan.tokens.update(input=fresh, output=output_tokens, cache_read=cache_read,
                           cache_write=cache_write, total=total)

    put(tx.session_header(plan.session_id, plan.created, cwd), plan.created)
    ts = clock()
    put(tx.user_message(ids.uuid(), ts, f"{plan.kind} task {plan.index}: "
                        + pool.take(rng, "prose", rng.randint(40, 400)), plan.run_id, ts), ts)
    put(tx.thinking_level_change(ids.uuid(), last["id"], clock()), clock.now)
    put(tx.model_snapshot(ids.uuid(), last["id"], clock(), plan.provider, api, plan.model),
        clock.now)
    log.append((clock.now, "DEBUG", "agent/embedded",
                f"embedded run start: runId={plan.run_id} sessionId={plan.session_id} "
                f"provider={plan.provider} model={plan.model} thinking=off messageChannel=webchat",
                run))
    context, first, frozen = rng.randint(9000, 16000), True, []
    streak, signature = 0, ""
    if plan.kind in ("work", "giant"):
        steps: Iterator = work_steps(rng, pool, plan.kind == "giant", cwd)
    elif plan.kind == "chat":
        steps = iter(())
    else:
        env = ScenarioEnv(rng=rng, now=clock, cwd=cwd, hostname="bench-host")
        steps = (item if isinstance(item, EndStep) else [item]
                 for item in make_scenario(plan.kind, limit=plan.turns).steps(env))
    end = EndStep("stop", "Done: the task is complete and every check passes.",
                  output_tokens=rng.randint(40, 300))
    for turn, batch in enumerate(steps):
        if isinstance(batch, EndStep):
            end = batch
            break
        if turn >= plan.turns or (plan.target_bytes and plan.bytes >= plan.target_bytes):
            break
        content: list = []
        if rng.random() < 0.15:
            content.append({"type": "thinking",
                            "thinking": pool.take(rng, "prose", rng.randint(200, 3000)),
                            "thinkingSignature": ids.hex(64)})
        calls = [(ids.call_id(), step) for step in batch]
        content += [tx.tool_call_item(call_id, step.tool, step.arguments)
                    for call_id, step in calls]
        ts = clock()
        assistant(content, sum(s.output_tokens for s in batch), context, "toolUse", ts, first,
                  plan.run_id)
        first = False
        for call_id, step in calls:
            plan.tool_calls += 1
            plan.tools[step.tool] += 1
            result_ts = clock(0.05, 8.0)
            put(tx.tool_result(ids.uuid(), last["id"], result_ts, call_id=call_id,
                               tool=step.tool, text=step.result_text, details=step.details,
                               is_error=step.is_error, run_id=plan.run_id), result_ts)
            frozen.append({"key": f"tool:{call_id}:{tx.to_ms(result_ts)}",
                           "sourceHash": tx.source_hash([step.result_text])})
            context += 45 + (len(tx.dumps(step.arguments)) + len(step.result_text)) // 4
            key = step.tool + tx.dumps(step.arguments)
            streak, signature = (streak + 1 if key == signature else 1), key
            if streak % 10 == 0 and not step.is_error:
                log.append((result_ts, "WARN", "agents/loop-detection",
                            f"Loop warning: {step.tool} called {streak} times with identical "
                            "arguments", run))
                log.append((result_ts, "WARN", "diagnostic",
                            f"tool loop: sessionId={plan.session_id} sessionKey={plan.key} "
                            f"tool={step.tool} level=warning action=warn detector=generic_repeat"
                            f' count={streak} message="repeated"', run))
        put(tx.cache_ttl(ids.uuid(), last["id"], clock.now, frozen[-CACHE_TTL_WINDOW:]),
            clock.now)
        if context > COMPACT_AT_TOKENS:
            put({"type": "compaction", "id": ids.hex(8), "parentId": last["id"],
                 "timestamp": tx.iso_ms(clock()), "summary": pool.take(rng, "prose", 1200),
                 "firstKeptEntryId": last["id"], "tokensBefore": context}, clock.now)
            context = rng.randint(20_000, 40_000)
    if plan.kind == "chat":
        for exchange in range(plan.turns):
            if exchange:
                run_id = ids.uuid()
                ts = clock(5, 600)
                put(tx.user_message(ids.uuid(), ts, pool.take(rng, "prose", rng.randint(20, 300)),
                                    run_id, ts), ts)
            else:
                run_id = plan.run_id
            reply = [{"type": "text", "text": pool.take(rng, "prose", rng.randint(80, 1400))}]
            assistant(reply, rng.randint(30, 400), context, "stop", clock(), first, run_id)
            first = False
            context += rng.randint(100, 600)
    elif plan.index % 997 == 996:
        plan.status = "running"
    elif end.kind == "stop":
        text = [{"type": "text", "text": end.text}]
        if end.with_usage:
            assistant(text, end.output_tokens, context, "stop", clock(), first, plan.run_id)
        else:
            put(tx.assistant_message(ids.uuid(), last["id"], clock(), content=text,
                                     model_usage=tx.usage(0, 0), stop_reason="stop",
                                     started_ts=clock.now, response_id=ids.response_id(),
                                     run_id=plan.run_id, provider=plan.provider,
                                     model=plan.model, api=api), clock.now)
            plan.assistant_messages += 1
    else:
        plan.status = "timeout" if end.kind == "timeout" else "failed"
    plan.updated = clock.now
    if plan.status != "running":
        plan.ended = plan.updated
        log.append((plan.updated, "DEBUG", "agent/embedded",
                    f"embedded run done: runId={plan.run_id} sessionId={plan.session_id} "
                    f"durationMs={tx.to_ms(plan.updated - plan.created)} aborted=false", run))
    return session_entry(plan, context), trajectory_rows(plan, cwd), log


def session_entry(plan: SessionPlan, context: int) -> dict:
    entry = {"createdVia": "operator", "createdAt": tx.to_ms(plan.created),
             "sessionId": plan.session_id, "updatedAt": tx.to_ms(plan.updated),
             "sessionStartedAt": tx.to_ms(plan.created), "systemSent": True,
             "abortedLastRun": False, "chatType": "direct", "compactionCount": 0,
             "totalTokens": context, "totalTokensFresh": True,
             "activeWriterRunId": plan.run_id, "status": plan.status,
             "startedAt": tx.to_ms(plan.created)}
    if plan.ended is not None:
        entry["endedAt"] = tx.to_ms(plan.ended)
        entry["runtimeMs"] = tx.to_ms(plan.ended - plan.created)
    entry.update({"lastRunId": plan.run_id, "modelProvider": plan.provider, "model": plan.model,
                  "inputTokens": plan.tokens["input"], "outputTokens": plan.tokens["output"],
                  "cacheRead": plan.tokens["cache_read"],
                  "cacheWrite": plan.tokens["cache_write"]})
    return entry


def trajectory_rows(plan: SessionPlan, cwd: str) -> list[tuple]:
    """The run's lifecycle trace (per-tool trajectory rows are left out: no reader here
    uses the table, and they would double the database)."""
    kinds = [("session.started", plan.created, {"trigger": "user", "agentId": AGENT}),
             ("prompt.submitted", plan.created, {"imagesCount": 0})]
    if plan.ended is not None:
        kinds += [("model.completed", plan.ended, {"usage": dict(plan.tokens)}),
                  ("session.ended", plan.ended, {"status": plan.status})]
    rows = []
    for seq, (kind, ts, data) in enumerate(kinds, 1):
        event = {"traceSchema": "openclaw-trajectory", "schemaVersion": 1,
                 "traceId": plan.session_id, "source": "runtime", "type": kind,
                 "ts": tx.iso_ms(ts), "seq": seq, "sessionId": plan.session_id,
                 "sessionKey": plan.key, "runId": plan.run_id, "workspaceDir": cwd,
                 "provider": plan.provider, "modelId": plan.model, "data": data}
        rows.append((plan.session_id, seq - 1, plan.run_id, tx.dumps(event), tx.to_ms(ts)))
    return rows


class SqliteEra:
    """Bulk writer of the agent database: journal off while loading, WAL when done."""

    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / "agents" / AGENT / "agent" / "openclaw-agent.sqlite"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(self.path)
        self.conn.executescript(SCHEMA_PATH.read_text())
        self.conn.execute("PRAGMA journal_mode = OFF")
        self.conn.execute("PRAGMA synchronous = OFF")
        self.conn.execute("BEGIN")
        self.compressor = zstandard.ZstdCompressor(level=1, write_checksum=True)
        self.plain: list[tuple] = []
        self.packed: list[tuple] = []
        self.buffered = 0
        self.zstd_rows = 0
        self.rows = 0

    def event(self, session_id: str, seq: int, event: dict, text: str, raw: bytes,
              created_ms: int) -> bool:
        """Queue one transcript row; True when it is stored zstd-compressed."""
        self.rows += 1
        self.buffered += len(raw)
        if len(raw) > ZSTD_THRESHOLD_BYTES:
            nav = tx.dumps(tx.navigation(event, len(raw)))
            self.packed.append((session_id, seq, created_ms, self.compressor.compress(raw),
                                len(raw), nav))
            self.zstd_rows += 1
            packed = True
        else:
            self.plain.append((session_id, seq, text, created_ms, len(raw)))
            packed = False
        if self.buffered >= FLUSH_BYTES:
            self.flush()
        return packed

    def flush(self) -> None:
        self.conn.executemany(INSERT_EVENT_JSON, self.plain)
        self.conn.executemany(INSERT_EVENT_ZSTD, self.packed)
        self.plain, self.packed, self.buffered = [], [], 0

    def session(self, plan: SessionPlan, entry: dict, trajectory: list[tuple]) -> None:
        created, updated = tx.to_ms(plan.created), tx.to_ms(plan.updated)
        self.conn.execute(INSERT_NODE, (plan.key, plan.session_id, tx.dumps(entry), updated,
                                        plan.status, created, created, updated))
        self.conn.execute(INSERT_WINDOW, (plan.session_id, plan.key, created, updated, updated,
                                          updated, created, tx.to_ms(plan.ended) if plan.ended
                                          else None, plan.status, plan.provider, plan.model))
        self.conn.executemany(INSERT_TRAJECTORY, trajectory)

    def close(self) -> None:
        self.flush()
        self.conn.execute("COMMIT")
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.close()


class LegacyEra:
    """Buffered appends of ``<sessionId>.jsonl``; ``sessions.json`` written once at the end."""

    def __init__(self, state_dir: Path) -> None:
        self.dir = state_dir / "agents" / AGENT / "sessions"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.index: dict[str, dict] = {}
        self._handle = None
        self._session = ""

    def event(self, session_id: str, raw: bytes) -> None:
        if session_id != self._session:
            self._close_file()
            self._handle = open(self.dir / f"{session_id}.jsonl", "wb",
                                buffering=4 << 20)
            self._session = session_id
        self._handle.write(raw)
        self._handle.write(b"\n")

    def session(self, plan: SessionPlan, entry: dict) -> None:
        ordered = {"sessionId": plan.session_id,
                   "sessionFile": str(self.dir / f"{plan.session_id}.jsonl")}
        ordered.update((k, v) for k, v in entry.items() if k != "sessionId")
        self.index[plan.key] = ordered

    def _close_file(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None
            self._session = ""

    def close(self) -> None:
        self._close_file()
        with open(self.dir / "sessions.json", "w", encoding="utf-8") as handle:
            json.dump(self.index, handle, indent=2, ensure_ascii=False)


def write_openclaw_config(state_dir: Path) -> Path:
    log_path = state_dir / "logs" / "openclaw.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    config = {"gateway": {"port": 1, "mode": "local"},
              "logging": {"file": str(log_path), "level": "debug"}}
    (state_dir / "openclaw.json").write_text(json.dumps(config, indent=2))
    return log_path


def session_plans(args: argparse.Namespace, rng: random.Random) -> list[SessionPlan]:
    """Which sessions to write: mostly short work and chat, some loops, a few giants."""
    now = time.time() - 86_400
    span = 40 * 86_400
    plans: list[SessionPlan] = []
    kinds = (("work", 0.82), ("chat", 0.08), ("hammer", 0.02), ("pingpong", 0.02),
             ("poll", 0.015), ("rotation", 0.015), ("drift", 0.01), ("unknown_tool", 0.01))
    names, weights = zip(*kinds, strict=True)
    for index in range(args.sessions):
        kind = rng.choices(names, weights)[0]
        turns = max(1, min(400, int(rng.lognormvariate(math.log(args.median_turns), 1.0))))
        if kind == "chat":
            turns = rng.randint(1, 6)
        elif kind not in ("work",):
            turns = rng.randint(25, 70)
        plans.append(SessionPlan(index=index, kind=kind, turns=turns, target_bytes=None,
                                 start=now - span + span * index / args.sessions))
    for number, megabytes in enumerate(args.big_mb):
        slot = rng.randrange(len(plans))
        plans.insert(slot, SessionPlan(index=args.sessions + number, kind="giant", turns=10**9,
                                       target_bytes=int(megabytes * 1e6),
                                       start=plans[slot].start))
    return plans


def free_bytes(path: Path) -> int:
    probe = path
    while not probe.exists():
        probe = probe.parent
    return shutil.disk_usage(probe).free


def clear_eras(out: Path) -> None:
    """Remove what an earlier run wrote under ``out``, its manifest first: a run stopped
    half-way (SIGTERM, a full disk) must not leave the last run's manifest beside a state it
    does not describe, where the benchmarks would take it as the truth."""
    (out / "manifest.json").unlink(missing_ok=True)
    for era in ("sqlite", "legacy"):
        shutil.rmtree(out / era, ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)


def write_manifest(out: Path, document: dict) -> None:
    """``manifest.json``, written whole (a temporary file renamed into place), last."""
    temporary = out / ".manifest.json.tmp"
    temporary.write_text(json.dumps(document))
    temporary.replace(out / "manifest.json")


def generate(args: argparse.Namespace) -> dict:
    out = Path(args.out)
    estimate = int((sum(args.big_mb) * 1e6 + args.sessions * 70_000) * 2.6)
    if free_bytes(out) < estimate:
        raise SystemExit(f"gen_large_state: {out} has {free_bytes(out) / 1e9:.1f} GB free; "
                         f"about {estimate / 1e9:.1f} GB are needed")
    clear_eras(out)
    rng = random.Random(args.seed)
    pool = TextPool(random.Random(args.seed + 1))
    sqlite_era = SqliteEra(out / "sqlite")
    legacy_era = LegacyEra(out / "legacy")
    logs = [GatewayLogWriter(write_openclaw_config(out / era), hostname="bench-host")
            for era in ("sqlite", "legacy")]
    manifest: list[dict] = []
    started = time.monotonic()
    totals = {"events": 0, "bytes": 0, "zstd_rows": 0}
    plans = session_plans(args, rng)
    for done, plan in enumerate(plans, 1):
        summary = {"zstd_assistant": {"messages": 0, "input": 0, "output": 0, "total": 0}}

        def emit(event: dict, ts: float, plan: SessionPlan = plan, summary: dict = summary
                 ) -> None:
            text = tx.dumps(event)
            raw = text.encode()
            seq = plan.events
            plan.events += 1
            plan.bytes += len(raw) + 1
            packed = sqlite_era.event(plan.session_id, seq, event, text, raw, tx.to_ms(ts))
            legacy_era.event(plan.session_id, raw)
            message = event.get("message") if event.get("type") == "message" else None
            if packed and message and message.get("role") == "assistant":
                used = summary["zstd_assistant"]
                usage = message.get("usage") or {}
                used["messages"] += 1
                used["input"] += usage.get("input", 0)
                used["output"] += usage.get("output", 0)
                used["total"] += usage.get("totalTokens", 0)

        entry, trajectory, log_lines = build_session(plan, pool, random.Random(
            f"{args.seed}:{plan.index}"), emit)
        sqlite_era.session(plan, entry, trajectory)
        legacy_era.session(plan, entry)
        for writer in logs:
            for ts, level, subsystem, message, trace in log_lines:
                writer.write(ts, level, subsystem, message, trace=trace)
        summary.update(plan.summary())
        manifest.append(summary)
        totals["events"] += plan.events
        totals["bytes"] += plan.bytes
        if done % 1000 == 0 or plan.kind == "giant":
            elapsed = time.monotonic() - started
            print(f"  {done}/{len(plans)} sessions, {totals['bytes'] / 1e6:,.0f} MB, "
                  f"{elapsed:.0f}s", file=sys.stderr, flush=True)
    totals["zstd_rows"] = sqlite_era.zstd_rows
    sqlite_era.close()
    legacy_era.close()
    for writer in logs:
        writer.close()
    document = {"seed": args.seed, "sessions": manifest, "totals": totals,
                "generate_seconds": round(time.monotonic() - started, 1)}
    write_manifest(out, document)
    return document


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def print_sizes(out: Path, document: dict) -> None:
    sessions = document["sessions"]
    sizes = sorted(s["bytes"] for s in sessions)
    totals = document["totals"]
    print(f"sessions: {len(sessions):,}  events: {totals['events']:,}  "
          f"transcript bytes (JSON text, both eras): {totals['bytes'] / 1e6:,.1f} MB")
    print(f"per-session bytes: median {sizes[len(sizes) // 2] / 1e3:,.1f} kB, "
          f"p90 {sizes[int(len(sizes) * 0.9)] / 1e3:,.1f} kB, "
          f"p99 {sizes[int(len(sizes) * 0.99)] / 1e6:,.2f} MB, "
          f"largest {', '.join(f'{b / 1e6:,.0f}' for b in sizes[-3:])} MB")
    zstd_assistant = sum(s["zstd_assistant"]["messages"] for s in sessions)
    print(f"sqlite zstd rows: {totals['zstd_rows']:,} (assistant messages among them: "
          f"{zstd_assistant:,})")
    db = out / "sqlite" / "agents" / AGENT / "agent" / "openclaw-agent.sqlite"
    print(f"sqlite era on disk: {dir_bytes(out / 'sqlite') / 1e6:,.1f} MB "
          f"(database {db.stat().st_size / 1e6:,.1f} MB)")
    print(f"legacy era on disk: {dir_bytes(out / 'legacy') / 1e6:,.1f} MB")
    print(f"gateway log: {(out / 'sqlite' / 'logs' / 'openclaw.log').stat().st_size / 1e6:,.1f}"
          f" MB per era; generated in {document['generate_seconds']}s")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="/tmp/clawwatch-bench", help="output dir")
    parser.add_argument("--small", action="store_true",
                        help="quick run: 300 sessions and one 20 MB transcript")
    parser.add_argument("--sessions", type=int, default=None, help="ordinary sessions")
    parser.add_argument("--big-mb", default=None,
                        help="comma-separated sizes of the giant transcripts in MB")
    parser.add_argument("--median-turns", type=float, default=4.0)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    if args.sessions is None:
        args.sessions = 300 if args.small else 10_000
    if args.big_mb is None:
        args.big_mb = "20" if args.small else "320,220,140"
    try:
        args.big_mb = [float(x) for x in args.big_mb.split(",") if x.strip()]
    except ValueError:
        parser.error(f"--big-mb: not a list of numbers: {args.big_mb!r}")
    if any(not 0 < size <= 100_000 for size in args.big_mb):
        # a size of 0 would be "no target": that transcript would grow until the disk is full
        parser.error("--big-mb: each size must be more than 0 and at most 100000 MB "
                     "(give an empty list, --big-mb '', for no giant transcript)")
    if args.sessions < 0:
        parser.error("--sessions: must be 0 or more")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    document = generate(args)
    print_sizes(Path(args.out), document)
    return 0


if __name__ == "__main__":
    sys.exit(main())

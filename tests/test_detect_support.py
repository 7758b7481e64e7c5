"""Builders shared by the detector tests: hand-written transcripts fed to a real engine."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from monitor.config import Config, load_config
from monitor.detect.engine import DetectionEngine
from monitor.detect.findings import Finding
from monitor.events import (
    AssistantMessage,
    Compaction,
    GatewayNotice,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
)

FIXTURES = Path(__file__).parent / "fixtures"
VETO_TEXT = "CRITICAL: blocked. Do not repeat this exact tool action."


def engine_with(tmp_path: Path | None = None, yaml_text: str | None = None) -> DetectionEngine:
    if yaml_text is None:
        return DetectionEngine(Config())
    path = tmp_path / "clawwatch.yaml"
    path.write_text(yaml_text)
    return DetectionEngine(load_config(str(path), env={}))


def exec_details(output: str, exit_code: int = 0, status: str = "completed",
                 duration_ms: int = 12) -> dict:
    return {"status": status, "exitCode": exit_code, "exitSignal": None, "exitReason": "exit",
            "durationMs": duration_ms, "aggregated": output, "noOutputTimedOut": False,
            "cwd": "/work"}


class Script:
    """One session driven through ``DetectionEngine.observe`` in transcript order."""

    def __init__(self, engine: DetectionEngine | None = None, session_id: str = "sess-1",
                 key: str = "agent:main:test", agent: str = "main", run: str | None = "run-1"):
        self.engine = engine or DetectionEngine(Config())
        self.session_id = session_id
        self.key = key
        self.agent = agent
        self.run = run
        self.findings: list[Finding] = []
        self.ts = 1_800_000_000.0
        self._ids = itertools.count(1)
        self.calls = 0

    def feed(self, event) -> list[Finding]:
        found = self.engine.observe(self.key, self.agent, event)
        self.findings.extend(found)
        return found

    def tick(self, seconds: float = 1.0) -> float:
        self.ts += seconds
        return self.ts

    def assistant(self, tool_calls: int = 0, usage: Usage | None = None,
                  stop_reason: str | None = None, error: str | None = None,
                  run: str | None = "<default>") -> list[Finding]:
        run = self.run if run == "<default>" else run
        reason = stop_reason or ("toolUse" if tool_calls else "stop")
        return self.feed(AssistantMessage(
            self.session_id, run, self.tick(), usage or Usage(input=1000, output=20, total=1020),
            reason, error, "m", "p", tool_calls, 0))

    def batch(self, calls: list[tuple[str, object]], run: str | None = "<default>",
              ids: list[str] | None = None, has_arguments: bool = True
              ) -> tuple[list[str], list[Finding]]:
        """An assistant message making ``calls``; returns (call ids, findings)."""
        run = self.run if run == "<default>" else run
        found = self.assistant(len(calls), run=run)
        call_ids = []
        for index, (name, args) in enumerate(calls):
            call_id = ids[index] if ids else f"call_{next(self._ids):04d}"
            call_ids.append(call_id)
            self.calls += 1
            found += self.feed(ToolCall(self.session_id, call_id, name, args, run, self.ts,
                                        has_arguments=has_arguments))
        return call_ids, found

    def result(self, call_id: str, name: str, details=None, text: str = "",
               is_error: bool = False, run: str | None = "<default>") -> list[Finding]:
        run = self.run if run == "<default>" else run
        return self.feed(ToolResult(self.session_id, call_id, name, is_error, details, text,
                                    run, self.tick(0.1)))

    def veto(self, call_id: str, name: str, action_key: str | None = None,
             run: str | None = "<default>") -> list[Finding]:
        details = {"status": "blocked", "deniedReason": "tool-loop"}
        if action_key:
            details["intervention"] = {"kind": "critical-tool-loop", "actionKey": action_key}
        return self.result(call_id, name, details, VETO_TEXT, True, run)

    def step(self, name: str, args, details=None, text: str = "", is_error: bool = False,
             run: str | None = "<default>") -> list[Finding]:
        """One call and its result."""
        (call_id,), found = self.batch([(name, args)], run=run)
        return found + self.result(call_id, name, details, text, is_error, run)

    def exec(self, command: str, output: str, exit_code: int = 0,
             run: str | None = "<default>") -> list[Finding]:
        return self.step("exec", {"command": command}, exec_details(output, exit_code), output,
                         run=run)

    def user(self, text: str = "continue", run: str | None = None) -> list[Finding]:
        return self.feed(UserMessage(self.session_id, run or self.run, self.tick(), len(text)))

    def compaction(self) -> list[Finding]:
        return self.feed(Compaction(self.session_id, "compaction", 100_000, self.tick()))

    def notice(self, message: str, run_id: str | None = None) -> list[Finding]:
        return self.feed(GatewayNotice("WARN", "agents/loop-detection", message, self.tick(),
                                       run_id=run_id, session_id=self.session_id))

    def of(self, detector: str) -> list[tuple[str, int, int]]:
        """(level, count, at_call) of the findings of one detector."""
        return [(f.level, f.count, f.at_call) for f in self.findings if f.detector == detector]


def replay_fixture(name: str, engine: DetectionEngine | None = None
                   ) -> tuple[DetectionEngine, str, list[Finding]]:
    """Feed a stored OpenClaw transcript through the real transcript parser and the engine."""
    engine = engine or DetectionEngine(Config())
    findings: list[Finding] = []
    events = fixture_events(name)
    for event in events:
        findings.extend(engine.observe(f"agent:main:{name}", "main", event))
    return engine, events[0].session_id if events else "", findings


def fixture_events(name: str) -> list:
    """A stored OpenClaw transcript's events, by the real transcript parser."""
    from monitor.sources.transcript import parse_entry

    events: list = []
    session_id = ""
    with (FIXTURES / name).open() as handle:
        for number, line in enumerate(handle):
            entry = json.loads(line)
            if entry.get("type") == "session":
                session_id = entry["id"]
            events += parse_entry(entry, session_id, f"{name}@{number}")
    return events


def transcript_calls(name: str) -> list[dict]:
    """Every tool call of a fixture in order, with its result's veto and warning note."""
    calls: dict[str, dict] = {}
    order: list[str] = []
    with (FIXTURES / name).open() as handle:
        for line in handle:
            message = json.loads(line).get("message") or {}
            if message.get("role") == "assistant":
                for item in message.get("content", []):
                    if item.get("type") == "toolCall":
                        calls[item["id"]] = {"id": item["id"], "name": item["name"],
                                             "index": len(order) + 1, "veto": None, "note": None}
                        order.append(item["id"])
            elif message.get("role") == "toolResult" and message["toolCallId"] in calls:
                entry = calls[message["toolCallId"]]
                details = message.get("details") or {}
                if details.get("deniedReason") == "tool-loop":
                    entry["veto"] = details["intervention"]
                for part in message.get("content", []):
                    text = part.get("text", "")
                    if text.startswith("[System note: Tool-loop warning after "):
                        entry["note"] = int(text.split("after ")[1].split(" ")[0])
    return [calls[call_id] for call_id in order]

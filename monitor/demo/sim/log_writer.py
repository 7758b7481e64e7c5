"""Writes gateway file-log lines (tslog JSON) shaped like OpenClaw 2026.9.6's.

Each line is one JSON object: ``"0"`` the subsystem bindings as a JSON *string*,
``"1"`` the message (or ``"1"`` a meta object and ``"2"`` the message), ``_meta``,
``time``, ``hostname``, ``message`` and, inside a request, ``traceId``/``spanId``/
``parentSpanId``/``traceFlags``. The ``traceId`` is constant within one run, which is how
a bare ``Loop warning`` line is joined to its run. Helper methods emit the run
lifecycle lines a monitor parses (ids inside the message text as ``key=value``).
"""

from __future__ import annotations

import json
import os
import socket
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from monitor.demo.sim.transcript import IdSource, dumps

LEVEL_IDS = {"TRACE": 1, "DEBUG": 2, "INFO": 3, "WARN": 4, "ERROR": 5, "FATAL": 6}
PLUGINS = ("anthropic, browser, canvas, cua-computer, device-pair, file-transfer, geolocation, "
           "github, linux-node, memory-core, ollama, openai, talk-voice, xai")


@dataclass(frozen=True, slots=True)
class Trace:
    """The trace context of one log line (``parent_span_id`` only inside a child span)."""

    trace_id: str
    span_id: str
    parent_span_id: str | None = None

    @classmethod
    def new(cls, ids: IdSource) -> Trace:
        return cls(ids.hex(32), ids.hex(16))

    def child(self, ids: IdSource) -> Trace:
        return Trace(self.trace_id, ids.hex(16), self.span_id)


def _times(ts: float) -> tuple[str, str]:
    dt = datetime.fromtimestamp(ts, tz=UTC)
    base = dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}"
    return base + "Z", base + "+00:00"


def generic_warning_text(tool: str, count: int) -> str:
    return (f"WARNING: You have called {tool} {count} times with identical arguments. "
            "If this is not making progress, stop retrying and report the task as failed.")


def known_poll_warning_text(tool: str, count: int) -> str:
    return (f"WARNING: You have called {tool} {count} times with identical arguments and no "
            "progress. Stop polling and either (1) increase wait time between checks, or (2) "
            "report the task as failed if the process is stuck.")


class GatewayLogWriter:
    """Appends tslog lines to ``path`` (one ``write()`` per line, flushed)."""

    def __init__(
        self,
        path: str | Path,
        *,
        hostname: str | None = None,
        runtime_version: str = "24.22.3",
    ) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.hostname = hostname or socket.gethostname()
        self.runtime_version = runtime_version
        self._lock = threading.Lock()
        self._handle = open(self.path, "a", encoding="utf-8")

    def write(
        self,
        ts: float,
        level: str,
        subsystem: str,
        message: str,
        *,
        meta: dict[str, Any] | None = None,
        trace: Trace | None = None,
        top_level: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Write one line; ``meta`` goes to ``"1"`` (message to ``"2"``), ``top_level``
        adds rare fields such as ``agent_id``/``session_id``. Returns the record."""
        bindings = dumps({"subsystem": subsystem})
        date, time_text = _times(ts)
        record: dict[str, Any] = {"0": bindings}
        if meta is None:
            record["1"] = message
        else:
            record["1"] = meta
            record["2"] = message
        record["_meta"] = {
            "runtime": "node",
            "runtimeVersion": self.runtime_version,
            "hostname": self.hostname,
            "date": date,
            "logLevelId": LEVEL_IDS[level],
            "logLevelName": level,
            "name": bindings,
            "parentNames": ["openclaw"],
        }
        record.update({"time": time_text, "hostname": self.hostname, "message": message})
        if top_level:
            record.update(top_level)
        if trace is not None:
            record["traceId"] = trace.trace_id
            record["spanId"] = trace.span_id
            if trace.parent_span_id:
                record["parentSpanId"] = trace.parent_span_id
            record["traceFlags"] = "01"
        line = json.dumps(record, separators=(",", ":"), ensure_ascii=False) + "\n"
        with self._lock:
            self._handle.write(line)
            self._handle.flush()
        return record

    # -- lines a gateway writes; each takes the time and the run's trace --

    def startup(self, ts: float, provider: str = "fake", model: str = "loop-model") -> None:
        self.write(ts, "INFO", "gateway", "starting HTTP server...")
        self.write(ts, "INFO", "gateway",
                   f"agent model: {provider}/{model} (thinking=off, fast=off)")
        self.write(ts, "INFO", "gateway", f"http server listening (14 plugins: {PLUGINS}; 3.9s)")
        self.write(ts, "INFO", "gateway", f"log file: {self.path}")
        self.write(ts, "INFO", "gateway", "gateway ready")

    def chat_send(self, ts: float, trace: Trace, run_id: str, conn: str, req: str) -> None:
        text = f"⇄ res ✓ chat.send 122ms runId={run_id} conn={conn} id={req}"
        self.write(ts, "INFO", "gateway/ws", text, trace=trace)

    def chat_abort(self, ts: float, trace: Trace, conn: str, req: str) -> None:
        self.write(ts, "INFO", "gateway/ws", f"⇄ res ✓ chat.abort 66ms conn={conn} id={req}",
                   trace=trace)

    def run_started(
        self, ts: float, request: Trace, run: Trace, *, run_id: str, session_id: str,
        session_key: str, agent_id: str, provider: str, model: str,
    ) -> None:
        self.write(ts, "DEBUG", "diagnostic",
                   f"session turn created: runId={run_id} sessionId={session_id} "
                   f"sessionKey={session_key} agentId={agent_id} channel=webchat trigger=user",
                   trace=request)
        harness = {"provider": provider, "modelId": model, "sessionKey": session_key,
                   "agentId": agent_id, "selectedHarnessId": "openclaw",
                   "selectedReason": "forced_openclaw", "runtime": "openclaw", "candidates": []}
        self.write(ts, "DEBUG", "agents/harness", "agent harness selected", meta=harness,
                   trace=request, top_level={"agent_id": agent_id, "session_id": session_key})
        self.write(ts, "DEBUG", "agent/embedded",
                   f"embedded run start: runId={run_id} sessionId={session_id} "
                   f"provider={provider} model={model} thinking=off messageChannel=webchat",
                   trace=run)
        self.write(ts, "DEBUG", "diagnostic",
                   f"run registered: sessionId={session_id} totalActive=1", trace=run)
        self.write(ts, "DEBUG", "agent/embedded", f"embedded run agent start: runId={run_id}",
                   trace=run)

    def model_fetch(
        self, ts: float, run: Trace, *, provider: str, model: str, api: str, elapsed_ms: int
    ) -> None:
        self.write(ts, "DEBUG", "provider-transport-fetch",
                   f"[model-fetch] start provider={provider} api={api} model={model} "
                   "method=POST url=http://127.0.0.1:38493/v1/chat/completions "
                   "timeoutMs=60000 proxy=none policy=custom", trace=run)
        self.write(ts, "DEBUG", "provider-transport-fetch",
                   f"[model-fetch] response provider={provider} api={api} model={model} "
                   f"status=200 elapsedMs={elapsed_ms} dispatcher=new "
                   "contentType=text/event-stream", trace=run)

    def tool(self, ts: float, run: Trace, phase: str, *, run_id: str, tool: str,
             call_id: str) -> None:
        """``phase`` is ``start`` or ``end``."""
        self.write(ts, "DEBUG", "agent/embedded",
                   f"embedded run tool {phase}: runId={run_id} tool={tool} toolCallId={call_id}",
                   trace=run)

    def loop_warning(
        self, ts: float, run: Trace, *, tool: str, count: int, session_id: str,
        session_key: str, polling: bool = False,
    ) -> None:
        """OpenClaw's repeat-warning trio (logged only when its loop guard is enabled):
        ``generic_repeat``, or ``known_poll_no_progress`` for a repeated poll."""
        if polling:
            detector = "known_poll_no_progress"
            warning = known_poll_warning_text(tool, count)
            headline = f"Polling loop warning: {tool} repeated {count} times"
        else:
            detector = "generic_repeat"
            warning = generic_warning_text(tool, count)
            headline = f"Loop warning: {tool} called {count} times with identical arguments"
        self.write(ts, "WARN", "agents/loop-detection", headline, trace=run)
        self.write(ts, "WARN", "agents/tools", f"Loop warning for {tool}: {warning}", trace=run)
        self.write(ts, "WARN", "diagnostic",
                   f"tool loop: sessionId={session_id} sessionKey={session_key} tool={tool} "
                   f"level=warning action=warn detector={detector} count={count} "
                   f'message="{warning}"', trace=run)

    def run_error(self, ts: float, run: Trace, *, run_id: str, provider: str, model: str,
                  error: str) -> None:
        meta = {"event": "embedded_run_agent_end",
                "tags": ["error_handling", "lifecycle", "agent_end", "assistant_error"],
                "runId": run_id, "isError": True,
                "error": f"⚠️ Agent run failed (model: {provider}/{model}).",
                "failoverReason": None, "model": model, "provider": provider,
                "rawErrorPreview": error, "providerRuntimeFailureKind": "unclassified"}
        self.write(ts, "WARN", "agent/embedded", "embedded run agent end", meta=meta, trace=run)

    def run_done(self, ts: float, request: Trace, run: Trace, *, run_id: str, session_id: str,
                 session_key: str, duration_ms: int) -> None:
        self.write(ts, "DEBUG", "agent/embedded",
                   f"embedded run done: runId={run_id} sessionId={session_id} "
                   f"durationMs={duration_ms} aborted=false", trace=run)
        self.write(ts, "DEBUG", "diagnostic",
                   f"session state: sessionId={session_id} sessionKey={session_key} "
                   'prev=processing new=idle reason="run_completed" queueDepth=0', trace=request)

    def run_cleanup(self, ts: float, request: Trace, run: Trace, *, run_id: str,
                    session_id: str, session_key: str, duration_ms: int,
                    timed_out: bool = False) -> None:
        """What an aborted (or timed-out) run leaves in the log."""
        self.write(ts, "DEBUG", "agent/embedded",
                   f"run cleanup: runId={run_id} sessionId={session_id} aborted=true "
                   f"timedOut={'true' if timed_out else 'false'}", trace=run)
        self.write(ts, "ERROR", "diagnostic",
                   f"lane task error: lane=session:{session_key} durationMs={duration_ms} "
                   'error="This operation was aborted"', meta={"errorName": "AbortError"},
                   trace=request)

    def rotate(self) -> Path:
        """Rename the log to ``<name>.1`` (replacing an older one) and go on in a new file,
        as logrotate's default does; returns the rotated path."""
        rotated = self.path.with_name(self.path.name + ".1")
        with self._lock:
            self._handle.close()
            os.replace(self.path, rotated)
            self._handle = open(self.path, "a", encoding="utf-8")
        return rotated

    def close(self) -> None:
        with self._lock:
            self._handle.close()

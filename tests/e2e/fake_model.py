#!/usr/bin/env python3
"""A scripted OpenAI-compatible chat-completions server for the e2e tests (stdlib, loopback only).

The behaviour is chosen per conversation, from a marker in its first user message:

    clawwatch-e2e mode=hammer [max=N] [delay=S] [cmd=<base64 of a shell command>] [tag=T]

so concurrent sessions on one gateway can run different scripts. The server keeps no
per-session state: the next step is derived from the number of tool calls the assistant has
already made in the conversation it is sent. Modes (``N`` = tool calls so far):

  hammer        ``exec`` of the same command every turn
  pingpong      ``read /etc/hostname`` and ``exec`` alternately
  poll          ``exec`` a background sleeper, then ``process poll`` its process session forever
  unknown-tool  a tool that does not exist (``frobnicate_widget``)
  rotation      ls / find / python3 -c / tail on one missing path, each repeated every 4th call
  drift         ``date +%s%N; ls /nonexistent``: outcomes differ only by the timestamp
  progress      ``echo step-N`` for N = 1..12 (distinct commands, distinct outputs), then text
  sleepy        ``exec sleep 30`` (or ``cmd``) every turn: long-lived children for kill tests
  normal        a text answer

``max=N`` ends any mode with a text answer once N tool calls were made. Requests that offer
no tools (titles, summaries, probes) and conversations without a marker get a text answer.
Usage: ``prompt_tokens`` is the request body size / 4, ``completion_tokens`` is fixed.

Endpoints: POST /v1/chat/completions (streaming SSE with a final usage chunk, or plain JSON),
GET /v1/models, GET /healthz, GET /stats. Every completion request is appended to ``--log``
as one JSON line.

    fake_model.py --port 0 --port-file PORTFILE --log requests.jsonl [--delay 0.1]
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import sys
import threading
import time
import uuid
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MARKER = "clawwatch-e2e"
MODEL_ID = "loop-model"
COMPLETION_TOKENS = 17
MISSING_PATH = "/tmp/clawwatch-e2e-missing"
PROGRESS_STEPS = 12
MODES = ("hammer", "pingpong", "poll", "unknown-tool", "rotation", "drift", "progress",
         "sleepy", "normal")
DEFAULT_COMMANDS = {
    "hammer": f"ls -la {MISSING_PATH}",
    "pingpong": f"ls -la {MISSING_PATH}",
    "poll": "sleep 300",
    "sleepy": "sleep 30",
    "drift": "date +%s%N; ls /nonexistent",
}
ROTATION = (
    f"ls -la {MISSING_PATH}",
    f"find {MISSING_PATH} -maxdepth 1",
    f"python3 -c \"import os; os.stat('{MISSING_PATH}')\"",
    f"tail -n 5 {MISSING_PATH}",
)
TEXT_ANSWER = "Done. (clawwatch fake model)"

_OPTION_RE = re.compile(r"([a-z_]+)=(\S+)")
_PROCESS_SESSION_RE = re.compile(r"(?:sessionId|session id|session)[\"':=\s]+([A-Za-z0-9_-]{4,})")


def encode_command(command: str) -> str:
    """The ``cmd=`` marker value for a shell command (URL-safe base64, no padding)."""
    return base64.urlsafe_b64encode(command.encode()).decode().rstrip("=")


def decode_command(value: str) -> str:
    return base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)).decode()


def message_text(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return " ".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content if isinstance(content, str) else ""


def parse_marker(messages: list[dict]) -> dict[str, str] | None:
    """Options from the marker in the first user message, or None when there is none."""
    first_user = next((m for m in messages if m.get("role") == "user"), None)
    if first_user is None:
        return None
    text = message_text(first_user)
    at = text.find(MARKER)
    if at < 0:
        return None
    first_line = text[at + len(MARKER):].partition("\n")[0]
    return dict(_OPTION_RE.findall(first_line))


def tool_calls_so_far(messages: list[dict]) -> int:
    return sum(len(m.get("tool_calls") or []) for m in messages if m.get("role") == "assistant")


def last_process_session(messages: list[dict]) -> str | None:
    """The background exec's process session id, from the latest tool result naming one."""
    for message in reversed(messages):
        if message.get("role") != "tool":
            continue
        hit = _PROCESS_SESSION_RE.search(message_text(message))
        if hit:
            return hit.group(1)
    return None


def plan(request: dict) -> tuple[str, str, dict | None, dict[str, str]]:
    """Decide the reply: ``("text", answer, None, opts)`` or ``("tool", name, args, opts)``."""
    messages = request.get("messages") or []
    opts = parse_marker(messages) or {}
    mode = opts.get("mode", "normal")
    n = tool_calls_so_far(messages)
    if not request.get("tools") or mode not in MODES or mode == "normal":
        return ("text", TEXT_ANSWER, None, opts)
    if "max" in opts and n >= int(opts["max"]):
        return ("text", f"Stopping after {n} tool calls. (clawwatch fake model)", None, opts)
    command = decode_command(opts["cmd"]) if "cmd" in opts else DEFAULT_COMMANDS.get(mode, "")
    if mode in ("hammer", "sleepy", "drift"):
        return ("tool", "exec", {"command": command}, opts)
    if mode == "pingpong":
        if n % 2 == 0:
            return ("tool", "read", {"path": "/etc/hostname"}, opts)
        return ("tool", "exec", {"command": command}, opts)
    if mode == "poll":
        process_session = last_process_session(messages)
        if n == 0 or not process_session:
            return ("tool", "exec", {"command": command, "background": True}, opts)
        return ("tool", "process", {"action": "poll", "sessionId": process_session}, opts)
    if mode == "unknown-tool":
        return ("tool", "frobnicate_widget", {"target": "widget-1"}, opts)
    if mode == "rotation":
        return ("tool", "exec", {"command": ROTATION[n % len(ROTATION)]}, opts)
    if n >= PROGRESS_STEPS:
        return ("text", f"All {PROGRESS_STEPS} steps done. (clawwatch fake model)", None, opts)
    return ("tool", "exec", {"command": f"echo step-{n + 1}"}, opts)


class Stats:
    """Counters behind GET /stats, plus the request log."""

    def __init__(self, log_path: str | None):
        self.lock = threading.Lock()
        self.log_path = log_path
        self.requests = 0
        self.tool_calls = 0
        self.by_mode: Counter[str] = Counter()

    def record(self, entry: dict) -> int:
        with self.lock:
            self.requests += 1
            entry["n"] = self.requests
            self.by_mode[entry.get("mode") or "-"] += 1
            if entry.get("tool"):
                self.tool_calls += 1
            if self.log_path:
                with open(self.log_path, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(entry) + "\n")
            return self.requests

    def snapshot(self) -> dict:
        with self.lock:
            return {"requests": self.requests, "tool_calls": self.tool_calls,
                    "by_mode": dict(self.by_mode)}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: FakeModelServer

    def log_message(self, format, *args):
        pass

    def _send_json(self, code: int, obj: dict) -> None:
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        path = self.path.rstrip("/")
        if path.endswith("/models"):
            return self._send_json(200, {"object": "list", "data": [
                {"id": MODEL_ID, "object": "model", "owned_by": "clawwatch-e2e"}]})
        if path == "/healthz":
            return self._send_json(200, {"ok": True})
        if path == "/stats":
            return self._send_json(200, self.server.stats.snapshot())
        return self._send_json(404, {"error": "not found"})

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if not self.path.rstrip("/").endswith("/chat/completions"):
            return self._send_json(404, {"error": "not found"})
        try:
            request = json.loads(raw or b"{}")
        except ValueError:
            return self._send_json(400, {"error": "bad json"})
        kind, value, args, opts = plan(request)
        delay = float(opts.get("delay", self.server.delay))
        if delay > 0:
            time.sleep(delay)
        prompt_tokens = len(raw) // 4
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": COMPLETION_TOKENS,
                 "total_tokens": prompt_tokens + COMPLETION_TOKENS}
        call = None
        if kind == "tool":
            call = {"id": "call_" + uuid.uuid4().hex[:20], "type": "function",
                    "function": {"name": value, "arguments": json.dumps(args)}}
        self.server.stats.record({
            "ts": time.time(), "mode": opts.get("mode"), "tag": opts.get("tag"),
            "stream": bool(request.get("stream")),
            "messages": len(request.get("messages") or []),
            "tools_offered": len(request.get("tools") or []),
            "tool_calls_before": tool_calls_so_far(request.get("messages") or []),
            "tool": value if call else None, "call_id": call["id"] if call else None,
            "arguments": args, "usage": usage})
        completion_id = "chatcmpl-" + uuid.uuid4().hex[:12]
        model = request.get("model") or MODEL_ID
        if request.get("stream"):
            return self._stream(completion_id, model, value, call, usage)
        message = {"role": "assistant", "content": None if call else value}
        if call:
            message["tool_calls"] = [call]
        return self._send_json(200, {
            "id": completion_id, "object": "chat.completion", "created": int(time.time()),
            "model": model, "usage": usage,
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if call else "stop"}]})

    def _stream(self, completion_id: str, model: str, text: str, call: dict | None,
                usage: dict) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        created = int(time.time())

        def chunk(delta: dict | None, finish: str | None = None, use: dict | None = None):
            obj = {"id": completion_id, "object": "chat.completion.chunk", "created": created,
                   "model": model, "choices": []}
            if delta is not None:
                obj["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish}]
            if use is not None:
                obj["usage"] = use
            self.wfile.write(b"data: " + json.dumps(obj).encode() + b"\n\n")
            self.wfile.flush()

        try:
            chunk({"role": "assistant", "content": ""})
            if call:
                function = call["function"]
                chunk({"tool_calls": [{"index": 0, "id": call["id"], "type": "function",
                                       "function": {"name": function["name"], "arguments": ""}}]})
                chunk({"tool_calls": [{"index": 0,
                                       "function": {"arguments": function["arguments"]}}]})
                chunk({}, finish="tool_calls")
            else:
                chunk({"content": text})
                chunk({}, finish="stop")
            chunk(None, use=usage)
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass


class FakeModelServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int, delay: float, log_path: str | None):
        super().__init__(("127.0.0.1", port), Handler)
        self.delay = delay
        self.stats = Stats(log_path)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", help="write the bound port here once listening")
    parser.add_argument("--delay", type=float, default=0.1, help="seconds before each reply")
    parser.add_argument("--log", help="append one JSON line per completion request")
    args = parser.parse_args(argv)
    server = FakeModelServer(args.port, args.delay, args.log)
    port = server.server_address[1]
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as fh:
            fh.write(str(port))
        os.replace(tmp, args.port_file)
    print(f"fake model on http://127.0.0.1:{port}/v1", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())

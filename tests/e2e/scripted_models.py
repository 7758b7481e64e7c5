#!/usr/bin/env python3
"""A scripted model endpoint that drives the real Claude Code and Codex CLIs into a tool loop.

One loopback HTTP server (stdlib) speaks both wires the pinned clients use:

  POST /v1/messages          the Anthropic Messages API (Claude Code via ``ANTHROPIC_BASE_URL``),
                             streamed as SSE (message_start, content_block_start/delta/stop,
                             message_delta with usage, message_stop) or as one JSON message
  POST /v1/messages/count_tokens
  POST /v1/responses         the OpenAI Responses API (Codex via a ``[model_providers.*]`` entry
                             with ``wire_api = "responses"``), streamed as SSE (response.created,
                             response.output_item.added/done, response.completed with usage)
  GET  /v1/models            a one-model list in both shapes; GET /healthz; GET /stats

Every turn that offers the client's shell tool (Claude Code's ``Bash``; Codex's ``exec_command``,
``shell_command``, ``shell`` or ``local_shell``) is answered with a short text block and the same
shell call (``--command``, default ``ls /tmp``), so the client runs it forever: the loop clawwatch
has to catch. With ``--then-command C --after N`` the calls after the first N run ``C`` instead
(e.g. a quick loop that ends on a long ``sleep``, so a kill has a live tool process to end).
``--max N`` answers with text once the conversation holds N tool calls (0 = never).
Turns that offer no shell tool (titles, summaries, probes) get a text answer. The server keeps no
per-session state: the count comes from the conversation each request carries.

Usage is deterministic so parsers can check totals: input = request body bytes / 4, output =
``OUTPUT_TOKENS``; Anthropic turns also report ``CACHE_CREATION_TOKENS`` and
``CACHE_READ_TOKENS``; Responses turns report ``cached_tokens`` = ``CACHE_READ_TOKENS``.

Each request (any method and path, answered or not) is appended to ``--log`` as one JSON line,
which is how unexpected start-up calls of a new client version show up.

    scripted_models.py --port 0 --port-file PORTFILE --log requests.jsonl [--command CMD]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL_ID = "scripted-loop-model"
DEFAULT_COMMAND = "ls /tmp"
OUTPUT_TOKENS = 23
CACHE_CREATION_TOKENS = 40
CACHE_READ_TOKENS = 120
LOOP_TEXT = "Let me look again."
TEXT_ANSWER = "Done. (clawwatch scripted model)"
CODEX_SHELL_TOOLS = ("exec_command", "shell_command", "shell", "local_shell")


@dataclass(frozen=True)
class Script:
    """What the model does on each turn, from the number of tool calls made so far."""

    command: str = DEFAULT_COMMAND
    then_command: str | None = None
    after: int = 0
    max_calls: int = 0

    def command_for(self, calls_before: int) -> str | None:
        """The shell command of the next call, or None when the model should answer text."""
        if self.max_calls and calls_before >= self.max_calls:
            return None
        if self.then_command is not None and calls_before >= self.after:
            return self.then_command
        return self.command


# ---------------------------------------------------------------- Anthropic Messages API

def anthropic_tool_calls(messages: list) -> int:
    """``tool_use`` blocks the assistant already made in this conversation."""
    count = 0
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if message.get("role") == "assistant" and isinstance(content, list):
            count += sum(1 for block in content
                         if isinstance(block, dict) and block.get("type") == "tool_use")
    return count


def anthropic_plan(request: dict, script: Script) -> dict | None:
    """The ``tool_use`` block to answer with, or None for a text answer."""
    names = {tool.get("name") for tool in request.get("tools") or [] if isinstance(tool, dict)}
    command = script.command_for(anthropic_tool_calls(request.get("messages") or []))
    if "Bash" not in names or command is None:
        return None
    return {"type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:24], "name": "Bash",
            "input": {"command": command, "description": "List the directory again"}}


def anthropic_usage(raw: bytes) -> dict:
    return {"input_tokens": len(raw) // 4, "output_tokens": OUTPUT_TOKENS,
            "cache_creation_input_tokens": CACHE_CREATION_TOKENS,
            "cache_read_input_tokens": CACHE_READ_TOKENS}


def anthropic_message(model: str, blocks: list[dict], usage: dict) -> dict:
    tool = any(block["type"] == "tool_use" for block in blocks)
    return {"id": "msg_" + uuid.uuid4().hex[:24], "type": "message", "role": "assistant",
            "model": model, "content": blocks, "stop_reason": "tool_use" if tool else "end_turn",
            "stop_sequence": None, "usage": usage}


def anthropic_events(message: dict) -> list[tuple[str, dict]]:
    """The SSE events that stream ``message`` the way the Messages API does."""
    usage = message["usage"]
    start = dict(message, content=[], stop_reason=None,
                 usage=dict(usage, output_tokens=1))
    events = [("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                                   "content_block": {"type": "text", "text": ""}}))
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            events.append(("content_block_start", {
                "type": "content_block_start", "index": index,
                "content_block": {"type": "tool_use", "id": block["id"], "name": block["name"],
                                  "input": {}}}))
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                               "delta": delta}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": message["stop_reason"],
                                               "stop_sequence": None},
                                     "usage": {"output_tokens": usage["output_tokens"]}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


# ----------------------------------------------------------------- OpenAI Responses API

def responses_tool_calls(items: list) -> int:
    """Tool calls the assistant already made in this conversation (Responses ``input``)."""
    kinds = ("function_call", "custom_tool_call", "local_shell_call")
    return sum(1 for item in items if isinstance(item, dict) and item.get("type") in kinds)


def codex_shell_tool(tools: list) -> str | None:
    """The shell tool Codex offered (its name; ``local_shell`` for the built-in type)."""
    offered = set()
    for tool in tools:
        if isinstance(tool, dict):
            offered.add(tool.get("name") or tool.get("type"))
    return next((name for name in CODEX_SHELL_TOOLS if name in offered), None)


def codex_call_arguments(tool: str, command: str) -> dict:
    """Arguments of ``tool`` that run ``command`` (each Codex shell tool has its own shape)."""
    if tool == "exec_command":
        return {"cmd": command}
    if tool == "shell_command":
        return {"command": command}
    return {"command": ["bash", "-lc", command]}


def responses_plan(request: dict, script: Script) -> dict | None:
    """The output item of the tool call to answer with, or None for a text answer."""
    tool = codex_shell_tool(request.get("tools") or [])
    items = request.get("input") if isinstance(request.get("input"), list) else []
    command = script.command_for(responses_tool_calls(items))
    if tool is None or command is None:
        return None
    call_id = "call_" + uuid.uuid4().hex[:24]
    arguments = codex_call_arguments(tool, command)
    if tool == "local_shell":
        return {"type": "local_shell_call", "id": "lsh_" + uuid.uuid4().hex[:24],
                "call_id": call_id, "status": "completed",
                "action": {"type": "exec", "command": arguments["command"]}}
    return {"type": "function_call", "id": "fc_" + uuid.uuid4().hex[:24], "call_id": call_id,
            "name": tool, "arguments": json.dumps(arguments), "status": "completed"}


def responses_usage(raw: bytes) -> dict:
    prompt = len(raw) // 4
    return {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": CACHE_READ_TOKENS},
            "output_tokens": OUTPUT_TOKENS, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt + OUTPUT_TOKENS}


def responses_text_item(text: str) -> dict:
    return {"type": "message", "id": "msg_" + uuid.uuid4().hex[:24], "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def responses_events(model: str, items: list[dict], usage: dict) -> list[tuple[str, dict]]:
    """The SSE events that stream ``items`` the way the Responses API does."""
    response = {"id": "resp_" + uuid.uuid4().hex[:24], "object": "response",
                "created_at": int(time.time()), "model": model, "status": "in_progress",
                "output": []}
    events = [("response.created", {"type": "response.created", "response": response}),
              ("response.in_progress", {"type": "response.in_progress", "response": response})]
    for index, item in enumerate(items):
        events.append(("response.output_item.added", {
            "type": "response.output_item.added", "output_index": index,
            "item": dict(item, status="in_progress")}))
        if item["type"] == "message":
            text = item["content"][0]["text"]
            events.append(("response.output_text.delta", {
                "type": "response.output_text.delta", "item_id": item["id"],
                "output_index": index, "content_index": 0, "delta": text}))
        events.append(("response.output_item.done", {
            "type": "response.output_item.done", "output_index": index, "item": item}))
    done = dict(response, status="completed", output=items, usage=usage)
    events.append(("response.completed", {"type": "response.completed", "response": done}))
    return events


# ------------------------------------------------------------------------------ server

class RequestLog:
    """Counters behind GET /stats, and the JSON-lines request log."""

    def __init__(self, path: str | None):
        self.lock = threading.Lock()
        self.path = path
        self.requests = 0
        self.tool_calls = 0

    def record(self, entry: dict) -> None:
        with self.lock:
            self.requests += 1
            self.tool_calls += bool(entry.get("tool"))
            entry["n"] = self.requests
            if self.path:
                with open(self.path, "a", encoding="utf-8") as handle:
                    handle.write(json.dumps(entry) + "\n")

    def snapshot(self) -> dict:
        with self.lock:
            return {"requests": self.requests, "tool_calls": self.tool_calls}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ScriptedModelServer

    def log_message(self, format, *args):
        pass

    def _log(self, **fields) -> None:
        self.server.log.record({"ts": time.time(), "method": self.command, "path": self.path,
                                "user_agent": self.headers.get("User-Agent"), **fields})

    def _send_json(self, code: int, obj: dict, headers: dict | None = None) -> None:
        body = json.dumps(obj).encode()
        self.send_response(code)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _send_events(self, events: list[tuple[str, dict]], headers: dict | None = None) -> None:
        self.send_response(200)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        try:
            for name, data in events:
                self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass

    def do_GET(self):
        path = self.path.split("?")[0].rstrip("/")
        self._log()
        if path.endswith("/models"):
            model = {"id": MODEL_ID, "object": "model", "type": "model",
                     "display_name": MODEL_ID, "created_at": "2026-01-01T00:00:00Z",
                     "owned_by": "clawwatch-e2e"}
            return self._send_json(200, {"object": "list", "data": [model], "has_more": False,
                                         "first_id": MODEL_ID, "last_id": MODEL_ID})
        if path == "/healthz":
            return self._send_json(200, {"ok": True})
        if path == "/stats":
            return self._send_json(200, self.server.log.snapshot())
        return self._send_json(404, {"error": {"type": "not_found", "message": "not found"}})

    def do_HEAD(self):
        self._log()
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        path = self.path.split("?")[0].rstrip("/")
        try:
            request = json.loads(raw or b"{}")
        except ValueError:
            request = None
        if not isinstance(request, dict):
            self._log(error="bad json")
            return self._send_json(400, {"error": {"type": "invalid_request_error",
                                                   "message": "bad json"}})
        if path.endswith("/messages/count_tokens"):
            self._log()
            return self._send_json(200, {"input_tokens": len(raw) // 4})
        if path.endswith("/messages"):
            return self._anthropic(request, raw)
        if path.endswith("/responses"):
            return self._responses(request, raw)
        self._log(error="unknown path")
        return self._send_json(404, {"error": {"type": "not_found", "message": "not found"}})

    def _pause(self) -> None:
        if self.server.delay > 0:
            time.sleep(self.server.delay)   # pacing of the loop, not synchronisation

    def _anthropic(self, request: dict, raw: bytes) -> None:
        call = anthropic_plan(request, self.server.script)
        blocks = [{"type": "text", "text": LOOP_TEXT if call else TEXT_ANSWER}]
        blocks += [call] if call else []
        usage = anthropic_usage(raw)
        self._log(api="anthropic", model=request.get("model"), stream=bool(request.get("stream")),
                  tools=[tool.get("name") for tool in request.get("tools") or []
                         if isinstance(tool, dict)],
                  calls_before=anthropic_tool_calls(request.get("messages") or []),
                  tool=call["name"] if call else None, call=call, usage=usage)
        self._pause()
        message = anthropic_message(request.get("model") or MODEL_ID, blocks, usage)
        headers = {"request-id": "req_" + uuid.uuid4().hex[:24]}   # Claude Code records it
        if request.get("stream"):
            return self._send_events(anthropic_events(message), headers)
        return self._send_json(200, message, headers)

    def _responses(self, request: dict, raw: bytes) -> None:
        call = responses_plan(request, self.server.script)
        items = [responses_text_item(LOOP_TEXT if call else TEXT_ANSWER)]
        items += [call] if call else []
        usage = responses_usage(raw)
        tools = request.get("tools") or []
        inputs = request.get("input") if isinstance(request.get("input"), list) else []
        self._log(api="responses", model=request.get("model"), stream=bool(request.get("stream")),
                  tools=[tool.get("name") or tool.get("type") for tool in tools
                         if isinstance(tool, dict)],
                  calls_before=responses_tool_calls(inputs),
                  tool=(call.get("name") or call["type"]) if call else None, call=call,
                  usage=usage)
        self._pause()
        model = request.get("model") or MODEL_ID
        if request.get("stream", True):
            return self._send_events(responses_events(model, items, usage))
        return self._send_json(200, {"id": "resp_" + uuid.uuid4().hex[:24], "object": "response",
                                     "status": "completed", "model": model, "output": items,
                                     "usage": usage})


class ScriptedModelServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int, *, script: Script = Script(), delay: float = 0.0,
                 log_path: str | None = None):
        super().__init__(("127.0.0.1", port), Handler)
        self.script = script
        self.delay = delay
        self.log = RequestLog(log_path)


def write_port_file(path: str, port: int) -> None:
    """Publish the bound port atomically (a reader never sees a half-written file)."""
    tmp = path + ".tmp"
    with open(tmp, "w") as handle:
        handle.write(str(port))
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", help="write the bound port here once listening")
    parser.add_argument("--command", default=DEFAULT_COMMAND, help="the shell command to loop on")
    parser.add_argument("--then-command", help="the command of every call after --after calls")
    parser.add_argument("--after", type=int, default=0,
                        help="how many calls run --command before --then-command takes over")
    parser.add_argument("--max", type=int, default=0, dest="max_calls",
                        help="answer with text after this many tool calls (0: never)")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before each reply")
    parser.add_argument("--log", help="append one JSON line per request")
    args = parser.parse_args(argv)
    script = Script(args.command, args.then_command, args.after, args.max_calls)
    server = ScriptedModelServer(args.port, script=script, delay=args.delay, log_path=args.log)
    port = server.server_address[1]
    if args.port_file:
        write_port_file(args.port_file, port)
    print(f"scripted models on http://127.0.0.1:{port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())

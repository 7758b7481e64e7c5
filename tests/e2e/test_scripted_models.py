"""The scripted model endpoint alone (no CLI needed): its plans and both wires, over real HTTP."""

from __future__ import annotations

import json
import threading
import urllib.request

import pytest

from .scripted_models import (
    CACHE_CREATION_TOKENS,
    OUTPUT_TOKENS,
    Script,
    ScriptedModelServer,
    anthropic_plan,
    responses_plan,
)

CLAUDE_TOOLS = [{"name": "Bash"}, {"name": "Read"}]
CODEX_TOOLS = [{"type": "function", "name": "exec_command"}, {"type": "function",
                                                               "name": "write_stdin"}]


def test_script_switches_command_after_n_calls_and_stops_at_max():
    script = Script("ls", then_command="tail -f /dev/null", after=2, max_calls=4)
    assert [script.command_for(n) for n in range(5)] == [
        "ls", "ls", "tail -f /dev/null", "tail -f /dev/null", None]


def test_anthropic_plan_calls_bash_only_when_offered_and_counts_the_conversation():
    script = Script("ls /tmp", max_calls=1)
    call = anthropic_plan({"tools": CLAUDE_TOOLS, "messages": []}, script)
    assert call["name"] == "Bash" and call["input"]["command"] == "ls /tmp"
    assert anthropic_plan({"tools": [{"name": "Read"}], "messages": []}, script) is None
    done = [{"role": "assistant", "content": [call]}]
    assert anthropic_plan({"tools": CLAUDE_TOOLS, "messages": done}, script) is None


@pytest.mark.parametrize(("tools", "name", "arguments"), [
    (CODEX_TOOLS, "exec_command", {"cmd": "ls"}),
    ([{"type": "function", "name": "shell_command"}], "shell_command", {"command": "ls"}),
    ([{"type": "function", "name": "shell"}], "shell", {"command": ["bash", "-lc", "ls"]}),
])
def test_responses_plan_uses_the_shell_tool_codex_offers(tools, name, arguments):
    call = responses_plan({"tools": tools, "input": []}, Script("ls"))
    assert call["type"] == "function_call" and call["name"] == name
    assert json.loads(call["arguments"]) == arguments
    assert responses_plan({"tools": [{"type": "web_search"}], "input": []}, Script("ls")) is None


def sse_events(body: bytes) -> list[tuple[str, dict]]:
    events = []
    for block in body.decode().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "event" in lines:
            events.append((lines["event"], json.loads(lines["data"])))
    return events


@pytest.fixture
def server(tmp_path):
    server = ScriptedModelServer(0, script=Script("ls /tmp"), log_path=str(tmp_path / "log"))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def post(url: str, body: dict) -> tuple[dict, bytes]:
    request = urllib.request.Request(url, json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return dict(response.headers), response.read()


def test_messages_stream_is_a_complete_anthropic_sse_turn(server):
    headers, body = post(f"{server}/v1/messages?beta=true",
                         {"model": "m", "stream": True, "tools": CLAUDE_TOOLS,
                          "messages": [{"role": "user", "content": "go"}]})
    assert headers["request-id"].startswith("req_")
    names = [name for name, _ in sse_events(body)]
    assert names == ["message_start", "content_block_start", "content_block_delta",
                     "content_block_stop", "content_block_start", "content_block_delta",
                     "content_block_stop", "message_delta", "message_stop"]
    events = sse_events(body)
    start = events[0][1]["message"]["usage"]
    assert start["cache_creation_input_tokens"] == CACHE_CREATION_TOKENS
    tool = events[4][1]["content_block"]
    assert tool["type"] == "tool_use" and tool["name"] == "Bash"
    assert json.loads(events[5][1]["delta"]["partial_json"])["command"] == "ls /tmp"
    assert events[7][1]["delta"]["stop_reason"] == "tool_use"
    assert events[7][1]["usage"]["output_tokens"] == OUTPUT_TOKENS


def test_responses_stream_ends_with_completed_and_usage(server):
    _, body = post(f"{server}/v1/responses",
                   {"model": "m", "stream": True, "tools": CODEX_TOOLS, "input": []})
    events = sse_events(body)
    assert events[0][0] == "response.created" and events[-1][0] == "response.completed"
    done = [data["item"] for name, data in events if name == "response.output_item.done"]
    assert [item["type"] for item in done] == ["message", "function_call"]
    assert json.loads(done[1]["arguments"]) == {"cmd": "ls /tmp"}
    usage = events[-1][1]["response"]["usage"]
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]

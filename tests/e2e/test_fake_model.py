"""The scripted fake model alone (no OpenClaw needed): per-conversation scripts and the wire."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request

import pytest

from . import fake_model
from .fake_model import (
    COMPLETION_TOKENS,
    PROGRESS_STEPS,
    ROTATION,
    encode_command,
    plan,
)

TOOLS = [{"type": "function", "function": {"name": name}} for name in ("exec", "read", "process")]


def conversation(marker: str, steps: int) -> list[dict]:
    """Drive ``plan`` for ``steps`` turns, feeding each tool call back as a tool result."""
    messages = [{"role": "system", "content": "you are an agent"},
                {"role": "user", "content": [{"type": "text", "text": f"[Sun 12:00] {marker}"}]}]
    replies = []
    for _ in range(steps):
        kind, value, args, _opts = plan({"messages": messages, "tools": TOOLS})
        replies.append((kind, value, args))
        if kind == "text":
            break
        messages.append({"role": "assistant", "content": None,
                         "tool_calls": [{"id": f"c{len(replies)}", "type": "function",
                                         "function": {"name": value,
                                                      "arguments": json.dumps(args)}}]})
        messages.append({"role": "tool", "content": "Command still running (session calm-fox, "
                                                    "pid 42). Use process to poll."})
    return replies


def test_hammer_repeats_one_command_and_max_ends_with_text():
    replies = conversation("clawwatch-e2e mode=hammer max=5", 10)
    assert [r[0] for r in replies] == ["tool"] * 5 + ["text"]
    assert len({json.dumps(r[2]) for r in replies[:5]}) == 1


def test_rotation_repeats_each_call_only_every_fourth_time():
    commands = [r[2]["command"] for r in conversation("clawwatch-e2e mode=rotation", 12)]
    assert commands == list(ROTATION) * 3
    assert all(commands[i] != commands[i + j] for i in range(8) for j in (1, 2, 3))


def test_progress_makes_distinct_steps_then_answers():
    replies = conversation("clawwatch-e2e mode=progress", 20)
    assert [r[2]["command"] for r in replies[:-1]] == [
        f"echo step-{n}" for n in range(1, PROGRESS_STEPS + 1)]
    assert replies[-1][0] == "text"


def test_poll_starts_a_background_command_then_polls_its_session():
    replies = conversation("clawwatch-e2e mode=poll", 3)
    assert replies[0][2] == {"command": "sleep 300", "background": True}
    assert replies[1][1:] == ("process", {"action": "poll", "sessionId": "calm-fox"})


@pytest.mark.parametrize(("marker", "expected"), [
    ("clawwatch-e2e mode=pingpong", [("read", {"path": "/etc/hostname"}), ("exec", None)] * 2),
    ("clawwatch-e2e mode=drift", [("exec", {"command": "date +%s%N; ls /nonexistent"})] * 4),
    ("clawwatch-e2e mode=unknown-tool", [("frobnicate_widget", {"target": "widget-1"})] * 4),
    (f"clawwatch-e2e mode=sleepy cmd={encode_command('sleep 7; echo x')}",
     [("exec", {"command": "sleep 7; echo x"})] * 4),
])
def test_modes_choose_the_scripted_tools(marker, expected):
    replies = conversation(marker, 4)
    assert [r[1] for r in replies] == [name for name, _ in expected]
    assert all(args is None or r[2] == args for r, (_, args) in zip(replies, expected, strict=True))


def test_text_without_tools_marker_or_in_normal_mode():
    user = [{"role": "user", "content": "clawwatch-e2e mode=hammer"}]
    assert plan({"messages": user})[0] == "text"
    assert plan({"messages": [{"role": "user", "content": "hi"}], "tools": TOOLS})[0] == "text"
    normal = [{"role": "user", "content": "clawwatch-e2e mode=normal"}]
    assert plan({"messages": normal, "tools": TOOLS})[0] == "text"


def test_marker_is_read_from_the_first_user_message_only():
    messages = [{"role": "user", "content": "clawwatch-e2e mode=progress"},
                {"role": "user", "content": "clawwatch-e2e mode=hammer"}]
    assert plan({"messages": messages, "tools": TOOLS})[2] == {"command": "echo step-1"}


@pytest.fixture
def model_server(tmp_path):
    port_file = tmp_path / "port"
    proc = subprocess.Popen([sys.executable, fake_model.__file__, "--port-file", str(port_file),
                             "--delay", "0", "--log", str(tmp_path / "log.jsonl")],
                            stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while not port_file.exists():
            assert proc.poll() is None and time.monotonic() < deadline, "fake model did not start"
            time.sleep(0.02)
        yield f"http://127.0.0.1:{port_file.read_text()}", tmp_path / "log.jsonl"
    finally:
        proc.terminate()
        proc.wait(5)


def post(url: str, body: dict) -> bytes:
    request = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.read()


def test_streaming_reply_carries_the_tool_call_and_a_final_usage_chunk(model_server):
    url, log = model_server
    body = {"messages": [{"role": "user", "content": "clawwatch-e2e mode=hammer tag=t1"}],
            "tools": TOOLS, "stream": True}
    raw = post(url, body)
    events = [line[6:] for line in raw.decode().splitlines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    call_id = chunks[1]["choices"][0]["delta"]["tool_calls"][0]["id"]
    usage = chunks[-1]["usage"]
    assert chunks[-1]["choices"] == []
    assert usage == {"prompt_tokens": len(json.dumps(body)) // 4,
                     "completion_tokens": COMPLETION_TOKENS,
                     "total_tokens": len(json.dumps(body)) // 4 + COMPLETION_TOKENS}
    logged = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["tag"], r["tool"], r["call_id"]) for r in logged] == [("t1", "exec", call_id)]


def test_plain_reply_and_stats(model_server):
    url, _log = model_server
    reply = json.loads(post(url, {"messages": [{"role": "user", "content": "hello"}]}))
    assert reply["choices"][0]["message"]["content"].startswith("Done.")
    assert reply["choices"][0]["finish_reason"] == "stop"
    with urllib.request.urlopen(url + "/stats", timeout=10) as response:
        assert json.load(response) == {"requests": 1, "tool_calls": 0, "by_mode": {"-": 1}}

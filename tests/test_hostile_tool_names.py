"""A transcript that names a new tool on every call: a session counts its first
``TOOL_NAMES_KEPT`` names one by one and the calls of the rest together, so neither memory
nor the replay document grows with the names (100,000 crafted names made a 51 MB document)."""

from __future__ import annotations

import json
from pathlib import Path

from test_hostile_cli import clawwatch

from monitor.events import OTHER_TOOLS, TOOL_NAMES_KEPT, CountedHistory
from monitor.sources.transcript_light import CountedSum

CALLS = TOOL_NAMES_KEPT + 300


def write_state(root: Path) -> Path:
    sessions = root / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / "sessions.json").write_text(json.dumps(
        {"agent:main:main": {"sessionId": "s1", "updatedAt": 1_764_900_000_000}}))
    lines = []
    for n in range(CALLS):
        name = "exec" if n % 2 else f"tool_{n}"
        lines.append({"type": "message", "timestamp": "2026-12-01T00:00:01Z", "message": {
            "role": "assistant", "usage": {"input": 1, "output": 1, "totalTokens": 2},
            "content": [{"type": "toolCall", "id": f"c{n}", "name": name,
                         "arguments": {"n": n}}]}})
    (sessions / "s1.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return root


def test_replay_counts_the_first_names_one_by_one_and_the_rest_together(tmp_path):
    state = write_state(tmp_path / "state")
    done = clawwatch("replay", "--state-dir", str(state), "--json", home=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    (session,) = json.loads(done.stdout)["sessions"]
    tools = session["tools"]
    assert session["tool_calls"] == CALLS == sum(tools.values())
    assert len(tools) == TOOL_NAMES_KEPT + 1
    assert tools["exec"] == CALLS // 2            # a name already counted keeps counting
    assert tools["tool_0"] == 1 and f"tool_{2 * (TOOL_NAMES_KEPT - 2)}" in tools
    assert f"tool_{2 * (TOOL_NAMES_KEPT - 1)}" not in tools
    assert tools[OTHER_TOOLS] == CALLS // 2 - (TOOL_NAMES_KEPT - 1)


def test_a_history_reader_sums_the_same_bounded_counts():
    summed = CountedSum("s1")
    for n in range(CALLS):
        summed.add_event("s1.jsonl@0", 1.0, None, 2)
        summed.add_reply(["exec" if n % 2 else f"tool_{n}"], None, None, False)
    flushed: list[CountedHistory] = []
    summed.flush_to(flushed)
    (counted,) = flushed
    assert len(counted.tools) == TOOL_NAMES_KEPT + 1
    assert sum(counted.tools.values()) == counted.tool_calls == CALLS
    assert counted.tools[OTHER_TOOLS] == CALLS // 2 - (TOOL_NAMES_KEPT - 1)

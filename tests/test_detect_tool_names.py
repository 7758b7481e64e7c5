"""Tool names as OpenClaw 2026.9.6's loop detection keys them, and as findings show them.

OpenClaw's loop admission (``evaluateToolLoopCall``/``recordToolLoopCall`` in
``dist/agent-tools.before-tool-call-*.mjs``) keys a call by
``normalizeToolPolicyName(toolName || "tool")`` of ``dist/tool-policy-shared-*.mjs``: trimmed,
lowercased, an alias made its tool, any text a name. ``NAMES`` and the expected findings below
are what that code gave under Node (the package's own functions, fed the same calls the way
``admitSingleToolCallLoop`` and ``recordLoopOutcome`` feed them). Findings name the tool as it
was called, made visible and redacted by each output like any other text.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_detect_support import Script, exec_details
from test_hostile_cli import assert_clean, clawwatch

from monitor.detect.outcomes import unknown_tool_name
from monitor.detect.tool_call_hashing import normalize_tool_name
from monitor.display import printable

NAMES = [
    (None, "tool"), ("", "tool"), ("  ", ""), (" Exec ", "exec"), ("Bash", "exec"),
    ("BASH", "exec"), ("bash\t", "exec"), ("Apply-Patch", "apply_patch"),
    ("apply_patch", "apply_patch"), ("cron", "automations"), ("CRON", "automations"),
    ("Tool 0", "tool 0"), ("exec\ud800", "exec\ud800"), ("read\u202eevil", "read\u202eevil"),
    ("web fetch", "web fetch"), ("mcp:search", "mcp:search"), ("\ufeffexec\xa0", "exec"),
    ("\x1cexec", "\x1cexec"), ("\u0391\u03a3", "\u03b1\u03c2"),
    ("\u0391\u03a3.\u0392", "\u03b1\u03c3.\u03b2"), ("\u0130", "i\u0307"),
    ("\U00010d50", "\U00010d70"), ("\u1c89", "\u1c8a"), ("X" * 130, "x" * 130),
]
PARITY = {"generic_repeat", "known_poll_no_progress", "ping_pong", "unknown_tool_repeat",
          "global_circuit_breaker", "argument_churn"}
HOSTILE_NAME = "exec\ud800\x1b[31m\u202e"


@pytest.mark.parametrize(("name", "key"), NAMES, ids=[ascii(n)[:24] for n, _ in NAMES])
def test_a_call_is_keyed_by_the_name_openclaws_loop_detection_uses(name, key):
    assert normalize_tool_name(name) == key


def write_session(root: Path, calls: list[tuple[str, dict, dict | None]]) -> Path:
    """A legacy state dir holding one session of ``calls``: (name, arguments, result
    details), each answered by the text ``same``."""
    sessions = root / "state" / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    lines = [{"type": "session", "version": 3, "id": "s1", "timestamp": "2026-12-01T00:00:00Z",
              "cwd": "/tmp"}]
    for n, (name, arguments, details) in enumerate(calls):
        at = f"2026-12-01T00:{n // 60:02d}:{n % 60:02d}Z"
        lines.append({"type": "message", "id": f"a{n}", "timestamp": at, "message": {
            "role": "assistant", "stopReason": "toolUse", "model": "m",
            "usage": {"input": 1, "output": 1, "totalTokens": 2},
            "content": [{"type": "toolCall", "id": f"c{n}", "name": name,
                         "arguments": arguments}]}})
        result = {"role": "toolResult", "toolCallId": f"c{n}", "toolName": name,
                  "isError": False, "content": [{"type": "text", "text": "same"}]}
        if details is not None:
            result["details"] = details
        lines.append({"type": "message", "id": f"r{n}", "timestamp": at, "message": result})
    (sessions / "s1.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    (sessions / "sessions.json").write_text(json.dumps(
        {"agent:main:main": {"sessionId": "s1", "updatedAt": 1_764_547_200_000}}))
    return root / "state"


def replayed(tmp_path: Path, calls: list[tuple[str, dict, dict | None]]
             ) -> tuple[str, list[dict]]:
    """``replay --json`` of a session of ``calls``: its text and the session's findings."""
    done = clawwatch("replay", "--json", "--no-cache", "--state-dir",
                     str(write_session(tmp_path, calls)), home=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    (session,) = json.loads(done.stdout)["sessions"]
    return done.stdout, session["findings"]


def parity(findings: list[dict]) -> list[tuple[str, str, int, int, str]]:
    return [(f["detector"], f["level"], f["count"], f["at_call"], f["tool"])
            for f in findings if f["detector"] in PARITY]


def test_distinct_odd_names_in_turn_are_distinct_tools(tmp_path):
    """Five tools taking turns with equal arguments: OpenClaw sees no loop."""
    names = ["Tool 0", "web fetch", "caf\xe9", "exec\ud800", "Y" * 130]
    _, findings = replayed(tmp_path, [(names[n % 5], {"q": 1}, None) for n in range(25)])
    assert parity(findings) == []


def test_bash_and_exec_in_turn_are_one_tool_repeated(tmp_path):
    """``bash`` is an alias of ``exec``: alternating them repeats one call, not a
    ping-pong. OpenClaw warns at its 11th call and blocks its 21st; each finding names the
    tool as that call was made."""
    calls = [("exec" if n % 2 else "bash", {"command": "ls"}, exec_details("same"))
             for n in range(21)]
    _, findings = replayed(tmp_path, calls)
    assert parity(findings) == [("generic_repeat", "warning", 10, 11, "bash"),
                                ("generic_repeat", "critical", 20, 21, "bash")]
    messages = [f["message"] for f in findings if f["detector"] in PARITY]
    assert messages[0].startswith("WARNING: You have called bash 10 times ")
    assert messages[1].startswith("CRITICAL: Called bash with identical outcomes 20 times.")


def test_a_hostile_tool_name_is_named_as_called(tmp_path):
    """A lone surrogate, an escape sequence and a bidi override: the finding carries the
    name (JSON escapes it), and a text output shows it visibly, never ``undefined``."""
    text, findings = replayed(tmp_path, [(HOSTILE_NAME, {"command": "ls"}, None)] * 11)
    (finding,) = [f for f in findings if f["detector"] in PARITY]
    assert (finding["detector"], finding["count"], finding["tool"]) == (
        "generic_repeat", 10, HOSTILE_NAME)
    assert f"called {HOSTILE_NAME} 10 times" in finding["message"]
    assert "undefined" not in text
    assert "\\ud800\\u001b[31m\\u202e" in text
    assert_clean(text)

    watched = clawwatch("watch", "--headless", "--from-start", "--no-checkpoint",
                        "--seconds", "2", "--poll", "0.2", "--state-dir",
                        str(tmp_path / "state"), home=tmp_path)
    assert watched.returncode == 0, watched.stderr[-2000:]
    assert_clean(watched.stdout + watched.stderr)
    (line,) = [line for line in watched.stdout.splitlines() if "generic_repeat" in line]
    assert f"called {printable(HOSTILE_NAME)} 10 times" in line
    assert "undefined" not in watched.stdout


def test_the_dashboard_names_the_tools_as_called():
    """The streaks and ping-pong panes name the calls as made, as findings do."""
    script = Script()
    for n in range(4):
        script.step("Read" if n % 2 else "Bash", {"n": n % 2}, text="same")
    (pair,) = script.engine.pingpong_pairs(script.session_id)
    assert (pair.tool_a, pair.tool_b) == ("Read", "Bash")
    streaks = {s.detector: s.tool for s in script.engine.streaks(script.session_id)}
    assert streaks["generic_repeat"] == "Read"
    assert streaks["ping_pong"] == "Read/Bash"


# The tool an error names, as OpenClaw 2026.9.6's ``extractUnknownToolName`` (``/i`` regexes
# without ``u``: ASCII case folding, JavaScript's ``\s``) read it under Node.
UNKNOWN_TOOL_ERRORS = {
    "unknown tool: \u017fearch": None,
    "Unknown tool: \u212aill": None,
    "unknown tool:\x1cfoo": None,
    "unknown tool:\x85foo": None,
    "unknown tool:\ufefffoo": "foo",
    "tool \u0130nfo not found": None,
    "UNKNOWN TOOL: Foo": "foo",
    "unknown tool: a\u017fb": "a",
    "tool foo\u2028not found": "foo",
    "tool 'Web.Search' is not available": "web.search",
}


def test_an_unknown_tool_is_named_as_openclaw_names_it():
    """A letter Python folds and JavaScript does not (``ſ``, the Kelvin sign, ``İ``) or a
    character one of them calls whitespace does not name a tool OpenClaw would not name:
    ten such errors would raise an ``unknown_tool_repeat`` critical OpenClaw never raised."""
    named = {error: unknown_tool_name(error) for error in UNKNOWN_TOOL_ERRORS}
    assert named == UNKNOWN_TOOL_ERRORS


def test_errors_naming_a_tool_only_by_python_folding_raise_no_critical(tmp_path):
    script = Script()
    for _ in range(12):
        script.step("web_fetch", {"url": "https://example.test"}, None,
                    "Unknown tool: \u212aill", is_error=True)
    assert not [f for f in script.findings if f.detector == "unknown_tool_repeat"]

#!/usr/bin/env python3
"""Held-out check of the Claude Code and Codex parsers on transcripts the real clients write.

Today's fixtures loop on one shell tool. This script drives each pinned client (installed by
``tests/e2e/install_cli_agents.sh``) through a VARIETY of tools against a scripted model
(a small subclass of ``tests/e2e/scripted_models.Handler``, served in-process), in a temp dir:

* Claude Code: Read (a file of the project), Write (a new file), Edit (that file), Grep, Glob,
  Bash (a failing command, then a succeeding one), TodoWrite, then a text answer;
* Codex: exec_command (a failing command, then a succeeding one), apply_patch (create a file,
  then edit it), then a text answer.

It then replays the transcripts with ``python -m monitor replay --json`` (HOME,
CLAUDE_CONFIG_DIR and CODEX_HOME pointed at the temp dirs) and checks, per session: the
session id is the transcript's; ``tool_calls`` and the per-tool counts equal the calls the
client made (counted here from the raw file with plain json); the tokens equal ccusage's for
the same files; the replay reports no source error. Besides, it checks that the client
really ran the plan (the raw calls, each with a result, the exit codes, the files written) and
that the parsers' own ToolResults (read in-process) match the raw results. It prints a
table, PASS/FAIL per check, and exits 1 on any FAIL (2 when a client or ccusage is not
installed). Nothing is written in the repository; one client runs at a time.

    .venv/bin/python bench/heldout_cli_transcripts.py [--keep DIR] [--source claude-code|codex]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from monitor.events import ToolResult  # noqa: E402
from monitor.sources.claude_code import ClaudeCodeSource  # noqa: E402
from monitor.sources.codex import CodexSource  # noqa: E402
from monitor.sources.tail_state import complete_files  # noqa: E402
from tests.e2e import scripted_models as sm  # noqa: E402
from tests.e2e.cli_agents_lab import (  # noqa: E402
    MODEL_ID,
    RealClient,
    client_binary,
    missing_install,
)

CCUSAGE_VERSION = "20.0.24"
CCUSAGE = (Path.home() / ".cache/clawwatch" / f"ccusage-{CCUSAGE_VERSION}"
           / "node_modules/.bin/ccusage")
PROMPT = "Tour the project: read, write, edit, search, run and plan."
CLAUDE_TOOLS = ("Read", "Write", "Edit", "Grep", "Glob", "Bash", "TodoWrite")
RUN_TIMEOUT = 240.0
FAILING = "ls /nonexistent-clawwatch-heldout"
SUCCEEDING = "echo heldout-ok"
CODEX_MODEL = "gpt-5.5"        # in codex 0.171.0's bundled catalog, apply_patch_tool_type freeform


# ------------------------------------------------------------------------ the script

def claude_steps(project: Path) -> list[tuple[str, dict]]:
    """(tool, input) of each Claude Code turn, in order; the turn after the last answers."""
    new = str(project / "created.txt")
    return [
        ("Read", {"file_path": str(project / "notes.txt")}),
        ("Write", {"file_path": new, "content": "alpha line\nbeta line\n"}),
        ("Edit", {"file_path": new, "old_string": "beta line", "new_string": "gamma line"}),
        ("Grep", {"pattern": "gamma", "path": str(project), "output_mode": "content"}),
        ("Glob", {"pattern": "*.txt", "path": str(project)}),
        ("Bash", {"command": FAILING, "description": "List a missing directory"}),
        ("Bash", {"command": SUCCEEDING, "description": "Print a word"}),
        ("TodoWrite", {"todos": [
            {"content": "Check the tour", "status": "completed",
             "activeForm": "Checking the tour"},
            {"content": "Report back", "status": "in_progress",
             "activeForm": "Reporting back"}]}),
    ]


ADD_PATCH = "*** Begin Patch\n*** Add File: patched.txt\n+one\n+two\n*** End Patch\n"
EDIT_PATCH = ("*** Begin Patch\n*** Update File: patched.txt\n@@\n one\n-two\n+three\n"
              "*** End Patch\n")


def codex_steps() -> list[tuple[str, object]]:
    """(tool, arguments) of each Codex turn; ``apply_patch`` takes the patch text."""
    return [("exec_command", {"cmd": FAILING}), ("exec_command", {"cmd": SUCCEEDING}),
            ("apply_patch", ADD_PATCH), ("apply_patch", EDIT_PATCH)]


def offered(tools: list) -> dict[str, dict]:
    return {(tool.get("name") or tool.get("type")): tool for tool in tools
            if isinstance(tool, dict)}


class TourHandler(sm.Handler):
    """scripted_models' handler, answering each tool turn with the next step of a tour."""

    server: TourServer

    def _anthropic(self, request: dict, raw: bytes) -> None:
        tools = offered(request.get("tools") or [])
        done = sm.anthropic_tool_calls(request.get("messages") or [])
        steps = self.server.claude_steps
        call = None
        if "Bash" in tools and done < len(steps):      # a main-loop turn, not a title/probe
            name, tool_input = steps[done]
            call = {"type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:24], "name": name,
                    "input": tool_input}
        blocks = [{"type": "text", "text": sm.LOOP_TEXT if call else sm.TEXT_ANSWER}]
        blocks += [call] if call else []
        usage = sm.anthropic_usage(raw)
        self._log(api="anthropic", model=request.get("model"), tools=sorted(tools),
                  calls_before=done, tool=call["name"] if call else None, call=call,
                  usage=usage)
        message = sm.anthropic_message(request.get("model") or MODEL_ID, blocks, usage)
        headers = {"request-id": "req_" + uuid.uuid4().hex[:24]}
        if request.get("stream"):
            return self._send_events(sm.anthropic_events(message), headers)
        return self._send_json(200, message, headers)

    def _responses(self, request: dict, raw: bytes) -> None:
        tools = offered(request.get("tools") or [])
        items_in = request.get("input") if isinstance(request.get("input"), list) else []
        done = sm.responses_tool_calls(items_in)
        steps = self.server.codex_steps
        call = None
        if "exec_command" in tools and done < len(steps):
            call = self._codex_call(tools, *steps[done])
        items = [sm.responses_text_item(sm.LOOP_TEXT if call else sm.TEXT_ANSWER)]
        items += [call] if call else []
        usage = sm.responses_usage(raw)
        self._log(api="responses", model=request.get("model"),
                  tools={name: tool.get("type") for name, tool in tools.items()},
                  calls_before=done, tool=call.get("name") if call else None, call=call,
                  usage=usage)
        model = request.get("model") or MODEL_ID
        return self._send_events(sm.responses_events(model, items, usage))

    @staticmethod
    def _codex_call(tools: dict, name: str, arguments: object) -> dict:
        call_id = "call_" + uuid.uuid4().hex[:24]
        if name == "apply_patch" and tools.get("apply_patch", {}).get("type") == "custom":
            return {"type": "custom_tool_call", "id": "ctc_" + uuid.uuid4().hex[:24],
                    "call_id": call_id, "name": name, "input": arguments,
                    "status": "completed"}
        if name == "apply_patch" and "apply_patch" in tools:       # the JSON function form
            arguments = {"input": arguments}
        elif name == "apply_patch":                  # not offered: through the shell tool
            name, arguments = "exec_command", {"cmd": f"apply_patch <<'EOF'\n{arguments}EOF"}
        return {"type": "function_call", "id": "fc_" + uuid.uuid4().hex[:24],
                "call_id": call_id, "name": name, "arguments": json.dumps(arguments),
                "status": "completed"}


class TourServer(sm.ScriptedModelServer):
    def __init__(self, log_path: str, project: Path) -> None:
        super().__init__(0, log_path=log_path)
        self.RequestHandlerClass = TourHandler
        self.claude_steps = claude_steps(project)
        self.codex_steps = codex_steps()


class TourModel:
    """A ``TourServer`` in a thread, for ``with`` (what ``RealClient`` needs: ``port``)."""

    def __init__(self, lab: Path, project: Path) -> None:
        self.log = lab / "model-requests.jsonl"
        self.server = TourServer(str(self.log), project)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> TourModel:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def requests(self) -> list[dict]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line]


class TourClient(RealClient):
    def environment(self) -> dict[str, str]:
        env = super().environment()
        if self.source == "codex":
            # Codex offers apply_patch as its own (freeform) tool only to models its bundled
            # catalog says take one; the scripted endpoint answers whatever model is named.
            config = self.config / "config.toml"
            config.write_text(config.read_text().replace(f'model = "{MODEL_ID}"',
                                                         f'model = "{CODEX_MODEL}"', 1))
            return env
        # Claude Code 2.1.332 enables TodoWrite only with its Task* tools off (and for some
        # named models, or with CLAUDE_CODE_ENABLE_TODO_TOOLS).
        return {**env, "CLAUDE_CODE_ENABLE_TASKS": "false", "CLAUDE_CODE_ENABLE_TODO_TOOLS": "1"}

    def argv(self) -> list[str]:
        if self.source == "claude-code":
            return [str(client_binary(self.source)), "-p", PROMPT, "--allowedTools",
                    ",".join(CLAUDE_TOOLS), "--model", MODEL_ID]
        return super().argv()


def run_client(source: str, work: Path) -> tuple[TourClient, list[dict]]:
    """Run ``source`` through its tour to the end; its lab client and the model's log."""
    lab = work / source
    lab.mkdir()
    project = lab / "project"
    with TourModel(lab, project) as model:
        client = TourClient(source, lab, model)
        try:
            client.start()
            try:
                client.proc.wait(RUN_TIMEOUT)
            except subprocess.TimeoutExpired:
                print(f"{source}: still running after {RUN_TIMEOUT:.0f} s; ended",
                      file=sys.stderr)
        finally:
            client.close()
        return client, model.requests()


# --------------------------------------------------------------- the raw transcripts

def raw_claude(path: Path) -> dict:
    """Calls and results of a Claude Code transcript, read with plain json."""
    calls: dict[str, str] = {}
    results: dict[str, bool] = {}
    codes: dict[str, int] = {}
    session_ids = set()
    for line in path.read_text().splitlines():
        entry = json.loads(line)
        if isinstance(entry.get("sessionId"), str):
            session_ids.add(entry["sessionId"])
        message = entry.get("message") if isinstance(entry.get("message"), dict) else {}
        content = message.get("content") if isinstance(message.get("content"), list) else []
        for block in content:
            if not isinstance(block, dict):
                continue
            if entry.get("type") == "assistant" and block.get("type") == "tool_use":
                calls.setdefault(block["id"], block["name"])
            if entry.get("type") == "user" and block.get("type") == "tool_result":
                results[block["tool_use_id"]] = block.get("is_error") is True
                text = block.get("content") if isinstance(block.get("content"), str) else ""
                if text.startswith("Exit code ") and block.get("is_error") is True:
                    codes[block["tool_use_id"]] = int(text.split()[2])
                elif calls.get(block["tool_use_id"]) == "Bash" \
                        and block.get("is_error") is not True:
                    # a failed result with no ``Exit code N`` line (Claude Code before 2.0
                    # wrote them so) states no code: unknown, not 0
                    codes[block["tool_use_id"]] = 0
    return {"id": path.stem, "ids_in_lines": session_ids, "calls": calls, "results": results,
            "codes": codes}


def raw_codex(path: Path) -> dict:
    calls: dict[str, str] = {}
    results: dict[str, str] = {}
    codes: dict[str, int] = {}
    meta_ids = []
    for line in path.read_text().splitlines():
        entry = json.loads(line)
        payload = entry.get("payload") if isinstance(entry.get("payload"), dict) else {}
        if entry.get("type") == "session_meta":
            meta_ids.append(payload.get("id"))
        if entry.get("type") != "response_item":
            continue
        kind = payload.get("type")
        if kind in ("function_call", "custom_tool_call"):
            calls.setdefault(payload["call_id"],
                             (payload.get("namespace") or "") + payload["name"])
        elif kind in ("local_shell_call", "web_search_call"):
            calls.setdefault(payload.get("call_id") or payload.get("id"),
                             kind.removesuffix("_call"))
        elif kind in ("function_call_output", "custom_tool_call_output"):
            output = payload.get("output")
            text = output if isinstance(output, str) else json.dumps(output)
            results[payload["call_id"]] = text
            for marker in ("Process exited with code ", "Exit code: "):
                if marker in text:
                    codes[payload["call_id"]] = int(text.split(marker)[1].split()[0])
                    break
    return {"id": meta_ids[0] if meta_ids else None, "ids_in_lines": set(meta_ids),
            "calls": calls, "results": results, "codes": codes}


# -------------------------------------------------------------------------- checking

class Table:
    def __init__(self) -> None:
        self.rows: list[tuple[str, str, str, str, bool]] = []

    def check(self, source: str, name: str, expected, got) -> bool:
        ok = expected == got
        self.rows.append((source, name, _show(expected), _show(got), ok))
        return ok

    def fail(self, source: str, name: str, why: str) -> None:
        self.rows.append((source, name, "-", why, False))

    def print(self) -> None:
        head = ("source", "check", "expected", "got", "result")
        rows = [head] + [(s, n, e, g, "PASS" if ok else "FAIL") for s, n, e, g, ok in self.rows]
        widths = [min(60, max(len(row[i]) for row in rows)) for i in range(4)]
        for row in rows:
            cells = [_clip(row[i], widths[i]).ljust(widths[i]) for i in range(4)]
            print("  ".join([*cells, row[4]]))

    @property
    def failed(self) -> int:
        return sum(not ok for *_, ok in self.rows)


def _show(value) -> str:
    if isinstance(value, (dict, Counter)):
        return ", ".join(f"{k}={v}" for k, v in sorted(dict(value).items()))
    if isinstance(value, (list, tuple)):
        return " ".join(map(str, value))
    return repr(value) if isinstance(value, str) and "\n" in value else str(value)


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def ccusage(kind: str, home: Path, env: dict) -> dict:
    done = subprocess.run([str(CCUSAGE), kind, "session", "--json", "--offline"],
                          capture_output=True, timeout=120,
                          env={"PATH": os.environ.get("PATH", ""), "NO_COLOR": "1", "TZ": "UTC",
                               "HOME": str(home), **env})
    if done.returncode != 0:
        raise RuntimeError(f"ccusage {kind}: {done.stderr.decode(errors='replace')[-500:]}")
    return json.loads(done.stdout)


def replay(home: Path, claude: TourClient | None, codex: TourClient | None) -> dict:
    env = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache"),
           "XDG_STATE_HOME": str(home / ".state"), "XDG_CONFIG_HOME": str(home / ".config")}
    argv = [sys.executable, "-m", "monitor", "replay", "--json", "--jobs", "1", "--no-cache"]
    sources = []
    if claude is not None:
        env["CLAUDE_CONFIG_DIR"] = str(claude.config)
        argv += ["--claude-dir", str(claude.config / "projects")]
        sources.append("claude-code")
    if codex is not None:
        env["CODEX_HOME"] = str(codex.config)
        argv += ["--codex-dir", str(codex.config / "sessions")]
        sources.append("codex")
    argv += ["--source", ",".join(sources)]
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"replay exited {done.returncode}: "
                           f"{done.stderr.decode(errors='replace')[-1000:]}")
    return json.loads(done.stdout)


def check_claude(table: Table, client: TourClient, requests: list[dict], report: dict,
                 home: Path) -> None:
    source = "claude-code"
    files = sorted((client.config / "projects").glob("*/*.jsonl"))
    if not table.check(source, "one transcript written", 1, len(files)):
        return
    raw = raw_claude(files[0])
    planned = [name for name, _ in claude_steps(client.project)]
    offered_tools = next((r["tools"] for r in requests if r.get("tool")), [])
    # a tool not in the list may be deferred (TodoWrite is): it is there if it then ran
    table.check(source, "planned tools available", [], [
        name for cid, name in raw["calls"].items()
        if name not in offered_tools and raw["results"].get(cid) is not False])
    table.check(source, "exit codes in raw results", {"Bash": [2, 0]},
                {"Bash": list(raw["codes"].values())})
    table.check(source, "client ran the plan (raw tool_use)", planned,
                list(raw["calls"].values()))
    table.check(source, "every call has a result", sorted(raw["calls"]),
                sorted(raw["results"]))
    errors = [raw["calls"][cid] for cid, failed in raw["results"].items() if failed]
    table.check(source, "only the failing Bash is an error", ["Bash"], errors)
    created = client.project / "created.txt"
    table.check(source, "Write+Edit took effect", "alpha line\ngamma line\n",
                created.read_text() if created.exists() else None)
    table.check(source, "transcript's sessionId lines", {raw["id"]}, raw["ids_in_lines"])
    check_session(table, source, report, raw)
    check_results(table, source, ClaudeCodeSource.for_file(str(files[0])), raw)
    theirs = ccusage("claude", home, {"CLAUDE_CONFIG_DIR": str(client.config)})
    rows = theirs.get("sessions") or []
    table.check(source, "ccusage sessions", [raw["id"]], [r.get("sessionId") for r in rows])
    check_tokens(table, source, report, raw["id"], rows[0] if len(rows) == 1 else None)


def check_codex(table: Table, client: TourClient, requests: list[dict], report: dict,
                home: Path) -> None:
    source = "codex"
    files = sorted((client.config / "sessions").glob("*/*/*/rollout-*.jsonl"))
    if not table.check(source, "one rollout written", 1, len(files)):
        return
    raw = raw_codex(files[0])
    offered_tools = next((r["tools"] for r in requests if r.get("tool")), {})
    table.check(source, "apply_patch offered as", "custom/function",
                {"custom": "custom/function", "function": "custom/function"}.get(
                    offered_tools.get("apply_patch"), f"{offered_tools.get('apply_patch')}"))
    planned = [name for name, _ in codex_steps()]
    table.check(source, "client ran the plan (raw calls)", planned, list(raw["calls"].values()))
    table.check(source, "every call has an output", sorted(raw["calls"]), sorted(raw["results"]))
    table.check(source, "exit codes in raw outputs", [2, 0, 0, 0],
                [raw["codes"].get(cid) for cid in raw["calls"]])
    patched = client.project / "patched.txt"
    table.check(source, "apply_patch took effect", "one\nthree\n",
                patched.read_text() if patched.exists() else None)
    table.check(source, "rollout's session_meta ids", {raw["id"]}, raw["ids_in_lines"])
    table.check(source, "file name ends with the id", True, files[0].stem.endswith(raw["id"]))
    check_session(table, source, report, raw)
    check_results(table, source, CodexSource.for_file(str(files[0])), raw)
    theirs = ccusage("codex", home, {"CODEX_HOME": str(client.config)})
    rows = theirs.get("sessions") or []
    table.check(source, "ccusage sessions", [files[0].name],
                [Path(r.get("sessionFile", "")).name + ("" if str(r.get("sessionFile", ""))
                                                        .endswith(".jsonl") else ".jsonl")
                 for r in rows])
    check_tokens(table, source, report, raw["id"], rows[0] if len(rows) == 1 else None)


def check_session(table: Table, source: str, report: dict, raw: dict) -> None:
    summary = next((s for s in report["sources"] if s.get("source") == source), None)
    table.check(source, "replay source errors", 0,
                summary.get("errors") if summary else "no such source")
    sessions = [s for s in report["sessions"] if s.get("source") == source]
    table.check(source, "replay session id", [raw["id"]], [s.get("session_id") for s in sessions])
    if len(sessions) != 1:
        return
    session = sessions[0]
    table.check(source, "replay key", f"{source}:{raw['id']}", session.get("key"))
    table.check(source, "tool_calls", len(raw["calls"]), session.get("tool_calls"))
    table.check(source, "tools (per tool)", Counter(raw["calls"].values()),
                Counter(session.get("tools") or {}))


def check_results(table: Table, source: str, parser, raw: dict) -> None:
    """The parser's ToolResults (read here in-process) against the raw file: one per call,
    named after its call, and the exit code the raw output states."""
    with complete_files():
        events = parser.poll()
    results = {e.call_id: e for e in events if isinstance(e, ToolResult)}
    table.check(source, "parser results: call ids", sorted(raw["results"]), sorted(results))
    table.check(source, "parser results: tool names", list(raw["calls"].values()),
                [results[cid].name if cid in results else None for cid in raw["calls"]])
    got = {}
    for cid in raw["codes"]:
        details = results[cid].details if cid in results else None
        got[cid] = details.get("exitCode") if isinstance(details, dict) else None
    table.check(source, "parser results: exit codes", list(raw["codes"].values()),
                list(got.values()))


def check_tokens(table: Table, source: str, report: dict, session_id: str,
                 row: dict | None) -> None:
    session = next((s for s in report["sessions"] if s.get("session_id") == session_id), None)
    if row is None or session is None:
        table.fail(source, "tokens = ccusage", "no single session to compare")
        return
    ours = session.get("tokens") or {}
    for name, field in (("input", "inputTokens"), ("output", "outputTokens"),
                        ("total", "totalTokens")):
        table.check(source, f"tokens.{name} = ccusage {field}", row.get(field), ours.get(name))


# ------------------------------------------------------------------------------ main

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", choices=("claude-code", "codex"), action="append")
    parser.add_argument("--keep", help="copy the temp dir here afterwards (outside the repo)")
    args = parser.parse_args(argv)
    sources = args.source or ["claude-code", "codex"]
    missing = [reason for reason in map(missing_install, sources) if reason]
    if not CCUSAGE.exists():
        missing.append(f"ccusage {CCUSAGE_VERSION} is not installed at {CCUSAGE}")
    if missing:
        print("\n".join(missing), file=sys.stderr)
        return 2
    table = Table()
    with tempfile.TemporaryDirectory(prefix="cw-heldout-") as tmp:
        work = Path(tmp)
        home = work / "replay-home"
        home.mkdir()
        clients: dict[str, tuple[TourClient, list[dict]]] = {}
        for source in sources:                        # one client at a time
            started = time.monotonic()
            clients[source] = run_client(source, work)
            client = clients[source][0]
            print(f"{source}: exited {client.proc.returncode} after "
                  f"{time.monotonic() - started:.1f} s", file=sys.stderr)
        try:
            report = replay(home, clients.get("claude-code", (None,))[0],
                            clients.get("codex", (None,))[0])
            if "claude-code" in clients:
                check_claude(table, *clients["claude-code"], report, home)
            if "codex" in clients:
                check_codex(table, *clients["codex"], report, home)
        except Exception as error:        # a harness failure is a FAIL too, with its reason
            table.fail("-", "harness", f"{type(error).__name__}: {error}")
        if args.keep:
            shutil.copytree(work, args.keep, dirs_exist_ok=True, symlinks=True)
    table.print()
    print(f"\n{len(table.rows) - table.failed} passed, {table.failed} failed")
    return 1 if table.failed else 0


if __name__ == "__main__":
    sys.exit(main())

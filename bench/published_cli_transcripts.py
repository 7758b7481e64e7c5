#!/usr/bin/env python3
"""Held-out check of the Claude Code and Codex parsers on published transcripts.

``bench/heldout_cli_transcripts.py`` drives the pinned clients itself; this script takes
transcripts that real clients wrote elsewhere and that were published (copied out of public
repositories, never kept in this one), laid out as the clients lay them out::

    DIR/claude/projects/<project>/<sessionId>.jsonl        (CLAUDE_CONFIG_DIR=DIR/claude)
    DIR/codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl (CODEX_HOME=DIR/codex)

It replays DIR with ``python -m monitor replay --json`` (HOME in a temp dir) and checks, per
session: the session id is the transcript's (the file's, and the ids its lines name); the
replay reports no source error; ``tool_calls`` and the per-tool counts equal the calls in the
raw file (counted with plain json by the held-out script's ``raw_claude``/``raw_codex``); the
parsers' own ToolResults (read in-process) match the raw results; the tokens equal ccusage's
(``ccusage claude|codex session --json --offline``, the version the held-out script pins) for
the same files. It prints a PASS/FAIL table and a summary per source, and exits 1 on any
FAIL (2 when ccusage is not installed or DIR holds no transcript).

    .venv/bin/python bench/published_cli_transcripts.py DIR [--source claude-code|codex]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.heldout_cli_transcripts import (
    CCUSAGE,
    CCUSAGE_VERSION,
    Table,
    ccusage,
    check_results,
    check_tokens,
    raw_claude,
    raw_codex,
    replay,
)
from monitor.sources.claude_code import SUBAGENTS_DIR, ClaudeCodeSource
from monitor.sources.codex import CodexSource

# --------------------------------------------------------------- the raw transcripts

def claude_files(projects: Path) -> dict[str, list[Path]]:
    """Transcript files by the session they belong to: ``<project>/<id>.jsonl``, its
    sub-agents' ``<project>/<id>/subagents/*.jsonl``, and pre-2.1 ``agent-*.jsonl`` files
    (the parent's ``sessionId`` in their lines)."""
    sessions: dict[str, list[Path]] = {}
    for path in sorted(projects.glob("*/*.jsonl")):
        sid = path.stem
        if sid.startswith("agent-"):
            sid = next(iter(sorted(raw_claude(path)["ids_in_lines"])), sid)
        sessions.setdefault(sid, []).append(path)
    for path in sorted(projects.glob(f"*/*/{SUBAGENTS_DIR}/*.jsonl")):
        sessions.setdefault(path.parent.parent.name, []).append(path)
    return sessions


def merged_claude(sid: str, paths: list[Path]) -> dict:
    """``raw_claude`` of a session's files together (a call id counted once)."""
    raw: dict = {"id": sid, "ids_in_lines": set(), "calls": {}, "results": {}, "codes": {}}
    for path in paths:
        one = raw_claude(path)
        if path.stem == sid:
            raw["ids_in_lines"] |= one["ids_in_lines"]
        for name in ("calls", "results", "codes"):
            for key, value in one[name].items():
                raw[name].setdefault(key, value)
    return raw


# -------------------------------------------------------------------------- checking

def check_replayed(table: Table, label: str, source: str, session: dict | None,
                   raw: dict) -> None:
    table.check(label, "replay session id", raw["id"],
                session.get("session_id") if session else "not replayed")
    if session is None:
        return
    table.check(label, "replay key", f"{source}:{raw['id']}", session.get("key"))
    table.check(label, "tool_calls", len(raw["calls"]), session.get("tool_calls"))
    table.check(label, "tools (per tool)", Counter(raw["calls"].values()),
                Counter(session.get("tools") or {}))


def check_source_errors(table: Table, source: str, report: dict) -> None:
    summary = next((s for s in report["sources"] if s.get("source") == source), None)
    table.check(source, "replay source errors", 0,
                summary.get("errors") if summary else "no such source")
    if summary and summary.get("errors"):
        table.fail(source, "error samples", json.dumps(summary.get("error_samples"))[:300])


def without_records(source: str, empty: list[str]) -> None:
    """Transcripts that hold no record are no sessions: said, and none may be replayed (the
    sessions checks compare the replayed ones with those that hold records)."""
    if empty:
        print(f"{source}: {len(empty)} transcript(s) without a record, no session: "
              + ", ".join(empty))


def check_claude(table: Table, root: Path, report: dict, home: Path) -> dict:
    source = "claude-code"
    sessions = claude_files(root / "projects")
    empty = sorted(sid for sid, paths in sessions.items()
                   if not any(path.read_text().strip() for path in paths))
    for sid in empty:
        del sessions[sid]
    without_records(source, empty)
    check_source_errors(table, source, report)
    replayed = {s.get("session_id"): s for s in report["sessions"]
                if s.get("source") == source}
    table.check(source, "replayed sessions", sorted(sessions), sorted(replayed))
    rows = {row.get("sessionId"): row for row in
            ccusage("claude", home, {"CLAUDE_CONFIG_DIR": str(root)}).get("sessions") or []}
    totals = Counter()
    for sid, paths in sessions.items():
        label = f"claude {sid[:8]}"
        raw = merged_claude(sid, paths)
        table.check(label, "sessionId in lines", {sid}, raw["ids_in_lines"])
        check_replayed(table, label, source, replayed.get(sid), raw)
        main = next((p for p in paths if p.stem == sid), paths[0])
        check_results(table, label, ClaudeCodeSource.for_file(str(main)),
                      raw_claude(main))
        check_tokens(table, label, report, sid, rows.get(sid))
        totals.update(sessions=1, tool_calls=len(raw["calls"]),
                      tokens=(replayed.get(sid) or {}).get("tokens", {}).get("total", 0))
    return dict(totals)


def check_codex(table: Table, root: Path, report: dict, home: Path) -> dict:
    source = "codex"
    files = sorted((root / "sessions").glob("*/*/*/rollout-*.jsonl"))
    check_source_errors(table, source, report)
    replayed = {s.get("session_id"): s for s in report["sessions"]
                if s.get("source") == source}
    raws = {path: raw_codex(path) for path in files}
    empty = sorted(path.name for path, raw in raws.items() if raw["id"] is None)
    raws = {path: raw for path, raw in raws.items() if raw["id"] is not None}
    without_records(source, empty)
    table.check(source, "replayed sessions", sorted(r["id"] for r in raws.values()),
                sorted(replayed))
    rows = {Path(str(row.get("sessionFile", ""))).name.removesuffix(".jsonl"): row
            for row in ccusage("codex", home, {"CODEX_HOME": str(root)}).get("sessions") or []}
    totals = Counter()
    for path, raw in raws.items():
        label = f"codex {str(raw['id'])[:8]}"
        table.check(label, "session_meta ids", {raw["id"]}, raw["ids_in_lines"])
        table.check(label, "file name ends with the id", True,
                    path.stem.endswith(str(raw["id"])))
        check_replayed(table, label, source, replayed.get(raw["id"]), raw)
        check_results(table, label, CodexSource.for_file(str(path)), raw)
        check_tokens(table, label, report, raw["id"], rows.get(path.stem))
        totals.update(sessions=1, tool_calls=len(raw["calls"]),
                      tokens=(replayed.get(raw["id"]) or {}).get("tokens", {}).get("total", 0))
    return dict(totals)


# ------------------------------------------------------------------------------ main

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", type=Path, help="holds claude/projects/ and/or codex/sessions/")
    parser.add_argument("--source", choices=("claude-code", "codex"), action="append")
    args = parser.parse_args(argv)
    root = args.dir.resolve()
    if not CCUSAGE.exists():
        print(f"ccusage {CCUSAGE_VERSION} is not installed at {CCUSAGE}", file=sys.stderr)
        return 2
    found = {"claude-code": (root / "claude" / "projects").is_dir(),
             "codex": (root / "codex" / "sessions").is_dir()}
    sources = [s for s in (args.source or found) if found[s]]
    if not sources:
        print(f"{root}: no claude/projects/ or codex/sessions/ to check", file=sys.stderr)
        return 2
    table = Table()
    summary: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="cw-published-") as tmp:
        home = Path(tmp)
        claude = SimpleNamespace(config=root / "claude") if "claude-code" in sources else None
        codex = SimpleNamespace(config=root / "codex") if "codex" in sources else None
        try:
            report = replay(home, claude, codex)
            if claude is not None:
                summary["claude-code"] = check_claude(table, claude.config, report, home)
            if codex is not None:
                summary["codex"] = check_codex(table, codex.config, report, home)
        except Exception as error:        # a harness failure is a FAIL too, with its reason
            table.fail("-", "harness", f"{type(error).__name__}: {error}")
    table.print()
    for source, totals in summary.items():
        print(f"{source}: {totals.get('sessions', 0)} sessions, "
              f"{totals.get('tool_calls', 0)} tool calls, {totals.get('tokens', 0)} tokens")
    print(f"\n{len(table.rows) - table.failed} passed, {table.failed} failed")
    return 1 if table.failed else 0


if __name__ == "__main__":
    sys.exit(main())

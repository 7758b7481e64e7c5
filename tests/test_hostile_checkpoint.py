"""A checkpoint on disk is not trusted: whatever it holds, ``watch`` starts from it.

A real checkpoint is written by a real watch over a legacy transcript, an agent database and
a gateway log; then every value in it, at every level, is replaced by values of the wrong
type or range, and the sources a restarted ``watch`` builds from it (resumed, and with
``--from-start``) must take it and read.
"""

from __future__ import annotations

import copy
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from chaos_writer import assistant_tool_call, dumps, session_header
from small_state import DB_SID, SID, make_state

from monitor.pipeline import Monitor
from monitor.records import ToolCallRecord
from monitor.restart import ReportedBefore, rewound
from monitor.sources.checkpoint import CheckpointStore
from monitor.sources.sourceset import SourceSet

REPO = Path(__file__).resolve().parent.parent
#: Of the wrong type (a string, null, a list, a dict, a bool, a float) or range (negative,
#: past 64 bits, not finite).
HOSTILE = ["x", None, [1], {"a": 1}, True, 1.5, -1, 2 ** 70, float("inf"), float("nan")]


def restarted(state: Path, log: Path, resume: dict | None, *, from_start: bool) -> Monitor:
    """What ``watch`` builds from a checkpoint: its sources and, resumed, what it reported."""
    sources = SourceSet(state_dir=str(state), log_path=str(log),
                        resume=resume if from_start else rewound(resume),
                        from_start=from_start)
    monitor = Monitor(sources, None)
    if resume is not None and not from_start:
        monitor.reported_before = ReportedBefore(resume)
    return monitor


def leaf_paths(node, prefix=()):
    """Every place in a JSON document, one per shape (list items and the entries of a dict
    keyed by path or id count once)."""
    yield prefix
    if isinstance(node, dict):
        for key, value in list(node.items())[:1] if _keyed_by_data(node) else node.items():
            yield from leaf_paths(value, (*prefix, key))
    elif isinstance(node, list) and node:
        yield from leaf_paths(node[0], (*prefix, 0))


def _keyed_by_data(node: dict) -> bool:
    return any("/" in key or key == DB_SID for key in node)


def replaced(document, path, value):
    document = copy.deepcopy(document)
    if not path:
        return value
    node = document
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    return document


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> tuple[Path, Path, dict]:
    root = tmp_path_factory.mktemp("checkpointed")
    state, log = make_state(root)
    checkpoint = root / "cp.json"
    result = subprocess.run(
        [sys.executable, "-m", "monitor", "watch", "--headless", "--json", "--seconds", "0.3",
         "--state-dir", str(state), "--log", str(log), "--checkpoint", str(checkpoint)],
        capture_output=True, text=True, timeout=60, cwd=str(REPO))
    assert result.returncode == 0, result.stderr[-2000:]
    document = json.loads(checkpoint.read_text())
    kinds = {key.partition(":")[0] for key in document["sources"]}
    assert kinds >= {"jsonl", "sqlite", "gateway-log"}, kinds
    return state, log, document


def test_every_value_of_the_wrong_type_or_range_is_taken_without_a_crash(saved, tmp_path):
    state, log, document = saved
    store = CheckpointStore(str(tmp_path / "cp.json"))
    crashes = []
    for path in leaf_paths(document):
        for value in HOSTILE:
            store_path = Path(store.path)
            store_path.write_text(json.dumps(replaced(document, path, value)))
            resume = store.load()
            for from_start in (False, True):
                try:
                    monitor = restarted(state, log, resume, from_start=from_start)
                    try:
                        monitor.step()
                    finally:
                        monitor.sources.close()
                except Exception as exc:
                    crashes.append(f"{path}={value!r} from_start={from_start}: "
                                   f"{type(exc).__name__}: {exc}")
    assert not crashes, "\n".join(crashes[:20])


def test_watch_resumes_from_a_checkpoint_of_the_wrong_shape_without_a_traceback(saved,
                                                                                tmp_path):
    state, log, document = saved
    checkpoint = tmp_path / "cp.json"
    mangled = {key: "x" for key in document["sources"]}
    checkpoint.write_text(json.dumps({"version": 1, "sources": mangled}))
    result = subprocess.run(
        [sys.executable, "-m", "monitor", "watch", "--headless", "--json", "--seconds", "0.3",
         "--from-start", "--state-dir", str(state), "--log", str(log),
         "--checkpoint", str(checkpoint)],
        capture_output=True, text=True, timeout=60, cwd=str(REPO))
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    calls = [r["call_id"] for r in map(json.loads, result.stdout.splitlines())
             if r["type"] == "tool_call"]
    assert sorted(calls) == ["c0", "c1", "c2", "s1", "s2", "s3"]


def reported_calls(monitor: Monitor) -> list[str]:
    """The tool calls a monitor reports while it reads what is there."""
    calls = []
    while True:
        records = monitor.step()
        calls += [r.call_id for r in records if isinstance(r, ToolCallRecord)]
        if not monitor.sources.behind and not records:
            return calls


def checkpointed(state: Path, log: Path) -> dict:
    """The checkpoint of a first ``watch`` that caught up quietly on what is there."""
    first = restarted(state, log, None, from_start=False)
    try:
        first.quiet = True
        assert reported_calls(first) == []
        return first.sources.checkpoint()
    finally:
        first.sources.close()


def calls_after_restart(state: Path, log: Path, checkpoint: dict) -> list[str]:
    monitor = restarted(state, log, checkpoint, from_start=False)
    try:
        return reported_calls(monitor)
    finally:
        monitor.sources.close()


def rewrite_in_place(path: Path, calls: list[str]) -> None:
    """Truncate ``path`` and write other calls into it: the same inode, other lines."""
    with path.open("r+") as handle:
        handle.truncate(0)
        handle.write("\n".join([dumps(session_header(SID))] + [
            dumps(assistant_tool_call(call, n)) for n, call in enumerate(calls)]) + "\n")


@pytest.mark.parametrize("calls", [2, 8], ids=["shorter-than-the-offset", "longer"])
def test_a_transcript_rewritten_in_place_after_the_checkpoint_is_reported(tmp_path, calls):
    state, log = make_state(tmp_path)
    checkpoint = checkpointed(state, log)
    transcript = state / "agents" / "main" / "sessions" / f"{SID}.jsonl"
    inode = transcript.stat().st_ino
    new = [f"new{n}" for n in range(calls)]
    rewrite_in_place(transcript, new)
    assert transcript.stat().st_ino == inode
    assert calls_after_restart(state, log, checkpoint) == new


def test_lines_appended_after_the_checkpoint_are_reported_once(tmp_path):
    state, log = make_state(tmp_path)
    checkpoint = checkpointed(state, log)
    transcript = state / "agents" / "main" / "sessions" / f"{SID}.jsonl"
    with transcript.open("a") as handle:
        handle.write(dumps(assistant_tool_call("appended", 9)) + "\n")
    assert calls_after_restart(state, log, checkpoint) == ["appended"]


@pytest.mark.parametrize("home", ["me@corp.example", "dir#1", "a@b#c:2"])
def test_a_restart_in_a_dir_whose_path_holds_at_or_hash_reports_nothing_again(tmp_path, home):
    """A home dir ``/home/me@corp.example`` (SSSD's default for a domain user) put an ``@``
    in every agent database's row origins, which were then taken for a file's: every call
    of every database was reported again on each restart."""
    state, log = make_state(tmp_path / home)
    checkpoint = checkpointed(state, log)
    assert calls_after_restart(state, log, checkpoint) == []
    db = state / "agents" / "sq" / "agent" / "openclaw-agent.sqlite"
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("INSERT INTO transcript_events (session_id, seq, event_json, created_at) "
                 "VALUES (?, 4, ?, 1)", (DB_SID, dumps(assistant_tool_call("s4", 4))))
    conn.close()
    assert calls_after_restart(state, log, checkpoint) == ["s4"]


def one_gib_of_nothing(path: Path) -> None:
    """A sparse 1 GiB file: no disk used, but reading it would take 1 GiB of memory."""
    with path.open("wb") as handle:
        handle.truncate(1 << 30)


@pytest.mark.parametrize(("write", "why"), [
    (lambda path: path.write_bytes(b'{"version": 1, "sources": {"gateway-log:'), "not JSON"),
    (lambda path: path.write_text('{"version": 99, "sources": {}}'), "not a version 1"),
    (one_gib_of_nothing, "1073741824 bytes, more than a checkpoint holds (64 MiB)"),
], ids=["truncated", "another-version", "1-GiB"])
def test_a_checkpoint_that_cannot_be_used_is_told_in_one_line_and_kept(saved, tmp_path, write,
                                                                        why):
    state, log, _ = saved
    checkpoint = tmp_path / "cp.json"
    write(checkpoint)
    before = checkpoint.stat().st_size
    result = subprocess.run(
        [sys.executable, "-m", "monitor", "watch", "--headless", "--json", "--seconds", "0.3",
         "--state-dir", str(state), "--log", str(log), "--checkpoint", str(checkpoint)],
        capture_output=True, text=True, timeout=60, cwd=str(REPO))
    assert result.returncode == 0, result.stderr[-2000:]
    line, caught_up = result.stderr.splitlines()
    assert caught_up.startswith("clawwatch watch: caught up on the history"), \
        "it starts as without a checkpoint"
    kept = Path(f"{checkpoint}.unreadable")
    assert line.startswith(f"clawwatch watch: checkpoint {checkpoint}: {why}")
    assert line.endswith(f"; kept as {kept}; starting without it")
    assert kept.stat().st_size == before
    assert json.loads(checkpoint.read_text())["version"] == 1

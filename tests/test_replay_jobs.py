"""``replay --jobs N``: the sessions split across worker processes, one document.

The state dirs come from ``bench/gen_large_state.py`` (both eras, the same content: ordinary
work, loops of every kind, OpenClaw's own loop lines in the gateway log), with bad lines and
rows added in more transcripts than a source keeps error samples of. Each split must give
the document one process gives, byte for byte.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import GENERATED_BAD_TRANSCRIPTS
from small_state import SID, make_state

from monitor import replay_shards
from monitor.config import Config, load_config
from monitor.detect.engine import DetectionEngine
from monitor.display import json_dumps
from monitor.events import SessionInfo
from monitor.pipeline import Monitor
from monitor.replay import ReplayInput, read_to_end, replay
from monitor.sources.sourceset import SourceSet

REPO = Path(__file__).resolve().parent.parent


def one_process(state_dir: Path) -> dict:
    """The document of a single ``Monitor`` over every source, as replay read it before
    it was split."""
    sources = SourceSet(state_dir=str(state_dir), log_path=str(state_dir / "logs" /
                                                                  "openclaw.log"), replay=True)
    monitor = Monitor(sources, DetectionEngine(Config()))
    monitor.quiet = True
    read_to_end(monitor)
    document = monitor.report()
    sources.close()
    return document


def split(state_dir: Path, jobs: int) -> dict:
    what = ReplayInput(state_dir=str(state_dir), log_path=str(state_dir / "logs" /
                                                               "openclaw.log"))
    return replay(what, Config(), DetectionEngine, jobs)


@pytest.mark.parametrize("era", ["legacy", "sqlite"])
def test_every_split_gives_the_one_process_document(generated_state_dirs, era, monkeypatch):
    monkeypatch.setattr(replay_shards, "BYTES_PER_JOB", 1)   # small dir: split it anyway
    state_dir = generated_state_dirs / era
    reference = json_dumps(one_process(state_dir))
    document = json.loads(reference)
    transcripts = [s for s in document["sources"] if s["kind"] != "gateway-log"]
    assert sum(s["errors"] for s in transcripts) >= GENERATED_BAD_TRANSCRIPTS
    assert len(transcripts[0]["error_samples"]) == 5
    assert any(f["detector"] == "gateway_loop_notice"
               for s in document["sessions"] for f in s["findings"])
    assert sum(s["findings_total"] for s in document["sessions"]) > 20
    for jobs in (1, 2, 3):
        assert json_dumps(split(state_dir, jobs)) == reference, f"--jobs {jobs}"


def test_a_budget_across_sessions_reads_in_one_shard(generated_state_dirs, monkeypatch):
    """An agent or nightly budget adds up tokens across sessions in reading order: the
    replay does not split, whatever ``--jobs`` says."""
    monkeypatch.setattr(replay_shards, "BYTES_PER_JOB", 1)
    shards: list = []
    real_plan = replay_shards.plan_shards
    monkeypatch.setattr(replay_shards, "plan_shards",
                        lambda weights, jobs, together=(): shards.append(jobs)
                        or real_plan(weights, jobs, together))
    config = load_config(None, env={"CLAWWATCH_BUDGETS__AGENT_TOKENS": "1000000"})
    what = ReplayInput(state_dir=str(generated_state_dirs / "legacy"))
    replay(what, config, DetectionEngine, 4)
    replay(what, Config(), DetectionEngine, 4)
    assert shards == [1, 4]


def test_cli_replay_jobs(generated_state_dirs):
    """The command line: ``--jobs 2`` and ``--jobs 1`` print the same document; ``--jobs 0``
    is refused with a message, not a traceback."""
    def run(*args):
        return subprocess.run([sys.executable, "-m", "monitor", "replay", "--state-dir",
                               str(generated_state_dirs / "sqlite"), "--json", *args],
                              capture_output=True, text=True, cwd=REPO)

    one, two = run("--jobs", "1"), run("--jobs", "2")
    assert one.returncode == 0 and one.stdout == two.stdout
    assert json.loads(one.stdout)["sessions"]
    bad = run("--jobs", "0")
    assert bad.returncode == 2 and "--jobs must be 1 or more" in bad.stderr
    assert "Traceback" not in bad.stderr


@pytest.mark.parametrize("era", ["legacy", "sqlite"])
def test_a_shard_reads_only_its_own_sessions_index_records(generated_state_dirs, era):
    """A shard's sources give the index records of the shard's sessions alone: the others'
    are the main process's, and each worker used to keep all of them (~20 MB a worker at
    10,003 sessions)."""
    state_dir = str(generated_state_dirs / era)

    def index_sessions(only: frozenset[str] | None) -> set[str]:
        sources = SourceSet(state_dir=state_dir, replay=True, transcripts_only=True,
                            only_sessions=only)
        try:
            return {e.session_id for s in sources.sources for e in s.read_index()
                    if isinstance(e, SessionInfo)}
        finally:
            sources.close()

    every = index_sessions(None)
    chosen = frozenset(sorted(every)[::5]) | {"not-a-session"}
    assert len(every) > 10
    assert index_sessions(chosen) == every & chosen


class _FailingEngine(DetectionEngine):
    """An engine that cannot take some tool calls (a bug a record could hit)."""

    def observe(self, key, agent, event):
        if type(event).__name__ == "ToolCall" and event.call_id.endswith("7"):
            raise ValueError("year 10000 is out of range")
        return super().observe(key, agent, event)


def test_records_the_engine_could_not_take_are_counted_in_the_document(
        generated_state_dirs, monkeypatch):
    monkeypatch.setattr(replay_shards, "BYTES_PER_JOB", 1)
    what = ReplayInput(state_dir=str(generated_state_dirs / "legacy"))
    documents = [replay(what, Config(), _FailingEngine, jobs) for jobs in (1, 2)]
    assert json_dumps(documents[0]) == json_dumps(documents[1])
    internal = documents[0]["sources"][-1]
    assert internal["kind"] == "internal" and internal["errors"] > 5
    assert len(internal["error_samples"]) == 5
    assert all("ValueError: year 10000" in sample["message"]
               for sample in internal["error_samples"])
    assert all(source["kind"] != "internal" for source in split(
        generated_state_dirs / "legacy", 1)["sources"])


def test_a_transcript_copied_under_another_name_splits_like_one_process(tmp_path,
                                                                        monkeypatch):
    """A copy of a transcript under another name (``x.jsonl``) is a session of its own,
    named by its file, whatever id its header gives: its header must not start, in the
    shard reading the copy, a second state of the original's session, which the merge took
    over the original's (the original session left the document with ``--jobs 2``)."""
    state, _ = make_state(tmp_path)
    sessions = state / "agents" / "main" / "sessions"
    shutil.copy(sessions / f"{SID}.jsonl", sessions / "x.jsonl")
    monkeypatch.setattr(replay_shards, "BYTES_PER_JOB", 1)
    what = ReplayInput(state_dir=str(state))
    documents = [json_dumps(replay(what, Config(), DetectionEngine, jobs)) for jobs in (1, 2)]
    assert documents[0] == documents[1]
    calls = {s["session_id"]: s["tool_calls"] for s in json.loads(documents[1])["sessions"]}
    assert calls[SID] == calls["x"] == 3


def claude_reply(session_id: str, n: int) -> str:
    return json.dumps({
        "type": "assistant", "isSidechain": False, "sessionId": session_id, "version": "2.1.3",
        "requestId": f"req_{n:06d}", "uuid": f"u{n}", "cwd": "/tmp/p",
        "timestamp": f"2026-12-01T03:49:{n % 60:02d}.000Z",
        "message": {"id": f"msg_{n:06d}", "role": "assistant", "model": "m",
                    "content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn",
                    "usage": {"input_tokens": 1, "output_tokens": 1}}},
                      separators=(",", ":")) + "\n"        # as Claude Code writes it


def test_a_resumed_claude_session_is_read_with_the_one_it_copies(tmp_path, monkeypatch):
    """Claude Code starts a resumed session's file (B) with copies of the earlier one's (A)
    replies, which count once: only a reader that read A knows B's copies as copies. A replay
    reads a Claude Code tree's sessions in one shard, and takes none from the cache unless it
    takes all: split apart, B counted A's 30 replies again (and its loop findings)."""
    first, resumed = "aaaaaaaa-0000-0000-0000-000000000001", "bbbbbbbb-0000-0000-0000-000000000002"
    project = tmp_path / "claude" / "projects" / "-tmp-p"
    project.mkdir(parents=True)
    (project / f"{first}.jsonl").write_text("".join(claude_reply(first, n) for n in range(30)))
    (project / f"{resumed}.jsonl").write_text("".join(claude_reply(resumed, n)
                                                      for n in range(31)))
    state, _ = make_state(tmp_path)             # OpenClaw sessions to shard beside them
    monkeypatch.setattr(replay_shards, "BYTES_PER_JOB", 1)
    what = ReplayInput(state_dir=str(state), claude_dirs=(str(project.parent),))
    documents = [json_dumps(replay(what, Config(), DetectionEngine, jobs)) for jobs in (1, 2)]
    assert documents[0] == documents[1]

    def inputs(document: str) -> dict[str, int]:
        return {s["session_id"]: s["tokens"]["input"] for s in json.loads(document)["sessions"]}

    assert inputs(documents[1])[resumed] == 1
    cache = tmp_path / "cache"
    replay(what, Config(), DetectionEngine, 2, cache=cache)
    with (project / f"{resumed}.jsonl").open("a") as grown:
        grown.write(claude_reply(resumed, 31))
    cached = json_dumps(replay(what, Config(), DetectionEngine, 2, cache=cache))
    assert cached == json_dumps(replay(what, Config(), DetectionEngine, 1))
    assert inputs(cached)[resumed] == 2

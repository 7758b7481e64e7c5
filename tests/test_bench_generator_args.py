"""``bench/gen_large_state.py`` and ``bench/replicate_lab.py`` refuse sizes they cannot honour
instead of filling the disk; what ``replicate_lab.py`` writes replays to its manifest's tokens."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
GENERATOR = BENCH / "gen_large_state.py"
REPLICATOR = BENCH / "replicate_lab.py"


@pytest.mark.parametrize("args, message", [
    (["--big-mb", "0"], "--big-mb: each size must be more than 0"),
    (["--big-mb", "20,0"], "--big-mb: each size must be more than 0"),
    (["--big-mb", "nan"], "--big-mb: each size must be more than 0"),
    (["--big-mb", "x"], "--big-mb: not a list of numbers"),
    (["--sessions", "-1"], "--sessions: must be 0 or more"),
])
def test_bad_sizes_are_refused_before_writing_anything(tmp_path, args, message):
    out = tmp_path / "out"
    result = subprocess.run([sys.executable, str(GENERATOR), "--out", str(out), *args],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and message in result.stderr
    assert not out.exists()


@pytest.mark.parametrize("args", [["--mb", "0"], ["--mb", "nan"], ["--mb", "-3"],
                                  ["--session-mb", "inf"], ["--mb", "x"]])
def test_the_replicator_refuses_bad_sizes_before_writing_anything(tmp_path, args):
    out = tmp_path / "out"
    result = subprocess.run([sys.executable, str(REPLICATOR), "--out", str(out), *args],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "--" in result.stderr and "mb" in result.stderr
    assert not out.exists()


def test_replicated_lab_transcripts_replay_to_the_manifest_in_both_eras(tmp_path):
    out = tmp_path / "lab"
    subprocess.run([sys.executable, str(REPLICATOR), "--out", str(out), "--mb", "1.5",
                    "--session-mb", "0.3"], check=True, capture_output=True, timeout=120)
    manifest = json.loads((out / "manifest.json").read_text())
    truth = {s["session_id"]: s["tokens"] for s in manifest["sessions"]}
    assert len(truth) == 5 and manifest["totals"]["bytes"] >= 1.5e6
    for era in ("legacy", "sqlite"):
        replay = subprocess.run(
            [sys.executable, "-m", "monitor", "replay", "--state-dir", str(out / era),
             "--no-cache", "--json"], check=True, capture_output=True, text=True, timeout=120,
            cwd=BENCH.parent)
        document = json.loads(replay.stdout)
        tokens = {s["session_id"]: s["tokens"] for s in document["sessions"]}
        assert {sid: (t["input"], t["output"], t["total"]) for sid, t in tokens.items()} == \
            {sid: (t["input"], t["output"], t["total"]) for sid, t in truth.items()}
        assert sum(source["errors"] for source in document["sources"]) == 0
        findings = {f["detector"] for s in document["sessions"] for f in s["findings"]}
        assert {"generic_repeat", "ping_pong"} <= findings      # the lab's loops, repeated


def test_a_generation_stopped_half_way_leaves_no_manifest_of_an_earlier_one(tmp_path):
    """The benchmarks take ``manifest.json`` as the truth about the state beside it: a run
    stopped by SIGTERM left the previous run's manifest beside its half-written state."""
    out = tmp_path / "out"
    subprocess.run([sys.executable, str(GENERATOR), "--out", str(out), "--sessions", "5",
                    "--big-mb", "0.1"], check=True, capture_output=True, timeout=120)
    assert (out / "manifest.json").exists()
    again = subprocess.Popen([sys.executable, str(GENERATOR), "--out", str(out), "--sessions",
                              "3000", "--big-mb", "0.1"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
    try:
        assert "/3001 sessions" in again.stderr.readline()     # under way
        again.send_signal(signal.SIGTERM)
        again.wait(timeout=30)
    finally:
        if again.poll() is None:
            again.kill()
            again.wait()
    assert not (out / "manifest.json").exists()

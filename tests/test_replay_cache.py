"""The replay cache: an unchanged dir is answered from it, an appended session alone is
read again, and a cache that is corrupt, forged, stale or written concurrently is a miss,
never a wrong document.

Each test generates its own state dirs (both eras) and compares every document with a
cold read of the same dir, byte for byte.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import generate_state_dirs

from monitor import replay as replay_module
from monitor import replay_cache, replay_shards
from monitor.config import Config, load_config
from monitor.detect.engine import DetectionEngine
from monitor.display import json_dumps
from monitor.replay import ReplayInput, replay
from monitor.replay_cache_secrets import SALT_NAME

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def dirs(tmp_path) -> Path:
    return generate_state_dirs(tmp_path / "dirs")


class ReadSpy:
    """The sessions each replay read from its sources (not from the cache)."""

    def __init__(self, monkeypatch) -> None:
        self.read: list[frozenset[str]] = []
        real = replay_shards.read_shard

        def spy(what, config, engine_factory, sessions):
            self.read.append(sessions)
            return real(what, config, engine_factory, sessions)

        monkeypatch.setattr(replay_shards, "read_shard", spy)

    def take(self) -> set[str]:
        sessions = set().union(*self.read) if self.read else set()
        self.read.clear()
        return sessions


def run(state_dir: Path, cache: Path, *, read_cache: bool = True, config=None) -> str:
    what = ReplayInput(state_dir=str(state_dir), log_path=str(state_dir / "logs" /
                                                               "openclaw.log"))
    return json_dumps(replay(what, config or Config(), DetectionEngine, 1, cache=cache,
                             read_cache=read_cache))


def cold(state_dir: Path, tmp_path: Path) -> str:
    return run(state_dir, tmp_path / "cold-cache", read_cache=False)


class LogReadSpy:
    """How many replays read the gateway log (``read_to_end`` after the transcripts)."""

    def __init__(self, monkeypatch) -> None:
        self.reads = 0
        real = replay_module.read_to_end

        def spy(monitor):
            self.reads += 1
            return real(monitor)

        monkeypatch.setattr(replay_module, "read_to_end", spy)

    def take(self) -> int:
        reads, self.reads = self.reads, 0
        return reads


@pytest.mark.parametrize("era", ["legacy", "sqlite"])
def test_an_unchanged_dir_is_answered_from_the_cache(dirs, era, tmp_path, monkeypatch):
    spy, log_spy = ReadSpy(monkeypatch), LogReadSpy(monkeypatch)
    cache = tmp_path / "cache"
    first = run(dirs / era, cache)
    assert len(spy.take()) >= 80 and log_spy.take() == 1
    # The salt of the known secrets is there too when a test before registered one.
    files = sorted(f for f in cache.iterdir() if f.name != SALT_NAME)
    assert [f.name.endswith(".document.json") for f in files] == [True, False]

    def identities() -> list:
        return [(f.stat().st_ino, f.stat().st_mtime_ns) for f in files]

    written = identities()
    assert run(dirs / era, cache) == first
    assert spy.take() == set(), "a warm replay reads no transcript"
    assert log_spy.take() == 0, "nor the log"
    assert identities() == written, "a warm replay leaves the cache as it is"
    assert first == cold(dirs / era, tmp_path)
    document = json.loads(first)
    assert sum(s["errors"] for s in document["sources"]) >= 8, "error counts come back too"


def append_to_one_session(state_dir: Path, era: str) -> str:
    """Another hammer call and result on one session; its id."""
    if era == "legacy":
        path = sorted((state_dir / "agents" / "main" / "sessions").glob("*.jsonl"))[-1]
        with path.open("a") as handle:
            handle.write(json.dumps({"type": "message", "timestamp": "2026-11-30T10:00:00Z",
                                     "message": {"role": "user", "content": "again"}}) + "\n")
        return path.name[:-len(".jsonl")]
    db = state_dir / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    with sqlite3.connect(db) as conn:
        sid, top = conn.execute("SELECT session_id, max(seq) FROM transcript_events GROUP BY "
                                "session_id ORDER BY session_id DESC LIMIT 1").fetchone()
        conn.execute("INSERT INTO transcript_events (session_id, seq, event_json, created_at) "
                     "VALUES (?, ?, ?, 0)", (sid, top + 1, json.dumps(
                         {"type": "message", "message": {"role": "user", "content": "x"}})))
    return sid


@pytest.mark.parametrize("era", ["legacy", "sqlite"])
def test_after_an_append_only_that_session_is_read(dirs, era, tmp_path, monkeypatch):
    spy = ReadSpy(monkeypatch)
    cache = tmp_path / "cache"
    run(dirs / era, cache)
    spy.take()
    changed = append_to_one_session(dirs / era, era)
    warm = run(dirs / era, cache)
    assert spy.take() == {changed}
    assert warm == cold(dirs / era, tmp_path)


@pytest.mark.parametrize(("era", "change"), [("legacy", "appended"), ("sqlite", "appended"),
                                           ("legacy", "rotated")])
def test_after_the_log_changed_only_the_log_is_read(dirs, era, change, tmp_path, monkeypatch):
    spy, log_spy = ReadSpy(monkeypatch), LogReadSpy(monkeypatch)
    cache = tmp_path / "cache"
    before = run(dirs / era, cache)
    spy.take(), log_spy.take()
    log = dirs / era / "logs" / "openclaw.log"
    if change == "appended":
        loop_line = next(line for line in log.read_bytes().splitlines(keepends=True)
                         if b"Loop warning" in line)
        with log.open("ab") as handle:
            handle.write(loop_line)
    else:       # the same lines, now in a numbered rotation and a new file
        log.rename(log.with_name("openclaw.1.log"))
        log.write_bytes(b"")
    warm = run(dirs / era, cache)
    assert spy.take() == set() and log_spy.take() == 1
    assert warm == cold(dirs / era, tmp_path)
    if change == "appended":
        assert warm != before


def test_another_config_is_a_miss(dirs, tmp_path, monkeypatch):
    spy = ReadSpy(monkeypatch)
    cache = tmp_path / "cache"
    run(dirs / "legacy", cache)
    spy.take()
    strict = load_config(None, env={"CLAWWATCH_DETECTION__WARNING_THRESHOLD": "3"})
    warm = run(dirs / "legacy", cache, config=strict)
    assert len(spy.take()) >= 80
    assert warm == run(dirs / "legacy", tmp_path / "other", read_cache=False, config=strict)


def cache_files(cache: Path) -> tuple[Path, Path]:
    """The sessions' file and the whole document's file of the one input cached."""
    [units] = [p for p in cache.glob("*.json") if not p.name.endswith(".document.json")]
    return units, replay_cache.document_path(units)


def damage_file(path: Path, damage: str) -> None:
    text = path.read_text()
    if damage == "garbage":
        path.write_bytes(b"\x00\xff" * 1000)
    elif damage == "truncated":
        path.write_text(text[: len(text) // 2])
    elif damage == "empty":
        path.write_text("")
    elif damage == "directory":
        path.unlink()
        path.mkdir()
    elif damage == "fifo":          # opened as a file would be, it would block for ever
        path.unlink()
        os.mkfifo(path)
    elif damage == "other-format":
        path.write_text(re.sub(r'"format":\d+', '"format":999', text, count=1))


def stored(path: Path) -> dict:
    """What a cache file holds, as the cache reads it."""
    return replay_cache._read(path)


def forge_document(units_path: Path, key: str, value) -> None:
    """A whole document written as the cache writes one: by someone who can write the cache
    dir, or an older clawwatch (seals match, the shape need not)."""
    replay_cache.save_document(units_path, key, value)


def forge_units(units_path: Path, units: dict) -> None:
    replay_cache.save(units_path, json.dumps(units))


@pytest.mark.timeout(30)
@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty", "other-format",
                                    "directory", "fifo", "forged-counts", "forged-fields",
                                    "forged-finding", "forged-document",
                                    "another-documents-key"])
def test_a_damaged_cache_is_a_miss(dirs, tmp_path, damage):
    cache = tmp_path / "cache"
    expected = run(dirs / "legacy", cache)
    units_path, document_path = cache_files(cache)
    if not damage.startswith(("forged", "another")):
        damage_file(units_path, damage)
        damage_file(document_path, damage)
    elif damage == "forged-document":
        kept = stored(document_path)
        forge_document(units_path, kept["key"], {**kept["value"], "sessions": "none"})
    elif damage == "another-documents-key":
        forge_document(units_path, "0" * 64, stored(document_path)["value"])
    else:       # a session's entry forged: the sessions' file alone answers
        document_path.unlink()
        units = stored(units_path)["units"]
        for entry in units.values():
            if damage == "forged-counts":
                entry["state"]["tool_calls"] = -5
            elif damage == "forged-fields":
                entry["state"]["surprise"] = 1
            elif damage == "forged-finding":
                for finding in entry["state"]["findings"]:
                    finding["count"] = "many"
        forge_units(units_path, units)
    assert run(dirs / "legacy", cache) == expected


@pytest.mark.parametrize("which", ["document", "units"])
def test_a_cache_file_changed_by_one_byte_is_a_miss(dirs, tmp_path, which):
    """A digit changed inside a value still parses and has the right shape: only the seal
    tells the file from the one written."""
    cache = tmp_path / "cache"
    expected = run(dirs / "legacy", cache)
    units_path, document_path = cache_files(cache)
    if which == "units":
        document_path.unlink()          # the sessions' file alone answers
    path = document_path if which == "document" else units_path
    text = path.read_text()
    digit = re.search(r'"tool_calls":([1-9])', text).start(1)
    path.write_text(text[:digit] + ("7" if text[digit] != "7" else "8") + text[digit + 1:])
    assert run(dirs / "legacy", cache) == expected


def test_a_document_of_another_shape_is_a_miss_for_the_cli(dirs, tmp_path):
    """A document whose sessions lost their fields, sealed as the cache seals (an older
    clawwatch, or someone who can write the cache dir): ``replay`` prints a cold read's
    table, ``replay --json`` its document, and neither fails."""
    cache = tmp_path / "xdg"
    env = {"XDG_CACHE_HOME": str(cache), "HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}

    def cli(*extra: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "monitor", "replay", "--state-dir",
                               str(dirs / "legacy"), "--jobs", "1", *extra], cwd=REPO,
                              env=env, text=True, capture_output=True, timeout=300)

    cold_document, cold_table = cli("--json", "--no-cache").stdout, cli("--no-cache").stdout
    cli("--json")
    units_path, document_path = cache_files(cache / "clawwatch" / "replay")
    kept = stored(document_path)
    emptied = {**kept["value"], "sessions": [{} for _ in kept["value"]["sessions"]]}
    for extra, expected in ((["--json"], cold_document), ([], cold_table)):
        forge_document(units_path, kept["key"], emptied)
        result = cli(*extra)
        assert (result.returncode, result.stdout, result.stderr) == (0, expected, "")


def test_a_cache_file_of_the_format_before_seals_is_a_miss(dirs, tmp_path):
    cache = tmp_path / "cache"
    expected = run(dirs / "legacy", cache)
    _, document_path = cache_files(cache)
    kept = stored(document_path)
    sessions = [{**s, "tool_calls": s["tool_calls"] + 1} for s in kept["value"]["sessions"]]
    document_path.write_text(json.dumps({"format": 1, "key": kept["key"], "value": {
        **kept["value"], "sessions": sessions}}, separators=(",", ":")))
    assert run(dirs / "legacy", cache) == expected


def test_concurrent_replays_each_get_the_document_and_leave_a_whole_cache(dirs, tmp_path):
    """Four ``clawwatch replay`` processes at once on one cache: every document is the
    cold one (``--no-cache``, which leaves no cache), and the cache left behind answers the
    next replay."""
    env_cache = tmp_path / "xdg"
    command = [sys.executable, "-m", "monitor", "replay", "--state-dir", str(dirs / "sqlite"),
               "--json", "--jobs", "2"]
    env = {"XDG_CACHE_HOME": str(env_cache), "HOME": str(tmp_path / "home"),
           "PATH": "/usr/bin:/bin"}
    expected = subprocess.run([*command, "--no-cache"], cwd=REPO, env=env, text=True,
                              capture_output=True, check=True).stdout
    assert not env_cache.exists(), "--no-cache neither reads nor writes the cache"
    procs = [subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, text=True)
             for _ in range(4)]
    outputs = [p.communicate(timeout=300)[0] for p in procs]
    assert outputs == [expected] * 4
    again = subprocess.run(command, cwd=REPO, env=env, text=True, capture_output=True,
                           check=True).stdout
    assert again == expected
    assert not list((env_cache / "clawwatch" / "replay").glob(".replay-*")), "no temp files"


def test_a_temporary_file_a_killed_replay_left_is_removed_by_the_next(dirs, tmp_path):
    """A replay killed while it wrote a cache file (SIGTERM, SIGKILL) left its temporary file,
    as large as the cache file, for ever: each such kill added one. The next replay that
    writes removes those no one has written to for an hour, not one at work."""
    cache = tmp_path / "cache"
    cache.mkdir()
    left = cache / ".replay-killed1.tmp"
    left.write_bytes(b'{"format":2,"blake2b":"' + b"0" * 4096)
    hours_ago = left.stat().st_mtime - 2 * 3600
    os.utime(left, (hours_ago, hours_ago))
    at_work = cache / ".replay-atwork.tmp"
    at_work.write_bytes(b"{")
    assert run(dirs / "sqlite", cache) == cold(dirs / "sqlite", tmp_path)
    assert not left.exists()
    assert at_work.exists()

"""File sources at scale: bounded steps, few descriptors, cheap polls over many transcripts.

* a ``FileFollower`` given ``max_bytes`` reads a file in steps, exactly once, with partial lines
  kept pending across steps and rotated files still drained before the new file;
* a suspended follower (descriptor closed) resumes exactly after an append, a truncation or a
  rename-rotation that happened while it was closed;
* ``LegacySessionsSource`` emits the session index first, reads the newest transcripts first,
  stops each poll at its budget (``behind``) and keeps at most ``max_open_followers`` open;
* ``clawwatch replay`` over a few hundred transcripts succeeds under ``RLIMIT_NOFILE=128``.
"""

from __future__ import annotations

import json
import os
import random
import resource
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

from chaos_writer import assistant_tool_call, dumps, session_header

from monitor.events import (
    GatewayNotice,
    SessionInfo,
    SessionStart,
    SourceError,
    SourceNotice,
    ToolCall,
)
from monitor.sources import read_ahead
from monitor.sources.gateway_log import GatewayLogSource
from monitor.sources.legacy import LegacySessionsSource
from monitor.sources.regular import prefetch
from monitor.sources.tail import FileFollower
from monitor.sources.transcript_names import is_archive

REPO = Path(__file__).resolve().parent.parent


def append(path, data: bytes) -> None:
    with open(path, "ab") as handle:
        handle.write(data)


def texts(lines) -> list[str]:
    return [line.data.decode() for line in lines]


def descriptors_on(path) -> int:
    """How many of this process's descriptors have ``path`` open (Linux ``/proc``)."""
    target = os.path.realpath(path)
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == target:
                count += 1
        except OSError:
            continue
    return count


def descriptors_under(directory) -> int:
    prefix = os.path.realpath(directory) + os.sep
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith(prefix):
                count += 1
        except OSError:
            continue
    return count


def poll_in_steps(follower: FileFollower, max_bytes: int) -> tuple[list[str], int]:
    """Poll until not behind; return the lines and the number of polls."""
    lines: list[str] = []
    polls = 0
    while True:
        polls += 1
        lines += texts(follower.poll(max_bytes=max_bytes))
        assert follower.bytes_read <= max_bytes
        if not follower.behind:
            return lines, polls


# ------------------------------------------------------------------- budgeted follower


def test_budget_reads_a_file_in_steps_exactly_once(tmp_path):
    rng = random.Random(7)
    expected = [f"{n}:" + "x" * rng.choice((0, 3, 50, 700, 2500)) for n in range(400)]
    path = tmp_path / "big.log"
    append(path, "".join(f"{line}\n" for line in expected).encode() + b"tail-par")
    follower = FileFollower(str(path))
    lines, polls = poll_in_steps(follower, 1000)
    assert lines == expected
    assert polls >= path.stat().st_size // 1000
    assert follower.backlog_bytes == 0 and follower.pending_bytes == len(b"tail-par")
    append(path, b"tial\n")
    assert texts(follower.poll(max_bytes=3)) == []
    assert follower.behind
    assert poll_in_steps(follower, 3)[0] == ["tail-partial"]


def test_budget_reports_backlog_and_behind_only_while_more_is_readable(tmp_path):
    path = tmp_path / "x.log"
    append(path, b"a" * 99 + b"\n" + b"b" * 99 + b"\n")
    follower = FileFollower(str(path))
    assert follower.poll(max_bytes=100)[0].data == b"a" * 99
    assert follower.behind and follower.backlog_bytes == 100
    assert follower.poll(max_bytes=100)[0].data == b"b" * 99
    assert not follower.behind and follower.backlog_bytes == 0
    assert follower.poll(max_bytes=100) == [] and not follower.behind


def test_budget_drains_the_rotated_file_before_the_new_one(tmp_path):
    path = tmp_path / "x.log"
    append(path, b"a0\n")
    follower = FileFollower(str(path))
    assert texts(follower.poll()) == ["a0"]
    old = [f"a{n}" for n in range(1, 200)]
    append(path, "".join(f"{line}\n" for line in old).encode())
    os.rename(path, tmp_path / "x.1.log")
    append(path, b"b1\nb2\n")
    lines, polls = poll_in_steps(follower, 64)
    assert lines == [*old, "b1", "b2"]
    assert polls > 10


def test_budget_reads_a_copytruncate_copy_in_steps_before_the_new_lines(tmp_path):
    path = tmp_path / "x.log"
    append(path, b"r0\n")
    follower = FileFollower(str(path))
    assert texts(follower.poll()) == ["r0"]
    unread = [f"r{n}" for n in range(1, 100)]
    append(path, "".join(f"{line}\n" for line in unread).encode())
    shutil.copyfile(path, tmp_path / "x.log.1")
    os.truncate(path, 0)
    append(path, b"n1\nn2\nn3\n")
    lines, polls = poll_in_steps(follower, 50)
    assert lines == [*unread, "n1", "n2", "n3"]
    assert polls > 5


# ------------------------------------------------------------------ suspended follower


def test_suspended_follower_resumes_exactly_after_an_append(tmp_path):
    path = tmp_path / "x.jsonl"
    append(path, b"one\ntw")
    follower = FileFollower(str(path))
    assert texts(follower.poll()) == ["one"]
    assert [n.message for n in follower.take_notices()] == ["following from the start"]
    assert follower.suspend()
    assert follower.suspended and follower.open_descriptors == 0
    assert descriptors_on(path) == 0
    assert follower.poll() == [] and follower.suspended, "an unchanged file stays closed"
    assert follower.state().offset == 4
    append(path, b"o\nthree\n")
    lines = follower.poll()
    assert texts(lines) == ["two", "three"]
    assert [line.offset for line in lines] == [4, 8]
    assert not follower.suspended and descriptors_on(path) == 1
    assert follower.take_notices() == [], "a resume is not a new file"
    follower.close()


def test_suspended_follower_sees_a_truncation_while_closed(tmp_path):
    path = tmp_path / "x.jsonl"
    append(path, b"aaaa\nbbbb\n")
    follower = FileFollower(str(path))
    assert len(follower.poll()) == 2
    assert follower.suspend()
    with open(path, "r+b") as handle:
        handle.truncate(0)
    append(path, b"cc\n")
    assert texts(follower.poll()) == ["cc"]
    assert any("truncated while closed" in n.message for n in follower.take_notices())
    assert follower.suspend()
    with open(path, "wb") as handle:  # rewritten past the old offset: only the bytes differ
        handle.write(b"dd\nee\nff\n")
    assert texts(follower.poll()) == ["dd", "ee", "ff"]
    follower.close()


def test_suspended_follower_drains_a_rename_rotation_while_closed(tmp_path):
    path = tmp_path / "x.jsonl"
    append(path, b"a1\n")
    follower = FileFollower(str(path))
    assert texts(follower.poll()) == ["a1"]
    assert follower.suspend()
    append(path, b"a2\n")
    os.rename(path, tmp_path / "x.jsonl.reset.2026-01-01T00-00-00.000Z")
    append(path, b"b1\n")
    assert texts(follower.poll()) == ["a2", "b1"]
    assert any("rotated" in n.message for n in follower.take_notices())
    follower.close()


def set_mtime(path, seconds: float) -> None:
    os.utime(path, ns=(int(seconds * 1e9), int(seconds * 1e9)))


def test_a_generation_renamed_away_between_two_polls_is_read(tmp_path):
    """The path rotates twice before the next poll: the generation in between, already an
    archive, is read from its start, after the file it replaced and before the live one."""
    path = tmp_path / "x.jsonl"
    append(path, b"a1\n")
    follower = FileFollower(str(path), own_archives=is_archive)
    assert texts(follower.poll()) == ["a1"]
    append(path, b"a2\n")
    set_mtime(path, 1_000)
    os.rename(path, tmp_path / "x.jsonl.reset.2026-01-01T00-00-01.000Z")
    append(path, b"b1\nb2\n")
    set_mtime(path, 1_001)
    os.rename(path, tmp_path / "x.jsonl.reset.2026-01-01T00-00-02.000Z")
    append(path, b"c1\n")
    assert texts(follower.poll()) == ["a2", "b1", "b2", "c1"]
    assert any("x.jsonl.reset.2026-01-01T00-00-02.000Z before it was read" in notice.message
               for notice in follower.take_notices())
    append(path, b"c2\n")
    assert texts(follower.poll()) == ["c2"]
    follower.close()


def test_archives_older_than_the_file_followed_are_not_read(tmp_path):
    """Only generations newer than the file that rotated away count as missed: the archives
    from before it are history, and a follower without ``own_archives`` reads none."""
    path = tmp_path / "x.jsonl"
    older = tmp_path / "x.jsonl.reset.2025-01-01T00-00-00.000Z"
    append(older, b"old\n")
    set_mtime(older, 500)
    append(path, b"a1\n")
    set_mtime(path, 1_000)
    follower = FileFollower(str(path), own_archives=is_archive)
    plain = FileFollower(str(path))
    assert texts(follower.poll()) == texts(plain.poll()) == ["a1"]
    os.rename(path, tmp_path / "x.jsonl.reset.2026-01-01T00-00-01.000Z")
    between = tmp_path / "x.jsonl.reset.2026-01-01T00-00-02.000Z"
    append(between, b"b1\n")
    set_mtime(between, 1_001)
    append(path, b"c1\n")
    assert texts(follower.poll()) == ["b1", "c1"]
    assert texts(plain.poll()) == ["c1"]
    follower.close()
    plain.close()


def test_an_archive_the_follower_holds_or_drained_is_not_read_again(tmp_path):
    """An earlier generation written late through its old descriptor is newer by mtime than
    the next one when that rotates, but it is this follower's own, so not a missed one."""
    path = tmp_path / "x.jsonl"
    first = tmp_path / "x.jsonl.reset.2026-01-01T00-00-01.000Z"
    append(path, b"a1\n")
    follower = FileFollower(str(path), own_archives=is_archive)
    assert texts(follower.poll()) == ["a1"]
    os.rename(path, first)
    append(path, b"b1\n")
    set_mtime(path, 1_000)
    assert texts(follower.poll()) == ["b1"]
    append(first, b"a2\n")
    set_mtime(first, 2_000)
    assert texts(follower.poll()) == ["a2"]
    os.rename(path, tmp_path / "x.jsonl.reset.2026-01-01T00-00-02.000Z")
    append(path, b"c1\n")
    assert texts(follower.poll()) == ["c1"]
    follower.close()


def test_the_legacy_source_reads_a_transcript_generation_it_never_saw(tmp_path):
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    path = sessions / "11111111-2222-3333-4444-555555555555.jsonl"

    def write(first: int, last: int, mtime: float) -> None:
        append(path, b"".join((dumps(assistant_tool_call(f"c{i}", i)) + "\n").encode()
                              for i in range(first, last)))
        set_mtime(path, mtime)

    def call_ids(records) -> list[str]:
        return [r.call_id for r in records if isinstance(r, ToolCall)]

    write(0, 3, 1_000)
    source = LegacySessionsSource(str(sessions), "main")
    seen = call_ids(source.poll())
    write(3, 5, 1_001)
    os.rename(path, f"{path}.reset.2026-01-01T00-00-01.000Z")
    write(5, 8, 1_002)
    os.rename(path, f"{path}.reset.2026-01-01T00-00-02.000Z")
    write(8, 10, 1_003)
    for _ in range(3):
        seen += call_ids(source.poll())
    assert seen == [f"c{i}" for i in range(10)]
    source.close()


def test_follower_with_unread_bytes_or_a_rotated_file_is_not_suspended(tmp_path):
    path = tmp_path / "x.jsonl"
    append(path, b"a\n" * 100)
    follower = FileFollower(str(path))
    assert len(follower.poll(max_bytes=10)) == 5
    assert not follower.suspend()
    poll_in_steps(follower, 1000)
    append(path, b"late\n")
    assert not follower.suspend(), "the file grew since it was read"
    follower.close()


# --------------------------------------------------------------------- legacy source


def write_transcript(path: Path, session_id: str, calls: int, mtime: float | None = None) -> None:
    lines = [dumps(session_header(session_id))]
    lines += [dumps(assistant_tool_call(f"{session_id}-c{n}", n)) for n in range(calls)]
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    if mtime is not None:
        os.utime(path, (mtime, mtime))


def write_index(directory: Path, session_ids: list[str]) -> None:
    index = {f"agent:main:s{n}": {"sessionId": sid, "updatedAt": 1_700_000_000_000 + n,
                                  "sessionFile": str(directory / f"{sid}.jsonl")}
             for n, sid in enumerate(session_ids)}
    (directory / "sessions.json").write_text(json.dumps(index), encoding="utf-8")


def test_legacy_catch_up_emits_the_index_first_then_the_newest_transcripts(tmp_path):
    sids = [f"s{n:03d}" for n in range(30)]
    base = 1_700_000_000
    for n, sid in enumerate(sids):
        write_transcript(tmp_path / f"{sid}.jsonl", sid, 3, mtime=base + (n * 7919) % 30)
    write_index(tmp_path, sids)
    source = LegacySessionsSource(str(tmp_path), "main")
    events = source.poll()
    kinds = [isinstance(e, SessionInfo) for e in events if not isinstance(e, SourceNotice)]
    assert kinds == sorted(kinds, reverse=True), "every SessionInfo comes before transcript lines"
    assert kinds.count(True) == 30
    started = [e.session_id for e in events if isinstance(e, SessionStart)]
    by_mtime = sorted(sids, key=lambda sid: -os.stat(tmp_path / f"{sid}.jsonl").st_mtime)
    assert started == by_mtime
    source.close()


def test_legacy_catch_up_in_budget_steps_matches_one_unbounded_read(tmp_path):
    sids = [f"s{n:02d}" for n in range(12)]
    for n, sid in enumerate(sids):
        write_transcript(tmp_path / f"{sid}.jsonl", sid, 400 if n == 5 else 4)
    with open(tmp_path / "s03.jsonl", "ab") as handle:
        handle.write(b'{"type":"message","mess')  # a partial last line, finished later
    write_index(tmp_path, sids)
    whole = LegacySessionsSource(str(tmp_path), "main")
    whole.poll_budget_bytes = 1 << 30
    expected = Counter(e.origin for e in whole.poll() if not isinstance(e, SessionInfo)
                       and hasattr(e, "origin"))
    assert not whole.behind
    whole.close()

    stepped = LegacySessionsSource(str(tmp_path), "main")
    stepped.poll_budget_bytes = 4096
    seen: Counter = Counter()
    backlogs = []
    polls = 0
    while True:
        polls += 1
        events = stepped.poll()
        assert len([e for e in events if isinstance(e, ToolCall)]) < 40
        seen.update(e.origin for e in events if not isinstance(e, SessionInfo)
                    and hasattr(e, "origin"))
        backlogs.append(stepped.backlog_bytes)
        if not stepped.behind:
            break
    assert seen == expected and max(seen.values()) == 1
    total = sum(os.path.getsize(tmp_path / f"{sid}.jsonl") for sid in sids)
    assert polls >= total // 4096
    assert backlogs[0] > total // 2 and backlogs[-1] == 0
    assert backlogs == sorted(backlogs, reverse=True)
    with open(tmp_path / "s03.jsonl", "ab") as handle:
        handle.write(b'age":{"role":"user","content":"hi"}}\n')
    assert [type(e).__name__ for e in stepped.poll()] == ["UserMessage"]
    assert stepped.errors == 0
    stepped.close()


def test_legacy_keeps_few_descriptors_and_resumes_closed_transcripts(tmp_path):
    sids = [f"s{n:03d}" for n in range(150)]
    for sid in sids:
        write_transcript(tmp_path / f"{sid}.jsonl", sid, 2)
    write_index(tmp_path, sids)
    source = LegacySessionsSource(str(tmp_path), "main")
    source.max_open_followers = 16
    events = source.poll()
    assert len([e for e in events if isinstance(e, ToolCall)]) == 300
    assert descriptors_under(tmp_path) <= 16
    source.poll()
    for sid in sids[::10]:
        append(tmp_path / f"{sid}.jsonl", (dumps(assistant_tool_call(f"{sid}-late", 9)) + "\n")
               .encode())
    os.rename(tmp_path / "s001.jsonl", tmp_path / "s001.jsonl.reset.2026-01-01T00-00-00.000Z")
    write_transcript(tmp_path / "s001.jsonl", "s001", 1)
    events = source.poll()
    calls = sorted(e.call_id for e in events if isinstance(e, ToolCall))
    assert calls == sorted([f"{sid}-late" for sid in sids[::10]] + ["s001-c0"])
    assert not [e for e in events if isinstance(e, SourceError)]
    assert descriptors_under(tmp_path) <= 16 + 1, "plus the archive, open until it is quiet"
    source.close()


def test_legacy_new_transcript_is_found_although_the_listing_is_cached(tmp_path):
    write_transcript(tmp_path / "old.jsonl", "old", 1)
    os.utime(tmp_path, (1_700_000_000, 1_700_000_000))
    source = LegacySessionsSource(str(tmp_path), "main")
    assert len([e for e in source.poll() if isinstance(e, ToolCall)]) == 1
    listing = source._transcript_paths()
    assert source._transcript_paths() is listing, "an unchanged dir is not listed again"
    write_transcript(tmp_path / "new.jsonl", "new", 2)
    assert [e.call_id for e in source.poll() if isinstance(e, ToolCall)] == ["new-c0", "new-c1"]
    source.close()


def test_legacy_asks_for_the_next_unstarted_transcripts_to_be_read_ahead_once(tmp_path,
                                                                              monkeypatch):
    """On a cold page cache the next files' reads overlap the parsing of this one: each
    transcript not read yet is hinted once, before its first read, and a source that has
    read everything hints nothing more."""
    sids = [f"s{n:02d}" for n in range(40)]
    for sid in sids:
        write_transcript(tmp_path / f"{sid}.jsonl", sid, 6)
    write_index(tmp_path, sids)
    hinted: list[tuple[str, int, int]] = []
    first_read: dict[str, int] = {}
    monkeypatch.setattr(read_ahead, "prefetch",
                        lambda path, offset, length: hinted.append((path, offset, length)))
    source = LegacySessionsSource(str(tmp_path), "main")
    source.poll_budget_bytes = 4096
    while True:
        for event in source.poll():
            if isinstance(event, SessionStart):
                first_read.setdefault(event.origin.rpartition("@")[0], len(hinted))
        if not source.behind:
            break
    paths = [path for path, _, _ in hinted]
    assert len(paths) == len(set(paths)), "each file is hinted once"
    assert len(paths) >= len(sids) - 1, "every transcript but the first read is hinted"
    assert {(offset, length) for _, offset, length in hinted} == {(0, read_ahead.PREFETCH_BYTES)}
    assert len(set(first_read) & set(paths)) >= len(sids) - 1
    for path, at in first_read.items():
        if path in paths:
            assert paths.index(path) < at, f"{path} was hinted after its first read"
    for sid in sids[:5]:
        append(tmp_path / f"{sid}.jsonl", (dumps(assistant_tool_call(f"{sid}-late", 9)) + "\n")
               .encode())
    before = len(hinted)
    assert len([e for e in source.poll() if isinstance(e, ToolCall)]) == 5
    assert len(hinted) == before, "appends to transcripts already read are not hinted"
    source.close()


def test_prefetch_leaves_what_is_not_a_regular_file_alone(tmp_path):
    fifo = tmp_path / "trap.jsonl"
    os.mkfifo(fifo)
    prefetch(str(fifo), 0, 1 << 20)             # would block for ever if it opened for reading
    prefetch(str(tmp_path / "missing.jsonl"), 0, 1 << 20)
    regular = tmp_path / "s.jsonl"
    regular.write_bytes(b"{}\n" * 1000)
    prefetch(str(regular), 0, 1 << 20)
    assert regular.read_bytes() == b"{}\n" * 1000


# ------------------------------------------------------------------------ gateway log


def log_line(text: str) -> bytes:
    record = {"0": '{"subsystem":"test"}', "1": text, "_meta": {"logLevelName": "INFO"}}
    return (json.dumps(record) + "\n").encode()


def test_gateway_log_reads_rotations_and_the_live_file_in_budget_steps(tmp_path):
    log = tmp_path / "openclaw.log"
    written = []
    for name in ("openclaw.2.log", "openclaw.1.log", "openclaw.log"):
        for n in range(60):
            written.append(f"{name} {n}")
            append(tmp_path / name, log_line(written[-1]))
    source = GatewayLogSource(str(log), include_rotated=True)
    source.poll_budget_bytes = 700
    seen: list[str] = []
    behind_flags = []
    while True:
        seen += [e.message for e in source.poll() if isinstance(e, GatewayNotice)]
        behind_flags.append(source.behind)
        if not source.behind:
            break
    assert seen == written
    assert len(behind_flags) > 10 and source.backlog_bytes == 0
    append(log, log_line("later"))
    assert [e.message for e in source.poll() if isinstance(e, GatewayNotice)] == ["later"]
    source.close()


# ----------------------------------------------------------------- replay, few fds


def _limit_descriptors() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (128, 128))


def test_replay_of_hundreds_of_transcripts_under_a_descriptor_limit_of_128(tmp_path):
    sessions = tmp_path / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    sids = [f"{n:08d}-0000-4000-8000-000000000000" for n in range(300)]
    calls = {sid: 1 + n % 5 for n, sid in enumerate(sids)}
    for sid in sids:
        write_transcript(sessions / f"{sid}.jsonl", sid, calls[sid])
    write_index(sessions, sids)
    result = subprocess.run(
        [sys.executable, "-m", "monitor", "replay", "--state-dir", str(tmp_path), "--json"],
        capture_output=True, text=True, timeout=120, cwd=str(REPO),
        preexec_fn=_limit_descriptors)
    assert result.returncode == 0, result.stderr[-2000:]
    document = json.loads(result.stdout)
    [source] = [s for s in document["sources"] if s["kind"] == "jsonl"]
    assert source["errors"] == 0, source["error_samples"]
    total_calls = sum(calls.values())
    assert source["events"] == len(sids) + 2 * total_calls
    by_session = {s["session_id"]: s["tool_calls"] for s in document["sessions"]}
    assert by_session == calls


def test_live_polls_of_transcripts_already_read_never_look_at_the_storage_reads(tmp_path):
    """Whether read-ahead pays is judged by the files a catch-up starts, and only by them:
    polling transcripts already read (every poll of a live session) does not read the
    process's storage counters, which costs a read of /proc on each window of files."""
    sids = [f"s{n:02d}" for n in range(4)]
    for sid in sids:
        write_transcript(tmp_path / f"{sid}.jsonl", sid, 2)
    write_index(tmp_path, sids)
    source = LegacySessionsSource(str(tmp_path), "main")
    while source.poll() or source.behind:
        pass
    looks = []
    source._read_ahead._storage_reads = lambda: looks.append(1) or 0
    for turn in range(2 * read_ahead.WINDOW_FILES):
        for sid in sids:
            append(tmp_path / f"{sid}.jsonl",
                   (dumps(assistant_tool_call(f"{sid}-{turn}", turn)) + "\n").encode())
        assert len([e for e in source.poll() if isinstance(e, ToolCall)]) == len(sids)
    assert looks == []
    source.close()


def test_read_ahead_stops_while_files_come_from_the_page_cache(tmp_path, monkeypatch):
    """Hints cost system calls: after a window of files read without the disk none are
    given, after a window read from the disk they are again; where the storage reads
    cannot be known they always are."""
    hinted: list[str] = []
    monkeypatch.setattr(read_ahead, "prefetch", lambda path, offset, length: hinted.append(path))
    paths = [str(tmp_path / f"{n}.jsonl") for n in range(4 * read_ahead.WINDOW_FILES)]
    followers = {path: FileFollower(path) for path in paths}
    storage = [1000]
    reading = read_ahead.ReadAhead(lambda: storage[0])

    def read_window(start: int, from_disk: bool) -> int:
        before = len(hinted)
        for index in range(start, start + read_ahead.WINDOW_FILES):
            reading.ahead_of(paths, index, set(paths[index + 1:]), followers)
            if from_disk:
                storage[0] += 10_000
            reading.started(paths[index], 10_000)
        return len(hinted) - before

    window = read_ahead.WINDOW_FILES
    assert read_window(0, from_disk=False) > 0 and not reading.cold
    assert read_window(window, from_disk=True) == 0 and reading.cold
    assert read_window(2 * window, from_disk=True) >= window
    unknowable = read_ahead.ReadAhead(lambda: None)
    for index in range(2 * window):
        unknowable.started(paths[index], 10_000)
    assert unknowable.cold

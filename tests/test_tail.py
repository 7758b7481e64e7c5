"""FileFollower: complete lines exactly once across rotation, truncation and restarts."""

from __future__ import annotations

import os
import shutil

from monitor.sources.tail import FileFollower
from monitor.sources.tail_state import FollowerState


def append(path, data: bytes) -> None:
    with open(path, "ab") as handle:
        handle.write(data)


def texts(lines) -> list[str]:
    return [line.data.decode() for line in lines]


def test_only_complete_lines_are_emitted(tmp_path):
    path = tmp_path / "x.log"
    append(path, b"one\ntw")
    follower = FileFollower(str(path))
    assert texts(follower.poll()) == ["one"]
    assert follower.poll() == []
    append(path, b"o\nthree")
    lines = follower.poll()
    assert texts(lines) == ["two"]
    assert lines[0].offset == 4
    append(path, b"\n")
    assert texts(follower.poll()) == ["three"]


def test_rename_rotation_drains_old_file_before_new(tmp_path):
    path = tmp_path / "x.log"
    append(path, b"a1\n")
    follower = FileFollower(str(path))
    assert texts(follower.poll()) == ["a1"]
    append(path, b"a2\na3\n")
    os.rename(path, tmp_path / "x.1.log")
    append(path, b"b1\n")
    assert texts(follower.poll()) == ["a2", "a3", "b1"]
    assert any("rotated" in n.message for n in follower.take_notices())


def test_follower_knows_the_rotated_file_it_drained(tmp_path):
    """A source asks ``reads`` before opening an archive; a closed file counts only at the
    size it was read to (an inode number can be reused by another file)."""
    path, rotated = tmp_path / "x.log", tmp_path / "x.log.reset.1"
    append(path, b"a1\n")
    follower = FileFollower(str(path), rotated_grace_seconds=0)
    follower.poll()
    os.rename(path, rotated)
    append(rotated, b"a2\n")
    assert follower.reads(os.stat(rotated))
    assert texts(follower.poll()) == ["a2"]
    assert follower.open_descriptors == 0
    assert follower.reads(os.stat(rotated))
    append(rotated, b"not what was read\n")
    assert not follower.reads(os.stat(rotated))
    assert not follower.reads(os.stat(tmp_path))


def test_writer_finishing_a_partial_line_in_the_rotated_file(tmp_path):
    path = tmp_path / "x.log"
    writer = open(path, "ab", buffering=0)
    writer.write(b"a1\na2-par")
    follower = FileFollower(str(path), rotated_grace_seconds=60)
    assert texts(follower.poll()) == ["a1"]
    os.rename(path, tmp_path / "x.1.log")
    append(path, b"b1\n")
    assert texts(follower.poll()) == ["b1"]
    writer.write(b"tial\n")
    writer.close()
    assert texts(follower.poll()) == ["a2-partial"]


def test_truncation_restarts_at_zero_and_says_so(tmp_path):
    path = tmp_path / "x.log"
    append(path, b"first line\nsecond line\n")
    follower = FileFollower(str(path))
    assert len(follower.poll()) == 2
    with open(path, "wb") as handle:
        handle.write(b"new\n")
    assert texts(follower.poll()) == ["new"]
    assert any("truncated" in n.message for n in follower.take_notices())


def test_truncate_and_regrow_past_offset_is_detected(tmp_path):
    path = tmp_path / "x.log"
    append(path, b"old-1\nold-2\n")
    follower = FileFollower(str(path))
    assert len(follower.poll()) == 2
    with open(path, "wb") as handle:
        handle.write(b"fresh-1\nfresh-2\nfresh-3\n")
    assert texts(follower.poll()) == ["fresh-1", "fresh-2", "fresh-3"]


def test_copytruncate_recovers_unread_tail_from_the_copy(tmp_path):
    path = tmp_path / "x.log"
    append(path, b"r1\n")
    follower = FileFollower(str(path))
    assert texts(follower.poll()) == ["r1"]
    append(path, b"r2\nr3\n")
    shutil.copyfile(path, tmp_path / "x.log.1")
    with open(path, "r+b") as handle:
        handle.truncate(0)
    append(path, b"n1\n")
    assert texts(follower.poll()) == ["r2", "r3", "n1"]


def test_delete_and_recreate(tmp_path):
    path = tmp_path / "x.log"
    append(path, b"a\n")
    follower = FileFollower(str(path))
    assert texts(follower.poll()) == ["a"]
    append(path, b"b\n")
    os.unlink(path)
    assert texts(follower.poll()) == ["b"]
    append(path, b"c\n")
    assert texts(follower.poll()) == ["c"]


def test_resume_from_checkpoint_reports_nothing_twice(tmp_path):
    path = tmp_path / "x.log"
    append(path, b"1\n2\n3")
    follower = FileFollower(str(path))
    assert texts(follower.poll()) == ["1", "2"]
    saved = FollowerState.from_json(follower.state().as_json())
    follower.close()
    append(path, b"\n4\n")
    resumed = FileFollower(str(path), resume=saved)
    assert texts(resumed.poll()) == ["3", "4"]


def test_resume_after_rotation_while_stopped_drains_the_rotated_file(tmp_path):
    path = tmp_path / "x.log"
    append(path, b"1\n")
    follower = FileFollower(str(path))
    follower.poll()
    saved = follower.state()
    follower.close()
    append(path, b"2\n")
    os.rename(path, tmp_path / "x.1.log")
    append(path, b"3\n")
    resumed = FileFollower(str(path), resume=saved)
    assert texts(resumed.poll()) == ["2", "3"]


def test_resume_after_truncation_while_stopped(tmp_path):
    path = tmp_path / "x.log"
    append(path, b"aaaa\nbbbb\n")
    follower = FileFollower(str(path))
    follower.poll()
    saved = follower.state()
    follower.close()
    with open(path, "wb") as handle:
        handle.write(b"cccc\ndddd\neeee\n")
    resumed = FileFollower(str(path), resume=saved)
    assert texts(resumed.poll()) == ["cccc", "dddd", "eeee"]


def test_overlong_line_is_skipped_and_reported(tmp_path):
    path = tmp_path / "x.log"
    follower = FileFollower(str(path), max_line_bytes=100)
    append(path, b"ok\n" + b"x" * 250)
    assert texts(follower.poll()) == ["ok"]
    append(path, b"x" * 50 + b"\nafter\n")
    assert texts(follower.poll()) == ["after"]
    errors = [n for n in follower.take_notices() if n.error]
    assert len(errors) == 1 and "longer than 100" in errors[0].message
    assert errors[0].where == "offset 3"


def test_file_that_appears_later(tmp_path):
    path = tmp_path / "later.log"
    follower = FileFollower(str(path))
    assert follower.poll() == []
    append(path, b"hello\n")
    assert texts(follower.poll()) == ["hello"]

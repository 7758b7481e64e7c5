"""A copytruncate that lands inside a poll, right after the follower read to the end of the file.

The follower fingerprints the bytes before its offset to notice truncation and to recognise the
copy that holds its unread tail. That fingerprint must describe the bytes it read, not the bytes
on disk a moment later: a copytruncate between the read and a re-read of the disk gives a
fingerprint of the new file, so the copy is not recognised (the lines written after the read and
before the copy are lost) or, once the new file outgrows the old offset, the truncation is not
noticed at all. The same holds for the fingerprint a checkpoint saves.

The files and the copytruncate are real; a wrapper around ``os.pread`` only picks the moment: the
first read of the live file that returns less than it asked for (it reached the end).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from monitor.sources.tail import FileFollower


def record(number: int) -> bytes:
    return f'{{"id":"r{number:05d}","filler":"{"x" * 60}"}}\n'.encode()


def append(path: Path, numbers: range) -> None:
    with open(path, "ab") as handle:
        handle.write(b"".join(record(n) for n in numbers))


def ids(lines) -> list[int]:
    return [int(line.data[8:13]) for line in lines]


@pytest.mark.parametrize("restart_after", [False, True], ids=["live", "checkpointed"])
@pytest.mark.parametrize("regrown_past_offset", [False, True], ids=["shorter", "regrown"])
def test_copytruncate_right_after_a_read_to_the_end_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, regrown_past_offset: bool,
    restart_after: bool,
) -> None:
    log = tmp_path / "gw.log"
    append(log, range(0, 50))
    follower = FileFollower(str(log))
    assert ids(follower.poll()) == list(range(0, 50))
    append(log, range(50, 60))
    live_inode = log.stat().st_ino
    new_records = range(1000, 1200) if regrown_past_offset else range(1000, 1005)

    def copytruncate_by_the_writer() -> None:
        append(log, range(60, 70))
        shutil.copyfile(log, tmp_path / "gw.log.1")
        os.truncate(log, 0)
        append(log, new_records)

    real_pread = os.pread
    armed = [True]

    def pread(fd: int, length: int, offset: int) -> bytes:
        data = real_pread(fd, length, offset)
        if armed[0] and len(data) < length and os.fstat(fd).st_ino == live_inode:
            armed[0] = False
            copytruncate_by_the_writer()
        return data

    monkeypatch.setattr(os, "pread", pread)
    seen = ids(follower.poll())
    assert not armed[0], "the follower never read to the end of the file"
    offset_before_the_copy = 60 * len(record(0))
    assert (log.stat().st_size > offset_before_the_copy) == regrown_past_offset
    if restart_after:
        saved = follower.state()
        follower.close()
        follower = FileFollower(str(log), resume=saved)
    seen += ids(follower.poll())
    seen += ids(follower.poll())
    follower.close()
    assert seen == [*range(50, 70), *new_records]

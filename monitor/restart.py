"""Restart without forgetting: what a resumed ``watch`` already reported.

A ``watch`` that resumes from its checkpoint reads the transcripts again from their start, so
every session's detector windows, call numbers, token totals and findings are exactly what
they were when it stopped (a loop at call 15 still turns critical at call 20), and reports only
what lies beyond the checkpoint: ``ReportedBefore`` tells, for each event, whether the run
that wrote the checkpoint had read it already. The gateway log resumes at its checkpoint (its
lines only add to findings, and are not read twice).

History older than ``history.active_within`` is counted without detectors, so reading it again
costs what the board's first scan costs.
"""

from __future__ import annotations

import os
import re

from monitor.sources.regular import open_regular
from monitor.sources.saved import saved_seqs
from monitor.sources.tail_state import (
    FINGERPRINT_BYTES,
    FollowerState,
    bytes_before,
    digest,
    saved_positions,
)

#: Checkpoint keys of sources that are read again from their start on a restart.
REWOUND_KINDS = ("jsonl", "sqlite")
#: What follows ``DATABASE#`` in a row's origin: its session and seq, and the index of a
#: call within the row.
_SESSION_SEQ = re.compile(r"(.*):(\d{1,20})(?:#\d+)?", re.DOTALL)


def rewound(checkpoint: dict | None) -> dict | None:
    """The checkpoint a resumed ``watch`` gives its sources: the gateway log's positions
    only (the transcripts are read again from their start)."""
    if checkpoint is None:
        return None
    return {key: value for key, value in checkpoint.items()
            if key.partition(":")[0] not in REWOUND_KINDS}


class ReportedBefore:
    """``reported_before(event)``: the event lies before the checkpoint's position in its
    transcript (a file's offset, while the file is the one the checkpoint saw; a session's
    highest seq in an agent database)."""

    def __init__(self, checkpoint: dict) -> None:
        self._files: dict[str, FollowerState] = {}
        #: path -> (identity, whether its bytes before the saved offset are the saved ones)
        self._unchanged: dict[str, tuple[tuple[int, int], bool]] = {}
        self._seqs: dict[tuple[str, str], int] = {}
        for key, value in checkpoint.items():
            kind, _, path = key.partition(":")
            if kind not in REWOUND_KINDS or type(value) is not dict:
                continue
            self._files.update(saved_positions(value.get("files")))
            for sid, seq in saved_seqs(value.get("seq")).items():
                self._seqs[(path, sid)] = seq
        self._databases = {database for database, _ in self._seqs}

    def __call__(self, event) -> bool:
        origin = getattr(event, "origin", "")
        if not isinstance(origin, str) or not origin:
            return False
        path, at, where = origin.rpartition("@")
        saved = self._files.get(path) if at else None
        if saved is not None:
            offset = _number(where.partition("#")[0])
            return offset is not None and offset < saved.offset \
                and self._is_saved_file(path, saved)
        return self._row_before_saved_seq(origin)

    def _row_before_saved_seq(self, origin: str) -> bool:
        """Whether ``origin``, ``DATABASE#SESSION:SEQ`` (``#INDEX`` after it for a call of
        that row), names a row at or before its session's saved seq. A database's path may
        hold ``#`` or ``@`` (a home dir ``/home/me@corp.example``), and a session id anything:
        the database is one the checkpoint names that ``origin`` starts with, and the seq is
        read from the end."""
        hash_ = origin.find("#")
        while hash_ != -1:
            database = origin[:hash_]
            if database in self._databases:
                row = _SESSION_SEQ.fullmatch(origin, hash_ + 1)
                if row is not None:
                    saved_seq = self._seqs.get((database, row.group(1)))
                    return saved_seq is not None and int(row.group(2)) <= saved_seq
            hash_ = origin.find("#", hash_ + 1)
        return False

    def _is_saved_file(self, path: str, saved: FollowerState) -> bool:
        """Whether the file at ``path`` is the one the checkpoint saw, up to its saved
        offset: the same identity (looked at each time: a file replaced since is another
        file, whose lines were never reported) and, checked once per identity, the same
        bytes before that offset (a file truncated and written again in place keeps its
        inode, and its new lines were never reported either)."""
        identity = _identity(path)
        if identity != (saved.dev, saved.ino):
            return False
        known = self._unchanged.get(path)
        if known is None or known[0] != identity:
            known = (identity, _fingerprint_before(path, saved.offset) == saved.fingerprint)
            self._unchanged[path] = known
        return known[1]


def _identity(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _fingerprint_before(path: str, offset: int) -> str | None:
    """The fingerprint (``tail_state.digest``) of the bytes before ``offset`` in ``path``
    now; None when it cannot be read or is shorter than ``offset``."""
    try:
        fd = open_regular(path)
    except OSError:
        return None
    try:
        data = bytes_before(fd, offset)
    finally:
        os.close(fd)
    return digest(data) if len(data) == min(offset, FINGERPRINT_BYTES) else None


def _number(text: str) -> int | None:
    return int(text) if text.isdigit() and len(text) <= 20 else None

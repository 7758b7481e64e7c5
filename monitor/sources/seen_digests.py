"""Every key a source has read, as 64-bit digests: a copy read long after is known as one.

Claude Code starts a resumed session's new file with copies of the earlier lines (the same
``message.id``/``requestId``, the same ``tool_use`` ids), and ccusage counts each reply once
across all files. The recent structures that dedupe them (``UsageLedger``, the sources'
call maps) keep only the last few thousand keys, and they need the key itself and what was
counted for it; a copy read after more keys than that would be counted again, whole. This set
remembers the rest for 8 bytes a key: the digest of every key added.

``SeenDigests`` keeps the newest digests in a small ``set`` and, every ``RECENT_LIMIT`` of
them, moves them into a sorted ``array('Q')`` run searched with ``bisect``; runs of equal size
are merged (a binary counter, no run above half the bound), so a lookup searches about
log2(count / RECENT_LIMIT) runs and the merges cost O(n log n) in all.

The digest is the first 8 bytes of BLAKE2b over a length-prefixed encoding of the key's
strings (stable across processes, unlike ``hash()``). With ``MAX_DIGESTS`` kept, a new key is
taken for a copy (a collision) with a chance below 1e6 / 2**64, about 5e-14; any collision at
all among a million keys has a chance of about 3e-8.

Bound: past ``MAX_DIGESTS`` (8 MB of runs; a source may hold three such sets) the oldest runs
are forgotten until at most half the bound remains. A million replies or calls is years of
heavy use; input written to get past it can make copies of the forgotten keys count again,
never anything else.

Checkpoint: a restart that resumes at the saved positions (``watch --from-start`` with a
checkpoint; a plain restart reads the transcripts again from their start and so meets every
original again) knows only what the checkpoint holds. Each set keeps its newest
``DIGESTS_CHECKPOINTED`` digests in the order they were added (a ring, 8 bytes each) and the
checkpoint holds them as base64 of little-endian 64-bit words: 4,096 digests are 32 KiB, 44 KB
of JSON per set, 131 KB for the Claude Code source's three. ``watch`` saves the whole
checkpoint after every step that reported something (up to once a second while a session
works), so the bound is paid at every save. What it gives up: a copy of a key read more than
``DIGESTS_CHECKPOINTED`` keys of its kind (across all sessions) before the restart counts again
after it; a session resumed is almost always one of the last few used, whose keys are newer.
"""

from __future__ import annotations

import base64
import hashlib
import sys
from array import array
from bisect import bisect_left
from heapq import merge
from typing import Any

#: Digests kept (8 bytes each: 8 MB), more than the replies or calls of years of heavy use.
MAX_DIGESTS = 1_000_000
#: Newest digests of each set written into a checkpoint (the module docstring says why this many).
DIGESTS_CHECKPOINTED = 4096
#: Newest digests held in a set (about 60 bytes each) before they become a sorted run.
RECENT_LIMIT = 32_768
_ABSENT = b"\xff" * 8


def key_digest(*parts: str | None) -> int:
    """A stable 64-bit digest of a key of strings (None is distinct from every string)."""
    hasher = hashlib.blake2b(digest_size=8)
    for part in parts:
        if part is None:
            hasher.update(_ABSENT)
            continue
        data = part.encode("utf-8", "surrogatepass")
        hasher.update(len(data).to_bytes(8, "little"))
        hasher.update(data)
    return int.from_bytes(hasher.digest(), "little")


class SeenDigests:
    """A set of 64-bit digests, 8 bytes each, holding at most ``max_digests``; the newest
    ``checkpointed`` of them, in the order they were added, go into a checkpoint."""

    __slots__ = ("_newest", "_newest_next", "_recent", "_run_total", "_runs", "checkpointed",
                 "max_digests", "recent_limit")

    def __init__(self, max_digests: int = MAX_DIGESTS, recent_limit: int = RECENT_LIMIT,
                 checkpointed: int | None = None) -> None:
        self.max_digests = max_digests
        self.recent_limit = recent_limit
        self.checkpointed = DIGESTS_CHECKPOINTED if checkpointed is None else checkpointed
        self._recent: set[int] = set()
        self._runs: list[array] = []              # oldest first, each sorted
        self._run_total = 0
        self._newest = array("Q")                 # a ring of the newest ``checkpointed``
        self._newest_next = 0                     # its oldest slot, once it is full

    def __len__(self) -> int:
        return self._run_total + len(self._recent)

    def __contains__(self, digest: int) -> bool:
        if digest in self._recent:
            return True
        for run in self._runs:
            index = bisect_left(run, digest)
            if index < len(run) and run[index] == digest:
                return True
        return False

    def add(self, digest: int) -> bool:
        """Add ``digest``; whether it was not there yet (one search serves both)."""
        if digest in self:
            return False
        self._recent.add(digest)
        if len(self._newest) < self.checkpointed:
            self._newest.append(digest)
        elif self.checkpointed > 0:
            self._newest[self._newest_next] = digest
            self._newest_next = (self._newest_next + 1) % self.checkpointed
        if len(self._recent) >= self.recent_limit or len(self) > self.max_digests:
            self._seal_recent()
        return True

    def _seal_recent(self) -> None:
        run = array("Q", sorted(self._recent))
        self._recent = set()
        largest = max(self.max_digests // 2, 1)
        while self._runs and len(self._runs[-1]) <= len(run) \
                and len(self._runs[-1]) + len(run) <= largest:
            run = array("Q", merge(self._runs.pop(), run))
        self._runs.append(run)
        self._run_total = sum(len(kept) for kept in self._runs)
        if len(self) > self.max_digests:
            while self._runs and len(self) > self.max_digests // 2:
                self._run_total -= len(self._runs.pop(0))

    def checkpoint_text(self) -> str:
        """The newest ``checkpointed`` digests, oldest first, as base64 of little-endian
        64-bit words."""
        ordered = self._newest[self._newest_next:] + self._newest[:self._newest_next]
        if sys.byteorder == "big":
            ordered.byteswap()
        return base64.b64encode(ordered.tobytes()).decode("ascii")

    def restore_checkpoint_text(self, saved: Any) -> None:
        """Add the digests ``checkpoint_text`` gave, the newest ``checkpointed`` of them;
        anything else (a checkpoint is not trusted) adds nothing."""
        if not isinstance(saved, str):
            return
        try:
            raw = base64.b64decode(saved, validate=True)
        except ValueError:                       # binascii.Error, or not ASCII
            return
        if len(raw) % 8:
            return
        digests = array("Q")
        digests.frombytes(raw[-self.checkpointed * 8:] if self.checkpointed > 0 else b"")
        if sys.byteorder == "big":
            digests.byteswap()
        for digest in digests:
            self.add(digest)


def digests_state(sets: dict[str, SeenDigests]) -> dict[str, str]:
    """``checkpoint_text`` of each named set: what a source saves of the keys it has read."""
    return {name: seen.checkpoint_text() for name, seen in sets.items()}


def restore_digests(sets: dict[str, SeenDigests], saved: Any) -> None:
    """Give each named set what ``digests_state`` saved for it (an old checkpoint, without
    them, or one of the wrong shape, gives nothing)."""
    if not isinstance(saved, dict):
        return
    for name, seen in sets.items():
        seen.restore_checkpoint_text(saved.get(name))

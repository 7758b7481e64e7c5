"""What a source that shares its first scan's history with reader processes does
(``history_split``), whatever it reads: the legacy source (``legacy_split``) and the SQLite
one (``sqlite_split``) say which of their files or sessions may be given, and how to read
on from a part taken."""

from __future__ import annotations

import os
import time

from monitor.sources.history_reader import PART_BYTES, HistoryPart, HistoryRequest
from monitor.sources.history_split import MIN_SPLIT_BYTES, HistorySplit
from monitor.sources.transcript_light import SummedRun

#: Waiting for a reader's next part, at least this long once a step's deadline passed: the
#: source has nothing else to do then, and returning at once would spin.
MIN_WAIT_SECONDS = 0.02
#: A reader that sends nothing the source waits for this long (stopped, starved, stuck on a
#: file) is given up: the source reads the rest itself.
READER_PATIENCE_SECONDS = 30.0


class SharesHistory:
    """Mixed into a source (before ``Source``)."""

    #: Reader processes a first scan may start (``history_split.reader_processes``); 0: none.
    history_readers: int = 0
    min_split_bytes: int = MIN_SPLIT_BYTES
    split_part_bytes: int = PART_BYTES
    _split: HistorySplit | None = None
    _split_planned: bool = False
    #: Since when the source has been waiting for a reader's next part (None: not waiting).
    _waiting_since: float | None = None
    #: The monitor folds quietly (``Monitor.quiet``): readers send history summed, which
    #: gives no output records.
    _quiet: bool = False

    def note_quiet(self, quiet: bool) -> None:
        """Readers are used only while the monitor is quiet: once it is not, the source
        reads on from the last part taken of everything it gave."""
        self._quiet = quiet
        if not quiet:
            self._close_split()

    def _may_split(self) -> bool:
        return bool(self.history_readers and self._quiet) and self.count_only is not None \
            and self.only_sessions is None

    def _split_between(self, kind: str, keys: list[tuple[str, str]]) -> None:
        """Start the readers of ``keys`` (``(path or session id, session id)`` in poll
        order); none when no process can be started."""
        request = HistoryRequest(os.getpid(), kind, self.path, self.agent_id,
                                 getattr(self, "include_archives", False),
                                 self.count_only.since, self.split_part_bytes)
        try:
            self._split = HistorySplit(request, keys, self.history_readers)
        except OSError:
            self._split = None

    def _take_split(self, key: str, sid: str, out: list, budget: int) -> tuple[int, bool]:
        """Fold the parts of ``key`` a reader reads, up to ``budget`` bytes: the bytes taken,
        and whether the source reads it itself from now on (every part taken, or the rest
        given back). A part is taken only while the monitor holds the session as history;
        the source reads on from the end of each part taken (``_resume_from``)."""
        split = self._split
        taken = 0
        while taken < budget:
            if not self.only_counts(sid):
                split.give_back(key)
                break
            wait = None
            if self.deadline is not None:
                wait = max(self.deadline - time.monotonic(), MIN_WAIT_SECONDS)
            part = split.take(key, wait)
            if part is None:
                now = time.monotonic()
                if self._waiting_since is None:
                    self._waiting_since = now
                if now - self._waiting_since < READER_PATIENCE_SECONDS:
                    return taken, False
                self._close_split()
                return taken, True
            self._waiting_since = None
            if part is False:
                break
            self._resume_from(key, part)
            taken += part.size
            out.extend(part.events)
            self.add_counts(part.event_count, part.error_count, part.error_samples)
            if part.last:
                break
        if split.done:
            split.close()
            self._split = None
        return taken, key not in split

    def _resume_from(self, key: str, part: HistoryPart) -> None:
        raise NotImplementedError

    def _summing(self, sid: str, out: list) -> SummedRun | None:
        """Where the entries of ``sid`` read next go while the monitor folds quietly: its
        counted-only ones summed (as a reader sends them), which folds in a fraction of the
        time; None when it is not quiet."""
        if not self._quiet or self.count_only is None:
            return None
        return SummedRun(self, sid, out)

    def _close_split(self) -> None:
        if self._split is not None:
            self._split.close()
            self._split = None


"""The legacy source's side of a split first scan (``history_split``): which transcripts it
gives to reader processes, and folding their parts in its poll order."""

from __future__ import annotations

import os
import time

from monitor.sources.history_reader import PART_BYTES, HistoryRequest
from monitor.sources.history_split import MIN_SPLIT_BYTES, HistorySplit
from monitor.sources.tail import FileFollower
from monitor.sources.transcript_names import is_archive

#: Waiting for a reader's next part, at least this long once a step's deadline passed: the
#: source has nothing else to do then, and returning at once would spin.
MIN_WAIT_SECONDS = 0.02


class LegacySplitting:
    """Mixed into ``LegacySessionsSource``."""

    #: Reader processes a first scan may start (``history_split.reader_processes``); 0: none.
    history_readers: int = 0
    min_split_bytes: int = MIN_SPLIT_BYTES
    split_part_bytes: int = PART_BYTES
    _split: HistorySplit | None = None
    _split_planned: bool = False
    #: The monitor folds quietly (``Monitor.quiet``): readers send history summed, which
    #: gives no output records.
    _quiet: bool = False

    def note_quiet(self, quiet: bool) -> None:
        """Readers are used only while the monitor is quiet: once it is not, the source
        reads on from the last part taken of every file."""
        self._quiet = quiet
        if not quiet:
            self._close_split()

    def _start_split(self) -> None:
        """Once, at the first poll that has a listing: give the transcripts that are only
        history by the monitor's view (unread, not running, the only transcript of their
        session) to reader processes, interleaved with the ones read here."""
        self._split_planned = True
        count_only = self.count_only
        if not (self.history_readers and self._quiet) or count_only is None \
                or self.only_sessions is not None:
            return
        per_session: dict[str, int] = {}
        for sid in self._session_ids.values():
            per_session[sid] = per_session.get(sid, 0) + 1
        candidates: list[tuple[str, int]] = []
        for path in self._order:
            sid = self._session_ids[path]
            if path not in self._unstarted or self._followers[path].state() is not None \
                    or is_archive(path) or per_session[sid] != 1 \
                    or not self._only_history(sid):
                continue
            if self._unstarted[path]:
                candidates.append((path, self._unstarted[path]))
        if sum(size for _, size in candidates) < self.min_split_bytes:
            return
        request = HistoryRequest(os.getpid(), self.path, self.agent_id, self.include_archives,
                                 count_only.since, self.split_part_bytes)
        try:
            self._split = HistorySplit(request, [(path, self._session_ids[path])
                                                 for path, _ in candidates],
                                       self.history_readers)
        except OSError:
            self._split = None

    def _only_history(self, sid: str) -> bool:
        count_only = self.count_only
        return count_only is not None and sid not in self.running_sessions \
            and count_only.session_is_history(sid)

    def _take_split(self, path: str, sid: str, out: list, budget: int) -> tuple[int, bool]:
        """Fold the parts of ``path`` a reader reads, up to ``budget`` bytes: the bytes taken,
        and whether the source reads the file itself from now on (every part taken, or the
        rest given back). A part is taken only while the monitor holds the session as
        history; the follower is moved to the end of each part taken."""
        split = self._split
        taken = 0
        while taken < budget:
            if not self._only_history(sid):
                split.give_back(path)
                break
            wait = None
            if self.deadline is not None:
                wait = max(self.deadline - time.monotonic(), MIN_WAIT_SECONDS)
            part = split.take(path, wait)
            if part is None:
                return taken, False
            if part is False:
                break
            before = self._followers[path].resume_offset
            self._followers[path] = FileFollower(
                path, resume=part.state, suspended=part.suspended,
                own_archives=None if self.include_archives else is_archive)
            taken += max(0, self._followers[path].resume_offset - before)
            out.extend(part.events)
            self.add_counts(part.event_count, part.error_count, part.error_samples)
            self._held_notices += part.notices
            if part.last:
                break
        if split.done:
            split.close()
            self._split = None
        return taken, path not in split

    def _close_split(self) -> None:
        if self._split is not None:
            self._split.close()
            self._split = None

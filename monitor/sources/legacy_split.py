"""The legacy source's side of a split first scan (``split_source``): which transcripts it
gives to reader processes, and reading on from a part taken."""

from __future__ import annotations

from monitor.sources.history_reader import HistoryPart
from monitor.sources.split_source import SharesHistory
from monitor.sources.tail import FileFollower
from monitor.sources.transcript_names import is_archive


class LegacySplitting(SharesHistory):
    """Mixed into ``LegacySessionsSource``."""

    def _start_split(self) -> None:
        """Once, at the first poll that has a listing: give the transcripts that are only
        history by the monitor's view (unread, not running, the only transcript of their
        session) to reader processes, interleaved with the ones read here."""
        self._split_planned = True
        if not self._may_split():
            return
        per_session: dict[str, int] = {}
        for sid in self._session_ids.values():
            per_session[sid] = per_session.get(sid, 0) + 1
        candidates: list[tuple[str, int]] = []
        for path in self._order:
            sid = self._session_ids[path]
            if path not in self._unstarted or self._followers[path].state() is not None \
                    or is_archive(path) or per_session[sid] != 1 \
                    or not self.only_counts(sid):
                continue
            if self._unstarted[path]:
                candidates.append((path, self._unstarted[path]))
        if sum(size for _, size in candidates) >= self.min_split_bytes:
            self._split_between("jsonl", [(path, self._session_ids[path])
                                          for path, _ in candidates])

    def _resume_from(self, path: str, part: HistoryPart) -> None:
        """The file's follower starts where the part ends (suspended after the last)."""
        self._followers[path] = FileFollower(
            path, resume=part.state, suspended=part.suspended,
            own_archives=None if self.include_archives else is_archive)
        self._held_notices += part.notices

"""The SQLite source's side of a split first scan (``split_source``): which sessions it gives
to reader processes, and reading on from a part taken."""

from __future__ import annotations

from monitor.sources.history_reader import HistoryPart
from monitor.sources.split_source import SharesHistory

#: Decoded bytes a row is taken to hold when deciding whether a split is worth it.
ROW_BYTES_GUESS = 1024


class SqliteSplitting(SharesHistory):
    """Mixed into ``SqliteAgentSource``."""

    def _start_split(self) -> None:
        """Once, at the first poll with sessions to read: give the sessions that are only
        history by the monitor's view (no row read yet, not running) to reader processes,
        interleaved with the ones read here, in the order they are read."""
        self._split_planned = True
        if not self._may_split():
            return
        candidates = [(sid, top_seq + 1) for sid, (_, top_seq) in sorted(
                          self._pending.items(), key=lambda item: item[1][0], reverse=True)
                      if sid not in self.seq_cursor and self.only_counts(sid)]
        if sum(rows for _, rows in candidates) * ROW_BYTES_GUESS >= self.min_split_bytes:
            self._split_between("sqlite", [(sid, sid) for sid, _ in candidates])

    def _resume_from(self, sid: str, part: HistoryPart) -> None:
        """The session's cursor moves past the part's last row."""
        if part.state is not None:
            self.seq_cursor[sid] = part.state
        self._rows_read += part.rows

"""The legacy era: ``agents/<id>/sessions/*.jsonl`` plus ``sessions.json``.

``sessions.json`` is rewritten atomically by the gateway, so it is re-read
whenever its inode, size or mtime changes. Each transcript is followed with a
``FileFollower``; a ``SessionEntry.sessionFile`` elsewhere is followed too.
Archives (``*.jsonl.reset.*``, ``*.jsonl.deleted.*``) are history, never live
sessions: a transcript renamed to an archive while followed is drained through
its open descriptor (or, when its follower was suspended, found by inode), and is
not opened again as an archive even when archives are read (``replay --archives``).

Sidecars beside the transcripts and compaction checkpoints are never read as transcripts,
and a ``sessionFile`` recorded on another machine is looked for by its file name here
(``transcript_names``). The index is read by ``legacy_index``, the transcripts to follow are
listed by ``legacy_listing``.

State dirs hold thousands of transcripts, some of hundreds of MB, so one poll
reads at most ``poll_budget_bytes`` (``behind`` says there is more), a catch-up
starts with the most recently modified transcripts, the directory is listed
again only when it changed, and idle followers beyond ``MAX_OPEN_FOLLOWERS``
are suspended so the process needs few descriptors.

Idle costs nothing at rest: a follower without an open descriptor (suspended, a
missing file, a refused FIFO or device) leaves the poll order for the idle set. An
idle follower is looked at again (one ``stat``) when the waker names its path
(``note_changed``), and by a safety-net sweep: every poll when there are at most
``IDLE_CHECK_ALL`` of them, otherwise ``IDLE_CHECKS_PER_SECOND`` of them per second
in turn, so a dir of 100,000 quiet transcripts is not stat'ed 100,000 times a poll.

Only regular files are read: a FIFO, device, socket or directory named like a
transcript, as ``sessions.json`` or by a ``sessionFile`` (a symlink is followed to
what it names) is reported once and never opened for reading. Notices that many
files raise at once (100,000 new empty transcripts "followed from the start") are
given as one line with the count and a few examples.
"""

from __future__ import annotations

import os
import time
from collections import OrderedDict
from itertools import islice

from monitor.sources.base import Source
from monitor.sources.legacy_index import SessionIndexReader
from monitor.sources.legacy_listing import TranscriptListing
from monitor.sources.legacy_split import LegacySplitting
from monitor.sources.read_ahead import ReadAhead
from monitor.sources.saved import saved_dict
from monitor.sources.tail import (
    POLL_BUDGET_BYTES,
    READ_STEP_BYTES,
    FileFollower,
    put_detached_first,
)
from monitor.sources.tail_state import TailNotice, saved_positions
from monitor.sources.transcript import UnknownEntry, parse_entry
from monitor.sources.transcript_names import is_archive
from monitor.sources.transcript_owners import TranscriptOwners
from monitor.sources.transcript_typed import typed_events

#: Followers kept open at once; idle ones beyond this are suspended (descriptor closed,
#: position kept) so a dir of thousands of transcripts fits a small ``ulimit -n``.
MAX_OPEN_FOLLOWERS = 64
#: Idle followers (no descriptor open) are all checked on every poll up to this many ...
IDLE_CHECK_ALL = 512
#: ... beyond it, this many per second in turn (a stat each), plus those the waker names.
IDLE_CHECKS_PER_SECOND = 1000
#: While a catch-up is behind, notices are gathered for at most this long before they are
#: given (aggregated), so a catch-up over many polls gives one line per message, not one a poll.
NOTICE_HOLD_SECONDS = 10.0


class LegacySessionsSource(SessionIndexReader, TranscriptListing, LegacySplitting, Source):
    kind = "jsonl"

    def __init__(self, sessions_dir: str, agent_id: str, *, resume: dict | None = None,
                 include_archives: bool = False, only_files: set[str] | None = None) -> None:
        super().__init__(sessions_dir)
        self.only_files = {os.path.abspath(p) for p in only_files} if only_files else None
        self.agent_id = agent_id
        self.include_archives = include_archives
        self._index_identity: tuple | None = None
        self._index: dict[str, dict] = {}
        #: The entries of the index read last not looked at yet, and the identity and
        #: decoding of an index read since (``_read_index``).
        self._index_unseen = None
        self._index_decoding = None
        self.poll_budget_bytes = POLL_BUDGET_BYTES
        self.max_open_followers = MAX_OPEN_FOLLOWERS
        #: Look at idle followers only on a poll after one that read all there was, and
        #: then at all of them (a replay: one that read to its end needs no safety net
        #: while the others are read, and must see every change before it ends).
        self.wake_idle_when_caught_up = False
        self._followers: dict[str, FileFollower] = {}
        #: Poll order; the poll after one that stopped at its budget starts at ``_cursor``.
        self._order: list[str] = []
        self._cursor = 0
        self._session_ids: dict[str, str] = {}
        #: Every followed transcript of a session (``unfinished_of``).
        self._paths_of_session: dict[str, list[str]] = {}
        #: Followers not polled yet, with the bytes they are expected to read.
        self._unstarted: dict[str, int] = {}
        self._read_ahead = ReadAhead()
        #: Followers holding descriptors, the least recently grown first.
        self._open: OrderedDict[str, None] = OrderedDict()
        self._listing: list[str] = []
        #: ``os.listdir`` as the listing was built from it, and the index it saw.
        self._raw_names: list[str] | None = None
        self._listed_index: tuple | None = None
        self._listing_key: tuple | None = None
        self._listed_at = float("-inf")
        self._followed_listing: list[str] | None = None
        saved = saved_dict(resume)
        self._resume = saved_positions(saved.get("files"))
        archives = saved.get("archives")
        self._finished_archives: set[str] = {
            path for path in (archives if type(archives) is list else ()) if type(path) is str}
        self._announced: dict[str, tuple] = {}
        #: Shared by the legacy sources of a ``SourceSet``: which of them reads which file.
        self.transcript_owners = TranscriptOwners()
        #: Listed paths naming a file followed under another path.
        self._aliases: set[str] = set()
        #: Followers without an open descriptor, in the order the safety-net sweep visits them.
        self._idle: OrderedDict[str, None] = OrderedDict()
        self._sweep_credit = 0.0
        self._swept_at: float | None = None
        #: Idle paths the waker named since the last poll; ``_hint_all`` when it lost count.
        self._hinted: set[str] = set()
        self._hint_all = False
        #: Followers' notices gathered while a catch-up is behind, and since when.
        self._held_notices: list[TailNotice] = []
        self._held_since: float | None = None
        #: ``abspath -> path`` of every follower, to match the waker's paths.
        self._by_abspath: dict[str, str] = {}

    def note_changed(self, paths: set[str] | None) -> None:
        """Paths the waker saw change (None: it lost count): their idle followers are
        looked at on the next poll, whatever the sweep's turn."""
        if paths is None:
            self._hint_all = True
            return
        for changed in paths:
            path = self._by_abspath.get(changed)
            if path is not None and path in self._idle:
                self._hinted.add(path)

    def _wake_idle(self) -> None:
        """Move the idle followers whose file changed back into the poll order (at the
        cursor, so they are read first): those the waker named, and the sweep's share."""
        if self.wake_idle_when_caught_up and self.behind:
            return
        count = len(self._idle)
        now = time.monotonic()
        elapsed = 0.0 if self._swept_at is None else now - self._swept_at
        self._swept_at = now
        if not count:
            self._hinted.clear()
            self._hint_all = False
            self._sweep_credit = 0.0
            return
        if self._hint_all or count <= IDLE_CHECK_ALL or self.wake_idle_when_caught_up:
            due = list(self._idle)
            self._sweep_credit = 0.0
        else:
            self._sweep_credit = min(float(count),
                                     self._sweep_credit + elapsed * IDLE_CHECKS_PER_SECOND)
            turn = int(self._sweep_credit)
            self._sweep_credit -= turn
            due = list(islice(self._idle, turn))
            due += [p for p in self._hinted if p in self._idle]
        self._hinted.clear()
        self._hint_all = False
        woken: list[str] = []
        for path in due:
            if path not in self._idle:
                continue                                    # named twice
            if self._followers[path].changed():
                del self._idle[path]
                woken.append(path)
            else:
                self._idle.move_to_end(path)
        if woken:
            self._order[self._cursor:self._cursor] = woken

    def poll(self) -> list:
        """The index's changes first (of at most ``index_step_entries`` of its entries), then
        transcript lines, reading at most ``poll_budget_bytes`` of transcripts; the next
        poll goes on from where this one stopped. ``behind`` is True when the budget (or the
        step's ``deadline``) ran out in a transcript or before every transcript was visited
        (the next poll may then find nothing left to read), or when index entries are left."""
        out: list = []
        index_step = self.index_step_entries
        index_seen = self._read_index(out, index_step)
        self.note_running(out)
        if self.index_went_first(out):
            return out
        followed = len(self._followers)
        self._follow_new(self._transcript_paths())
        if len(self._followers) > followed:     # their index records may have come since
            records_before = len(out)
            self._read_index(out, max(index_step - index_seen, 0))
            self.note_running(out[records_before:])
        if not self._split_planned and self._order:
            self._start_split()
        self._wake_idle()
        budget = self.poll_budget_bytes
        count = len(self._order)
        start = self._cursor if self._cursor < count else 0
        stopped_at: str | None = None
        finished: list[str] = []
        idle: set[str] = set()
        notices = self._held_notices
        for step in range(count):
            path = self._order[(start + step) % count]
            if budget <= 0 or (step and self.out_of_time()):
                stopped_at = path
                break
            sid = self._session_ids[path]
            if self._split is not None and path in self._split \
                    and self._split.reader_of(path):
                taken, done = self._take_split(path, sid, out, budget)
                budget -= taken
                if not done:
                    stopped_at = path
                    break
                if self._followers[path].suspended:     # a reader read it to its end
                    self._unstarted.pop(path, None)
                    self._read_ahead.started(path)
                    idle.add(path)
                    continue
            follower = self._followers[path]
            if self._unstarted:
                self._read_ahead.ahead_of(self._order, start + step, self._unstarted,
                                          self._followers)
            summing = self._summing(sid, out)
            try:
                while True:
                    lines = follower.poll(max_bytes=min(budget, READ_STEP_BYTES))
                    budget -= follower.bytes_read
                    if summing is None:
                        for line in lines:
                            self.emit_line(sid, line, out)
                    else:
                        summing.add_lines(lines)
                    if not follower.behind or budget <= 0 or self.out_of_time():
                        break
            finally:
                if summing is not None:
                    summing.close()
            if path in self._unstarted:             # read for the first time
                self._read_ahead.started(path, self._unstarted.pop(path))
            notices += follower.take_notices()
            if follower.behind:
                stopped_at = path
                break
            if is_archive(path) and follower.pending_bytes == 0:
                finished.append(path)
                continue
            self._limit_descriptors(path, follower, idle)
            if follower.open_descriptors == 0:
                idle.add(path)
        idle.difference_update(finished)
        idle.discard(stopped_at)
        for path in finished:
            self._forget(path)
        if idle:
            self._order = [p for p in self._order if p not in idle]
            self._idle.update(dict.fromkeys(idle))
        # A stopping monitor leaves the index's other entries to the next run, which reads
        # the index again (not so the transcripts: a rotation may take them away).
        self.behind = stopped_at is not None or (self.index_behind and not self.stopping)
        if notices:
            now = time.monotonic()
            if self._held_since is None:
                self._held_since = now
            if not self.behind or now - self._held_since >= NOTICE_HOLD_SECONDS:
                self.give_notices(notices, out)
                notices.clear()
                self._held_since = None
        self._cursor = self._order.index(stopped_at) if stopped_at is not None else 0
        self.backlog_bytes = sum(self._unstarted.values()) + sum(
            self._followers[p].backlog_bytes for p in self._open)
        return out

    def unfinished_of(self, session_ids: list[str]) -> set[str]:
        """A transcript read to its end is idle, back in the poll order once it changed,
        or forgotten (a finished archive)."""
        idle, paths_of = self._idle, self._paths_of_session
        return {sid for sid in session_ids
                if any(path not in idle for path in paths_of.get(sid, ()))}

    def detached_first(self) -> bool:
        return put_detached_first(self)

    def _limit_descriptors(self, path: str, follower: FileFollower, suspended: set[str]
                           ) -> None:
        """Keep at most ``max_open_followers`` files open: after ``path`` was polled, suspend
        the followers that grew least recently, as long as each can resume exactly (adding
        them to ``suspended``)."""
        if follower.open_descriptors == 0:
            self._open.pop(path, None)
            return
        if follower.bytes_read or path not in self._open:
            self._open[path] = None
            self._open.move_to_end(path)
        if len(self._open) <= self.max_open_followers:
            return
        for candidate in list(self._open):
            if self._followers[candidate].suspend():
                del self._open[candidate]
                suspended.add(candidate)
                if len(self._open) <= self.max_open_followers:
                    return

    def _forget(self, path: str) -> None:
        """Stop following an archive that was read to its end."""
        self._followers.pop(path).close()
        self._paths_of_session[self._session_ids[path]].remove(path)
        self._by_abspath.pop(os.path.abspath(path), None)
        self._open.pop(path, None)
        self._order.remove(path)
        self._idle.pop(path, None)
        self._finished_archives.add(path)

    def emit_line(self, sid: str, line, out: list) -> None:
        """The events (and errors) of one line of session ``sid``'s transcript."""
        text = self.line_text(line, out)
        if text is None:
            return
        origin = f"{line.path}@{line.offset}"
        counted = self.counted(text, sid, origin)
        if counted is not None:
            out.extend(counted)
            return
        events = typed_events(text, sid, origin)
        if events is None:
            decoded = self.json_text(text, line, out)
            if decoded is None:
                return
            where = f"offset {line.offset}"
            try:
                events = parse_entry(decoded[0], sid, origin)
            except UnknownEntry as exc:
                out.append(self.error(where, str(exc), path=line.path))
                return
            except ValueError as exc:
                out.append(self.error(where, f"unreadable entry: {exc}", path=line.path))
                return
        self.events += len(events)
        out.extend(events)

    def checkpoint(self) -> dict:
        files = {}
        for path, follower in self._followers.items():
            state = follower.state()
            files[path] = state.as_json() if state else None
        return {"files": files, "archives": sorted(self._finished_archives)}

    def close(self) -> None:
        self._close_split()
        for follower in self._followers.values():
            follower.close()
        self._followers.clear()
        self._paths_of_session.clear()
        self._by_abspath.clear()
        self._order.clear()
        self._idle.clear()
        self._hinted.clear()
        self._open.clear()
        self._unstarted.clear()
        self._read_ahead.clear()
        self._followed_listing = None
        self._cursor = 0

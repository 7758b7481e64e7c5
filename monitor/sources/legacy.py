"""The legacy era: ``agents/<id>/sessions/*.jsonl`` plus ``sessions.json``.

``sessions.json`` is rewritten atomically by the gateway, so it is re-read
whenever its inode, size or mtime changes. Each transcript is followed with a
``FileFollower``; a ``SessionEntry.sessionFile`` elsewhere is followed too.
Archives (``*.jsonl.reset.*``, ``*.jsonl.deleted.*``) are history, never live
sessions: a transcript renamed to an archive while followed is drained through
its open descriptor (or, when its follower was suspended, found by inode), and is
not opened again as an archive even when archives are read (``replay --archives``).

Sidecars beside the transcripts are not transcripts and are never read as ones (nor
their archives, nor when a ``sessionFile`` names one): ``<id>.trajectory.jsonl`` and
``<id>.trajectory-path.json`` (OpenClaw 2026.6's runtime trace, whose records are
``session.started``, ``model.completed``, ...) and the compaction checkpoints
``<id>.checkpoint.<uuid>.jsonl`` (a copy of the transcript before a compaction), as
OpenClaw's own ``isPrimarySessionTranscriptFileName`` rules. Every transcript read, listed
in the index or not, an archive too, is its agent's (``agent_id``; ``SourceSet.agent_of``):
it sits in ``agents/<id>/sessions/``.

A ``sessionFile`` recorded on another machine (a Docker ``/home/node/.openclaw/...`` path,
a Windows ``C:\\Users\\...`` one) that does not exist here is looked for by its file name
in the sessions dir (``session_file_path``).

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
import re
import stat
import time
from collections import OrderedDict
from itertools import islice

from monitor import untrusted_json
from monitor.events import SessionInfo, SourceNotice
from monitor.sources.base import Source, file_units
from monitor.sources.regular import NotRegularFile, open_regular_file, refusal
from monitor.sources.tail import (
    POLL_BUDGET_BYTES,
    READ_STEP_BYTES,
    FileFollower,
    FollowerState,
    TailNotice,
)
from monitor.sources.transcript import (
    UnknownEntry,
    parse_entry,
    parse_timestamp,
    sane_count,
)

ARCHIVE_MARKERS = (".jsonl.reset.", ".jsonl.deleted.")
#: Sidecars OpenClaw writes beside a transcript (``<id>.jsonl``): runtime trajectory trace
#: and its pointer file.
SIDECAR_SUFFIXES = (".trajectory.jsonl", ".trajectory-path.json")
#: A compaction checkpoint: the transcript as it was before a compaction.
CHECKPOINT_NAME = re.compile(
    r"^.+\.checkpoint\.[0-9a-f]{8}-[0-9a-f]{4}-[1-5][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
    r"\.jsonl$", re.IGNORECASE)
#: Followers kept open at once; idle ones beyond this are suspended (descriptor closed,
#: position kept) so a dir of thousands of transcripts fits a small ``ulimit -n``.
MAX_OPEN_FOLLOWERS = 64
#: A dir whose mtime is this recent is listed again on the next poll: a file created within
#: the same mtime tick as the listing would not change the mtime.
LISTING_RACY_SECONDS = 1.0
#: A listing is trusted for at most this long even when the dir's mtime says nothing changed.
LISTING_MAX_AGE_SECONDS = 30.0
#: Idle followers (no descriptor open) are all checked on every poll up to this many ...
IDLE_CHECK_ALL = 512
#: ... beyond it, this many per second in turn (a stat each), plus those the waker names.
IDLE_CHECKS_PER_SECOND = 1000
#: The same notice from more files than this in one poll is given as one line.
NOTICES_SHOWN_SINGLY = 3
#: Paths named as examples in an aggregated notice.
NOTICE_EXAMPLES = 3
#: While a catch-up is behind, notices are gathered for at most this long before they are
#: given (aggregated), so a catch-up over many polls gives one line per message, not one a poll.
NOTICE_HOLD_SECONDS = 10.0


def is_sidecar(name: str) -> bool:
    """Whether a file name (or path) is a sidecar or a compaction checkpoint, or an
    archive of one (``<id>.trajectory.jsonl.reset.<ts>``): never a transcript."""
    base = os.path.basename(name)
    for marker in ARCHIVE_MARKERS:
        at = base.find(marker)
        if at >= 0:
            base = base[:at + len(".jsonl")]
            break
    return base.endswith(SIDECAR_SUFFIXES) or CHECKPOINT_NAME.match(base) is not None


def session_id_from_filename(name: str) -> str:
    stem = name[: -len(".jsonl")] if name.endswith(".jsonl") else name
    topic = stem.find("-topic-")
    return stem[:topic] if topic > 0 else stem


def transcript_session_id(path: str) -> str:
    """The session a transcript (or an archive of one) belongs to, by its file name."""
    return session_id_from_filename(os.path.basename(path).split(".jsonl")[0] + ".jsonl")


class LegacySessionsSource(Source):
    kind = "jsonl"

    def __init__(self, sessions_dir: str, agent_id: str, *, resume: dict | None = None,
                 include_archives: bool = False, only_files: set[str] | None = None) -> None:
        super().__init__(sessions_dir)
        self.only_files = {os.path.abspath(p) for p in only_files} if only_files else None
        #: The sessions whose transcripts this source reads (None: all), for a split replay.
        self.only_sessions: set[str] | None = None
        self.agent_id = agent_id
        self.include_archives = include_archives
        self._index_identity: tuple | None = None
        self._index: dict[str, dict] = {}
        self.poll_budget_bytes = POLL_BUDGET_BYTES
        self.max_open_followers = MAX_OPEN_FOLLOWERS
        self._followers: dict[str, FileFollower] = {}
        #: Poll order; the poll after one that stopped at its budget starts at ``_cursor``.
        self._order: list[str] = []
        self._cursor = 0
        self._session_ids: dict[str, str] = {}
        #: Followers not polled yet, with the bytes they are expected to read.
        self._unstarted: dict[str, int] = {}
        #: Followers holding descriptors, the least recently grown first.
        self._open: OrderedDict[str, None] = OrderedDict()
        self._listing: list[str] = []
        #: ``os.listdir`` as the listing was built from it, and the index it saw.
        self._raw_names: list[str] | None = None
        self._listed_index: tuple | None = None
        self._listing_key: tuple | None = None
        self._listed_at = float("-inf")
        self._followed_listing: list[str] | None = None
        self._resume = {p: FollowerState.from_json(s)
                        for p, s in (resume or {}).get("files", {}).items() if s}
        self._finished_archives: set[str] = set((resume or {}).get("archives", []))
        self._announced: dict[str, tuple] = {}
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

    @property
    def index_path(self) -> str:
        return os.path.join(self.path, "sessions.json")

    # ------------------------------------------------------------------- index

    def read_index(self) -> list:
        """The index's session records (and errors) not given yet, without reading any
        transcript."""
        out: list = []
        self._read_index(out)
        return out

    def transcript_units(self) -> dict[str, tuple[int, list]]:
        """Per session id: its transcripts' bytes, and what identifies their content now
        (path, size, mtime, inode of each), from the current listing."""
        return file_units(self._transcript_paths(), transcript_session_id)

    def session_of(self, path: str) -> str:
        return transcript_session_id(path)

    def _read_index(self, out: list) -> None:
        try:
            st = os.stat(self.index_path)
        except FileNotFoundError:
            return
        except OSError as exc:
            st = None
            identity: tuple = ("error", str(exc))
        else:
            identity = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_mode)
        if identity == self._index_identity:
            return
        self._index_identity = identity
        if st is not None and not stat.S_ISREG(st.st_mode):
            out.append(self.error("sessions.json", "cannot read the session index: "
                                  + refusal(self.index_path, st.st_mode), path=self.index_path,
                                  shared=True))
            return
        try:
            with open_regular_file(self.index_path) as handle:
                data = untrusted_json.loads(handle.read())
        except NotRegularFile as exc:
            out.append(self.error("sessions.json",
                                  f"cannot read the session index: {exc.strerror}",
                                  path=self.index_path, shared=True))
            return
        except (OSError, ValueError) as exc:
            out.append(self.error("sessions.json", f"cannot read the session index: {exc}",
                                  path=self.index_path, shared=True))
            return
        if not isinstance(data, dict):
            out.append(self.error("sessions.json", "session index is not a JSON object",
                                  path=self.index_path, shared=True))
            return
        self._index = {k: v for k, v in data.items() if isinstance(v, dict)}
        for key, entry in self._index.items():
            record = self._session_info(key, entry)
            if record is None:
                continue
            version = (record.session_id, record.status, record.updated_at, record.total_tokens)
            if self._announced.get(key) != version:
                self._announced[key] = version
                out.append(record)

    def _session_info(self, key: str, entry: dict) -> SessionInfo | None:
        sid = entry.get("sessionId")
        if not isinstance(sid, str):
            return None

        def text(name: str) -> str | None:
            value = entry.get(name)
            return value if isinstance(value, str) else None

        return SessionInfo(
            key=key, session_id=sid, agent_id=self.agent_id, model=text("model"),
            provider=text("modelProvider"), status=text("status"), run_id=text("lastRunId"),
            active_run_id=text("activeWriterRunId"),
            aborted_last_run=entry.get("abortedLastRun") is True,
            label=text("label") or text("displayName"),
            updated_at=parse_timestamp(entry.get("updatedAt")),
            input_tokens=sane_count(entry.get("inputTokens")),
            output_tokens=sane_count(entry.get("outputTokens")),
            total_tokens=sane_count(entry.get("totalTokens")), origin=f"{self.index_path}#{key}",
        )

    # ------------------------------------------------------------- transcripts

    def _transcript_paths(self) -> list[str]:
        """Transcripts in the dir (archives too with ``include_archives``) plus the index's
        ``sessionFile``s elsewhere. Listed again only when the dir's mtime or the index
        changed, or the last listing is old or was taken while the dir was still changing
        within the mtime's granularity."""
        try:
            st = os.stat(self.path)
        except OSError:
            self._listing_key = None
            return []
        key = (st.st_dev, st.st_ino, st.st_mtime_ns, self._index_identity)
        now = time.monotonic()
        if key == self._listing_key and now - self._listed_at < LISTING_MAX_AGE_SECONDS:
            return self._listing
        try:
            raw_names = os.listdir(self.path)
        except OSError:
            self._listing_key = None
            return []
        still_changing = time.time_ns() - st.st_mtime_ns < LISTING_RACY_SECONDS * 1e9
        if raw_names == self._raw_names and key[3] == self._listed_index:
            # Listed again for age or a racy mtime, and nothing changed: the same listing
            # (an unchanged list object: the followers are not looked through again).
            self._listing_key = None if still_changing else key
            self._listed_at = now
            return self._listing
        self._raw_names = raw_names
        self._listed_index = key[3]
        names = sorted(raw_names)
        base = os.path.normpath(self.path)
        paths = []
        seen = set()
        for name in names:
            if (name.endswith(".jsonl") or (self.include_archives and _is_archive(name))) \
                    and not is_sidecar(name):
                paths.append(os.path.join(self.path, name))
                seen.add(os.path.join(base, name))
        listed = set(raw_names)
        for entry in self._index.values():
            full = session_file_path(self.path, entry, listed)
            if full is not None:
                normal = os.path.normpath(full)
                if normal not in seen:
                    seen.add(normal)
                    paths.append(full)
        if self.only_files is not None:
            paths = [p for p in paths if os.path.abspath(p) in self.only_files]
        if self.only_sessions is not None:
            paths = [p for p in paths if transcript_session_id(p) in self.only_sessions]
        self._listing_key = None if still_changing else key
        self._listed_at = now
        self._listing = paths
        return paths

    def _follow_new(self, paths: list[str]) -> None:
        """Followers for paths not followed yet, most recently modified first, placed where
        the next poll starts so new (active) sessions are read before older history."""
        if paths is self._followed_listing:
            return
        self._followed_listing = paths
        new = [p for p in paths if p not in self._followers and p not in self._finished_archives]
        if not new:
            return
        stats: dict[str, os.stat_result | None] = {}
        for path in new:
            try:
                stats[path] = os.stat(path)
            except OSError:
                stats[path] = None
        new = self._without_drained_archives(new, stats)
        new.sort(key=lambda p: stats[p].st_mtime_ns if stats[p] else 0, reverse=True)
        for path in new:
            resume = self._resume.pop(path, None)
            self._followers[path] = FileFollower(path, resume=resume)
            self._by_abspath[os.path.abspath(path)] = path
            self._session_ids[path] = transcript_session_id(path)
            size = stats[path].st_size if stats[path] else 0
            self._unstarted[path] = max(0, size - (resume.offset if resume else 0))
        self._order[self._cursor:self._cursor] = new

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
        count = len(self._idle)
        now = time.monotonic()
        elapsed = 0.0 if self._swept_at is None else now - self._swept_at
        self._swept_at = now
        if not count:
            self._hinted.clear()
            self._hint_all = False
            self._sweep_credit = 0.0
            return
        if self._hint_all or count <= IDLE_CHECK_ALL:
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
        """The index's changes first, then transcript lines, reading at most
        ``poll_budget_bytes`` of transcripts; the next poll goes on from where this one
        stopped. ``behind`` is True when the budget (or the step's ``deadline``) ran out in
        a transcript or before every transcript was visited (the next poll may then find
        nothing left to read)."""
        out: list = []
        self._read_index(out)
        self._follow_new(self._transcript_paths())
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
            follower = self._followers[path]
            sid = self._session_ids[path]
            while True:
                lines = follower.poll(max_bytes=min(budget, READ_STEP_BYTES))
                budget -= follower.bytes_read
                for line in lines:
                    self._emit_line(sid, line, out)
                if not follower.behind or budget <= 0 or self.out_of_time():
                    break
            self._unstarted.pop(path, None)
            notices += follower.take_notices()
            if follower.behind:
                stopped_at = path
                break
            if _is_archive(path) and follower.pending_bytes == 0:
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
        self.behind = stopped_at is not None
        if notices:
            now = time.monotonic()
            if self._held_since is None:
                self._held_since = now
            if not self.behind or now - self._held_since >= NOTICE_HOLD_SECONDS:
                self._give_notices(notices, out)
                notices.clear()
                self._held_since = None
        self._cursor = self._order.index(stopped_at) if stopped_at is not None else 0
        self.backlog_bytes = sum(self._unstarted.values()) + sum(
            self._followers[p].backlog_bytes for p in self._open)
        return out

    def _give_notices(self, notices: list[TailNotice], out: list) -> None:
        """The followers' notices as records; the same message from more than
        ``NOTICES_SHOWN_SINGLY`` files is one record with the count and a few examples
        (errors still count once per file)."""
        groups: dict[tuple[bool, str], list[TailNotice]] = {}
        for notice in notices:
            groups.setdefault((notice.error, notice.message), []).append(notice)
        for (error, message), group in groups.items():
            if len(group) <= NOTICES_SHOWN_SINGLY:
                for notice in group:
                    if error:
                        out.append(self.error(notice.where or "-", message, path=notice.path))
                    else:
                        out.append(SourceNotice(self.kind, notice.path, message))
                continue
            examples = ", ".join(os.path.basename(n.path) for n in group[:NOTICE_EXAMPLES])
            text = f"{message}: {len(group)} files (e.g. {examples}, ...)"
            if error:
                out.append(self.error("-", text, path=self.path))
                self.errors += len(group) - 1
            else:
                out.append(SourceNotice(self.kind, self.path, text))

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

    def _without_drained_archives(self, paths: list[str],
                                  stats: dict[str, os.stat_result | None]) -> list[str]:
        """``paths`` less the archives that are a followed transcript renamed: its follower
        reads it to the end through the open descriptor (or finds it by inode)."""
        archives = [p for p in paths if _is_archive(p) and stats[p] is not None]
        if not archives:
            return paths
        by_identity = {identity: follower for path, follower in self._followers.items()
                       if not _is_archive(path) for identity in follower.identities()}
        drained = set()
        for path in archives:
            st = stats[path]
            follower = by_identity.get((st.st_dev, st.st_ino))
            if follower is not None and follower.reads(st):
                drained.add(path)
                self._finished_archives.add(path)
        return [p for p in paths if p not in drained]

    def _forget(self, path: str) -> None:
        """Stop following an archive that was read to its end."""
        self._followers.pop(path).close()
        self._by_abspath.pop(os.path.abspath(path), None)
        self._open.pop(path, None)
        self._order.remove(path)
        self._idle.pop(path, None)
        self._finished_archives.add(path)

    def _emit_line(self, sid: str, line, out: list) -> None:
        if not line.data.strip():
            return
        where = f"offset {line.offset}"
        try:
            text = line.data.decode("utf-8")
        except UnicodeDecodeError as exc:
            out.append(self.error(where, f"invalid UTF-8 at byte {exc.start}", path=line.path))
            return
        if "\x00" in text:
            out.append(self.error(where, "NUL byte in line", path=line.path))
            return
        try:
            entry = untrusted_json.loads(text)
        except ValueError as exc:
            out.append(self.error(where, f"invalid JSON: {exc}", path=line.path))
            return
        origin = f"{line.path}@{line.offset}"
        try:
            events = parse_entry(entry, sid, origin)
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
        for follower in self._followers.values():
            follower.close()
        self._followers.clear()
        self._by_abspath.clear()
        self._order.clear()
        self._idle.clear()
        self._hinted.clear()
        self._open.clear()
        self._unstarted.clear()
        self._followed_listing = None
        self._cursor = 0


def _is_archive(path: str) -> bool:
    """``*.jsonl.reset.*`` / ``*.jsonl.deleted.*``: a transcript's history, not a live one."""
    return any(marker in path for marker in ARCHIVE_MARKERS)


def session_file_path(sessions_dir: str, entry: dict,
                      names: set[str] | None = None) -> str | None:
    """The transcript an index entry's ``sessionFile`` names (relative to the sessions dir),
    or None when it names none (or names a sidecar).

    A path recorded on another machine (``/home/node/.openclaw/agents/main/sessions/<id>.jsonl``
    in a Docker container, ``C:\\Users\\me\\.openclaw\\...\\<id>.jsonl`` on Windows) that
    does not exist here is the file of the same name in ``sessions_dir`` (when there is one,
    or the recorded dir is not on this machine; ``names``: the dir's listing, if the caller
    has it): only a plain ``*.jsonl`` name (the last part after either separator, never
    ``..``), so it stays inside the sessions dir."""
    session_file = entry.get("sessionFile")
    if not isinstance(session_file, str) or not session_file or "\x00" in session_file:
        return None
    name = session_file.replace("\\", "/").rsplit("/", 1)[-1]
    if is_sidecar(name):
        return None
    recorded = os.path.join(sessions_dir, session_file)
    foreign = "\\" in session_file and os.sep != "\\"
    if not foreign and os.path.dirname(os.path.normpath(recorded)) == \
            os.path.normpath(sessions_dir):
        return recorded                     # in the sessions dir: no need to look
    if not foreign and os.path.lexists(recorded):
        return recorded
    if name in ("", ".", "..") or name.startswith("..") or not name.endswith(".jsonl"):
        return recorded
    local = os.path.join(sessions_dir, name)
    if os.path.dirname(os.path.abspath(local)) != os.path.abspath(sessions_dir):
        return recorded
    found = name in names if names is not None else os.path.lexists(local)
    if found or foreign or not os.path.isdir(os.path.dirname(recorded)):
        return local            # the recorded dir is not on this machine: the name is here
    return recorded             # a dir here that may yet hold the file

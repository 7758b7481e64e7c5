"""Follow every JSONL transcript under a directory tree, each line exactly once.

Claude Code and Codex CLI write one JSONL file per session below a root
(``<projects>/<project>/<session>.jsonl``, ``<sessions>/YYYY/MM/DD/rollout-*.jsonl``). This
base walks the tree, follows each file with a ``FileFollower`` (rotation, truncation, a partial
last line, a restart from a checkpoint) and hands every decoded line to the subclass's
``read_entry``. As in the OpenClaw sources:

* a poll reads at most ``poll_budget_bytes`` and stops at its ``deadline`` (``behind`` says
  there is more); the next poll goes on at the file where this one stopped;
* files are read in path order, so a session's own file is read before the files in the
  directory named after it (a sub-agent's transcript), and a replay reads them as ccusage does;
* a directory is listed again only when its mtime changed (or is so recent that a file made in
  the same tick could be missing), and at most every ``RESCAN_SECONDS`` unless the waker names
  a file not followed yet;
* followers that went idle are suspended beyond ``MAX_OPEN_FOLLOWERS`` (descriptor closed,
  position kept); a suspended follower costs one ``stat`` when it is looked at, which happens
  every poll for up to ``IDLE_CHECKS_PER_POLL`` of them (in turn) and at once when the waker
  names its path; a file that was deleted (and read to its end) is forgotten;
* a line that is not UTF-8, holds a NUL, is not JSON or not a JSON object, or that
  ``read_entry`` rejects with a ``ValueError``, is counted as an error with its file and offset.

Symlinked files and directories are not followed (ccusage skips them too), and only regular
files are read (``FileFollower`` refuses FIFOs and devices).
"""

from __future__ import annotations

import os
import stat
import time

from monitor import untrusted_json
from monitor.sources.base import Source, file_units
from monitor.sources.read_ahead import ReadAhead
from monitor.sources.regular import open_regular_file
from monitor.sources.tail import (
    POLL_BUDGET_BYTES,
    READ_STEP_BYTES,
    FileFollower,
    put_detached_first,
)
from monitor.sources.tail_state import Line, TailNotice, saved_positions

RESCAN_SECONDS = 1.0
#: A directory whose mtime is this recent is listed again next time (same-tick creations).
LISTING_RACY_SECONDS = 1.0
MAX_OPEN_FOLLOWERS = 64
IDLE_CHECKS_PER_POLL = 512


class TreeWalker:
    """The files below ``root`` that ``wants_file`` accepts, descending only into the
    directories ``wants_dir`` accepts (both get the path parts relative to ``root``).
    Listings are cached per directory and refreshed when its mtime changes."""

    def __init__(self, root: str, wants_dir, wants_file, max_depth: int) -> None:
        self.root = root
        self.wants_dir = wants_dir
        self.wants_file = wants_file
        self.max_depth = max_depth
        #: directory -> (mtime_ns, subdirectories, files) of its last listing.
        self._listings: dict[str, tuple[int, list[str], list[str]]] = {}

    def files(self) -> list[str]:
        found: list[str] = []
        self._walk(self.root, (), found)
        found.sort()
        return found

    def _walk(self, directory: str, parts: tuple[str, ...], found: list[str]) -> None:
        listing = self._listing(directory, parts)
        if listing is None:
            return
        subdirs, files = listing
        found.extend(os.path.join(directory, name) for name in files)
        if len(parts) + 1 >= self.max_depth:
            return
        for name in subdirs:
            self._walk(os.path.join(directory, name), (*parts, name), found)

    def _listing(self, directory: str, parts: tuple[str, ...]
                 ) -> tuple[list[str], list[str]] | None:
        try:
            st = os.stat(directory, follow_symlinks=False)
        except OSError:
            self._listings.pop(directory, None)
            return None
        if not stat.S_ISDIR(st.st_mode):
            return None
        cached = self._listings.get(directory)
        racy = time.time_ns() - st.st_mtime_ns < LISTING_RACY_SECONDS * 1e9
        if cached is not None and cached[0] == st.st_mtime_ns and not racy:
            return cached[1], cached[2]
        subdirs: list[str] = []
        files: list[str] = []
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    name = entry.name
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            if len(parts) + 1 < self.max_depth and self.wants_dir((*parts, name)):
                                subdirs.append(name)
                        elif entry.is_file(follow_symlinks=False) \
                                and self.wants_file((*parts, name)):
                            files.append(name)
                    except OSError:
                        continue
        except OSError:
            self._listings.pop(directory, None)
            return None
        subdirs.sort()
        files.sort()
        self._listings[directory] = (st.st_mtime_ns, subdirs, files)
        return subdirs, files


class JsonlTreeSource(Source):
    """Base of the Claude Code and Codex sources; see the module docstring."""

    kind = "jsonl"
    #: Which CLI wrote the transcripts ("claude-code", "codex"); shown in ``summary()``.
    source_name = ""
    max_depth = 4
    #: A resumed session's file starts with copies of earlier files' replies and calls,
    #: known as copies only by a reader that read the originals.
    sessions_read_together = True

    def __init__(self, root: str, agent_id: str, *, resume: dict | None = None,
                 only_files: set[str] | None = None) -> None:
        root = os.path.abspath(root)
        super().__init__(root)
        self.agent_id = agent_id
        #: The only transcripts read (None: every one under the root): ``replay FILE``.
        self.only_files = {os.path.abspath(p) for p in only_files} if only_files else None
        self.poll_budget_bytes = POLL_BUDGET_BYTES
        self.max_open_followers = MAX_OPEN_FOLLOWERS
        self._walker = TreeWalker(root, self.wants_dir, self.wants_file, self.max_depth)
        self._followers: dict[str, FileFollower] = {}
        self._order: list[str] = []
        self._cursor = 0
        self._scanned_at = float("-inf")
        self._rescan = True
        self._open: dict[str, float] = {}          # path -> last time it grew
        #: Followers not polled yet (read ahead while a catch-up reaches them).
        self._unstarted: set[str] = set()
        self._read_ahead = ReadAhead()
        self._hinted: set[str] = set()
        self._hint_all = False
        self._sweep = 0
        saved = resume if isinstance(resume, dict) else {}
        self._resume = saved_positions(saved.get("files"))
        self.restore_parse_state(saved.get("parse") if isinstance(saved.get("parse"), dict)
                                 else {})

    # ------------------------------------------------------------ subclass hooks

    def wants_dir(self, parts: tuple[str, ...]) -> bool:
        raise NotImplementedError

    def wants_file(self, parts: tuple[str, ...]) -> bool:
        raise NotImplementedError

    def read_entry(self, path: str, offset: int, entry: dict, text: str) -> list:
        """Events of one decoded line; raise ``ValueError`` for a line that cannot be read."""
        raise NotImplementedError

    def session_of(self, path: str) -> str:
        """The session a transcript's events belong to, known before it is read (a split
        replay puts every transcript of a session into one shard)."""
        raise NotImplementedError

    def parse_state(self) -> dict:
        """What ``read_entry`` must remember across a restart (JSON-able, bounded)."""
        return {}

    def restore_parse_state(self, saved: dict) -> None:
        """Take back what ``parse_state`` returned (never trusted: checked field by field)."""

    # ------------------------------------------------------------- split replay

    def read_index(self) -> list:
        """No index: a session's ``SessionInfo`` comes with its transcript's first event."""
        return []

    def transcript_units(self) -> dict[str, tuple[int, list]]:
        """Per session id: its transcripts' bytes and identities, from the current listing."""
        return file_units(self._walker.files(), self.session_of)

    # -------------------------------------------------------------------- polling

    def note_changed(self, paths: set[str] | None) -> None:
        if paths is None:
            self._hint_all = True
            self._rescan = True
            return
        for changed in paths:
            if changed in self._followers:
                self._hinted.add(changed)
            elif changed.startswith(self.path):
                self._rescan = True

    def _refresh(self) -> None:
        now = time.monotonic()
        if not self._rescan and now - self._scanned_at < RESCAN_SECONDS:
            return
        self._rescan = False
        self._scanned_at = now
        listed = self._walker.files()
        gone = [path for path, follower in self._followers.items()
                if follower.open_descriptors == 0 and not follower.suspended
                and not os.path.lexists(path)]
        new = [path for path in listed if path not in self._followers
               and (self.only_files is None or path in self.only_files)
               and self.wants_session(self.session_of(path))]
        if not new and not gone:
            return
        current = self._order[self._cursor] if self._cursor < len(self._order) else None
        for path in gone:
            self._followers.pop(path).close()
            self._open.pop(path, None)
            self._unstarted.discard(path)
            self._read_ahead.started(path)
            self.forget_file(path)
        for path in new:
            self._followers[path] = FileFollower(path, resume=self._resume.pop(path, None))
        self._unstarted.update(new)
        self._order = sorted(self._followers)
        self._cursor = self._order.index(current) if current in self._followers else 0

    def forget_file(self, path: str) -> None:
        """``path`` is gone (deleted and read to its end): drop what was kept for it."""

    def _due_idle(self) -> set[str]:
        """Suspended followers to look at this poll: the hinted ones and the sweep's share."""
        idle = [path for path in self._order if self._followers[path].suspended]
        if self._hint_all or len(idle) <= IDLE_CHECKS_PER_POLL:
            due = set(idle)
        else:
            start = self._sweep % len(idle)
            due = set((idle + idle)[start:start + IDLE_CHECKS_PER_POLL])
            self._sweep = start + IDLE_CHECKS_PER_POLL
        due |= self._hinted
        self._hinted = set()
        self._hint_all = False
        return due

    def poll(self) -> list:
        out: list = []
        self._refresh()
        due = self._due_idle()
        budget = self.poll_budget_bytes
        count = len(self._order)
        start = self._cursor if self._cursor < count else 0
        stopped_at: str | None = None
        notices: list[TailNotice] = []
        for step in range(count):
            path = self._order[(start + step) % count]
            if budget <= 0 or (step and self.out_of_time()):
                stopped_at = path
                break
            follower = self._followers[path]
            if follower.suspended and (path not in due or not follower.changed()):
                continue
            if self._unstarted:
                self._read_ahead.ahead_of(self._order, start + step, self._unstarted,
                                          self._followers)
            read = 0
            while True:
                lines = follower.poll(max_bytes=min(budget, READ_STEP_BYTES))
                budget -= follower.bytes_read
                read += follower.bytes_read
                if follower.bytes_read:
                    self._open[path] = time.monotonic()
                for line in lines:
                    self._emit_line(line, out)
                if not follower.behind or budget <= 0 or self.out_of_time():
                    break
            if path in self._unstarted:                 # read for the first time
                self._unstarted.discard(path)
                self._read_ahead.started(path, read)
            notices += follower.take_notices()
            if follower.behind:
                stopped_at = path
                break
            self._limit_descriptors(path, follower)
        self.give_notices(notices, out)
        self.behind = stopped_at is not None
        self._cursor = self._order.index(stopped_at) if stopped_at is not None else 0
        self.backlog_bytes = sum(self._followers[p].backlog_bytes for p in self._open)
        return out

    def unfinished_of(self, session_ids: list[str]) -> set[str] | None:
        """None (cannot tell) once it follows a transcript: a Claude Code file's session is
        known for sure only when it has been read."""
        return None if self._followers else set()

    def detached_first(self) -> bool:
        return put_detached_first(self)

    def _limit_descriptors(self, path: str, follower: FileFollower) -> None:
        if follower.open_descriptors == 0:
            self._open.pop(path, None)
            return
        self._open.setdefault(path, time.monotonic())
        if len(self._open) <= self.max_open_followers:
            return
        for candidate in sorted(self._open, key=self._open.__getitem__):
            if self._followers[candidate].suspend():
                del self._open[candidate]
                if len(self._open) <= self.max_open_followers:
                    return

    def _emit_line(self, line: Line, out: list) -> None:
        decoded = self.json_line(line, out)
        if decoded is None:
            return
        entry, text = decoded
        where = f"offset {line.offset}"
        if not isinstance(entry, dict):
            out.append(self.error(where, "line is not a JSON object", path=line.path))
            return
        try:
            events = self.read_entry(line.path, line.offset, entry, text)
        except ValueError as exc:
            out.append(self.error(where, f"unreadable entry: {exc}", path=line.path))
            return
        self.events += len(events)
        out.extend(events)

    # ----------------------------------------------------------------- lifecycle

    def checkpoint(self) -> dict:
        files = {}
        for path, follower in self._followers.items():
            state = follower.state()
            files[path] = state.as_json() if state else None
        for path, state in self._resume.items():
            files.setdefault(path, state.as_json())
        return {"files": files, "parse": self.parse_state()}

    def summary(self) -> dict:
        return {**super().summary(), "source": self.source_name}

    def close(self) -> None:
        for follower in self._followers.values():
            follower.close()
        self._followers.clear()
        self._order.clear()
        self._open.clear()
        self._unstarted.clear()
        self._read_ahead.clear()
        self._cursor = 0
        self._rescan = True


def first_entry(path: str, max_bytes: int = 64 << 10) -> dict | None:
    """The first line of ``path`` that is a JSON object (within ``max_bytes``), or None: for
    telling which program wrote a transcript given on the command line."""
    try:
        with open_regular_file(path) as handle:
            head = handle.read(max_bytes)
    except OSError:
        return None
    for line in head.split(b"\n"):
        if not line.strip():
            continue
        try:
            entry = untrusted_json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            return entry
    return None


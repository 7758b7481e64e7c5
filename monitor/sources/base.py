"""What every source shares: identity, counts of events and errors, error samples."""

from __future__ import annotations

import os
import re
import time

from monitor import untrusted_json
from monitor.events import SessionInfo, SourceError, SourceKind, SourceNotice
from monitor.sources.transcript_light import (
    CountedSum,
    CountOnly,
    count_into,
    counted_events,
)

ERROR_SAMPLES_KEPT = 5
#: Distinct errors no session owns that a replay's source keeps (``Source.shared_errors``):
#: a crafted database can hold millions of bad index rows, each an error of its own, which
#: the main process counts as it reads the index.
SHARED_ERRORS_KEPT = 1000
#: Files whose same notice is shown one by one; past this, one record counts them.
NOTICES_SHOWN_SINGLY = 3
#: File names a grouped notice shows as examples.
NOTICE_EXAMPLES = 3


def sample_order(path: str, where: str) -> tuple:
    """Where an error is, for keeping the first ``ERROR_SAMPLES_KEPT`` by place: path, then
    ``where`` with its numbers compared as numbers (``offset 99`` before ``offset 100``).
    Samples kept by place, not by the order they were read in, are the same however the
    reading was split (``replay --jobs``)."""
    parts = re.split(r"(\d+)", where)
    return path, [int(part) if index % 2 else part for index, part in enumerate(parts)]


class Source:
    """Base for incremental sources.

    ``poll()`` returns the new events (and ``SourceError``/``SourceNotice``
    records) since the previous call. ``events`` and ``errors`` count what the
    source produced; the first few errors are kept in ``error_samples`` so a
    report can show them with their path and offset or row.
    """

    kind: SourceKind
    #: True after a ``poll()`` that stopped at its step budget with more already readable;
    #: readers loop without waiting while any source is behind.
    behind: bool = False
    #: Bytes (or an estimate) known to be readable but not yet read; for progress displays.
    backlog_bytes: int = 0
    #: How much one ``poll()`` may read; sources that read in steps set it.
    poll_budget_bytes: int
    #: False in a replay's shards: errors that are not any one session's (the index, the
    #: database as a whole) are counted once, by the main process (``monitor.replay_errors``).
    count_shared_errors: bool = True
    #: Whether what one of its sessions gives depends on its other sessions read before it
    #: (a reply copied into a resumed session's file counts once across files): a replay
    #: then reads all its sessions in one shard, and takes none from the cache unless all.
    sessions_read_together: bool = False
    #: When a dict (a replay's sources): each distinct error no session owns that this
    #: source raised, counted or not, by (path, where, message), the first
    #: ``SHARED_ERRORS_KEPT``, so that a replay counts each once however many of its shards
    #: raised it (``monitor.replay_errors``).
    shared_errors: dict[tuple[str, str, str], SourceError] | None = None
    #: ``time.monotonic()`` after which a ``poll()`` stops at its next step boundary (having
    #: done at least one) and sets ``behind``; None: no limit. Set by ``SourceSet.poll`` so
    #: a step (and with it a stop signal or a quit key) never waits long.
    deadline: float | None = None
    #: Set by ``SourceSet`` once the monitor is stopping (``note_stopping``): its steps are
    #: then small, so the reads it makes before its checkpoint end within the 2 s a stop takes.
    stopping: bool = False
    #: The last poll ended after the index (``index_went_first``).
    index_ended_poll: bool = False
    #: Set by the monitor when it detects only on the present: entries it will only count
    #: are read light (``transcript_light``). Sources with an index of their own use it.
    count_only: CountOnly | None = None

    def __init__(self, path: str) -> None:
        self.path = path
        self.events = 0
        self.errors = 0
        self.error_samples: list[SourceError] = []
        #: Sessions this source's own index last said are running: always read in full.
        self.running_sessions: set[str] = set()
        #: The only sessions this source reads (None: all): a replay shard's, or the one
        #: whose timeline is loaded.
        self.only_sessions: set[str] | frozenset[str] | None = None
        #: Where counted-only events are summed instead of given (a history reader's part).
        self.counted_sum: CountedSum | None = None

    def unfinished_of(self, session_ids: list[str]) -> set[str] | None:
        """Those of ``session_ids`` with a transcript this source may read more of in this
        pass (not read yet, being read, or held open); None when it cannot tell. Each of
        the others had every transcript of it this source follows read to the end."""
        return None

    def wants_session(self, session_id: str) -> bool:
        """Not one of the sessions ``only_sessions`` leaves to others."""
        return self.only_sessions is None or session_id in self.only_sessions

    def note_running(self, records: list) -> None:
        """Keep ``running_sessions`` up to date with the index records in ``records``."""
        for record in records:
            if isinstance(record, SessionInfo):
                if record.status == "running":
                    self.running_sessions.add(record.session_id)
                else:
                    self.running_sessions.discard(record.session_id)

    def only_counts(self, session_id: str) -> bool:
        """Whether the monitor only counts this session's older entries now: it is history
        by the monitor's view (``count_only``) and not running by this source's index."""
        count_only = self.count_only
        return count_only is not None and session_id not in self.running_sessions \
            and count_only.session_is_history(session_id)

    def counted(self, text: str | bytes, session_id: str, origin: str) -> list | None:
        """The events of an entry read light, if the monitor only counts it (else None:
        read it in full); with ``counted_sum`` set, none: they are added to it."""
        if not self.only_counts(session_id):
            return None
        count_only = self.count_only
        summed = self.counted_sum
        if summed is not None:
            count = count_into(summed, text, origin, count_only)
            if count is None:
                return None
            self.events += count
            return []
        events = counted_events(text, session_id, origin, count_only)
        if events is not None:
            self.events += len(events)
        return events

    def poll(self) -> list:
        raise NotImplementedError

    def out_of_time(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline

    def index_went_first(self, records: list) -> bool:
        """Whether this poll ends with the index's ``records``, setting ``behind``: reading
        them took the step's time (a large index, as in a first scan), so they are folded
        and shown before any transcript is listed or read. Never two polls in a row, so
        transcripts are read however often the index changes."""
        ends = bool(records) and not self.index_ended_poll and self.out_of_time()
        self.index_ended_poll = ends
        if ends:
            self.behind = True
        return ends

    def note_changed(self, paths: set[str] | None) -> None:
        """Paths the waker saw change (None: it could not tell which); a source that polls
        idle files only now and then looks at these at once."""

    def detached_first(self) -> bool:
        """Whether this source holds files a later run could not find (``FileFollower.
        detached``), now moved to where its next poll starts."""
        return False

    def checkpoint(self) -> dict:
        return {}

    def close(self) -> None:
        pass

    def error(self, where: str, message: str, *, path: str | None = None,
              shared: bool = False) -> SourceError:
        """A ``SourceError``, counted and kept as a sample (the first by place). ``shared``:
        not any one session's error (see ``count_shared_errors``)."""
        record = SourceError(self.kind, path or self.path, where, message, shared)
        if shared:
            if self.shared_errors is not None and len(self.shared_errors) < SHARED_ERRORS_KEPT:
                self.shared_errors.setdefault((record.path, where, message), record)
            if not self.count_shared_errors:
                return record
        self.errors += 1
        self._keep_sample(record)
        return record

    def _keep_sample(self, record: SourceError) -> None:
        samples = self.error_samples
        place = sample_order(record.path, record.where)
        if len(samples) < ERROR_SAMPLES_KEPT or place < sample_order(samples[-1].path,
                                                                      samples[-1].where):
            samples.append(record)
            samples.sort(key=lambda e: sample_order(e.path, e.where))
            del samples[ERROR_SAMPLES_KEPT:]

    def add_counts(self, events: int, errors: int, samples: list[SourceError]) -> None:
        """Events and errors this source's files gave when read elsewhere (a history
        reader), with their error samples."""
        self.events += events
        self.errors += errors
        for record in samples:
            self._keep_sample(record)

    def json_line(self, line, out: list) -> tuple[object, str] | None:
        """A transcript line (``tail.Line``) decoded: its JSON value and its text, or None
        when it is blank or unreadable (invalid UTF-8, a NUL byte, invalid JSON: then one
        error with the file and offset is added to ``out``)."""
        text = self.line_text(line, out)
        return None if text is None else self.json_text(text, line, out)

    def line_text(self, line, out: list) -> str | None:
        """The text of a transcript line, or None when it is blank, not UTF-8 or holds a
        NUL byte (then with an error in ``out``)."""
        if not line.data.strip():
            return None
        try:
            text = line.data.decode("utf-8")
        except UnicodeDecodeError as exc:
            out.append(self.error(f"offset {line.offset}", f"invalid UTF-8 at byte {exc.start}",
                                  path=line.path))
            return None
        if "\x00" in text:
            out.append(self.error(f"offset {line.offset}", "NUL byte in line", path=line.path))
            return None
        return text

    def json_text(self, text: str, line, out: list) -> tuple[object, str] | None:
        """``json_line`` of a line whose ``line_text`` is ``text``."""
        try:
            return untrusted_json.loads(text), text
        except ValueError as exc:
            out.append(self.error(f"offset {line.offset}", f"invalid JSON: {exc}",
                                  path=line.path))
            return None

    def give_notices(self, notices: list, out: list) -> None:
        """Followers' notices (``TailNotice``) as records; the same message from more than
        ``NOTICES_SHOWN_SINGLY`` files (a first start over thousands of transcripts) is one
        record with the count and a few examples (errors still count once per file)."""
        groups: dict[tuple[bool, str], list] = {}
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

    def summary(self) -> dict:
        return {
            "kind": self.kind,
            "path": self.path,
            "events": self.events,
            "errors": self.errors,
            "error_samples": [error_sample(e) for e in self.error_samples],
        }


def error_sample(error: SourceError) -> dict:
    """An error as a document's ``error_samples`` hold it."""
    return {"path": error.path, "where": error.where, "message": error.message}


def file_units(paths: list[str], session_of) -> dict[str, tuple[int, list]]:
    """``transcript_units`` of transcript files: bytes, and (path, size, mtime, inode) of
    each file, per session. A file named by two paths (a symlink or a hard link) counts
    under the first, the one its source follows."""
    units: dict[str, tuple[int, list]] = {}
    counted: set[tuple[int, int]] = set()
    for path in paths:
        st = _stat_or_none(path)
        if st is not None:
            if (st.st_dev, st.st_ino) in counted:
                continue
            counted.add((st.st_dev, st.st_ino))
        identity = _identity(path, st)
        weight, files = units.get(session_of(path), (0, []))
        files.append(identity)
        units[session_of(path)] = (weight + (identity[1] or 0), files)
    return units


def file_identity(path: str) -> list:
    """``[path, size, mtime, inode]`` of a file now (Nones when it cannot be stat'ed)."""
    return _identity(path, _stat_or_none(path))


def _identity(path: str, st: os.stat_result | None) -> list:
    if st is None:
        return [path, None, None, None]
    return [path, st.st_size, st.st_mtime_ns, st.st_ino]


def _stat_or_none(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except OSError:
        return None

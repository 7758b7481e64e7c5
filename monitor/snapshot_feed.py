"""What the dashboard keeps beside the ``Monitor``: the gateway-log tail and each session's
tool-call timeline (the pipeline hands neither over).

``SnapshotFeed`` sits between the ``SourceSet`` and the ``Monitor`` and releases a large
backlog in slices, so the board fills progressively during the first scan instead of
freezing. History the monitor only counts (``Monitor.detect_since``: older than
``history.active_within``, its session not running) gets no timeline entries while it is
read, only its calls counted; a session's timeline is read from its transcripts when it is
first looked at (``SnapshotFeed.load_history``).

Headless, like the snapshot: every string kept for showing has been redacted and made
``printable``.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from monitor.display import printable
from monitor.events import (
    AssistantMessage,
    CountedHistory,
    GatewayNotice,
    SessionInfo,
    ToolCall,
    ToolResult,
)
from monitor.redaction import (
    clip,
    format_arguments,
    redact,
    redact_text,
    redacted_cut,
    shown_start,
)
from monitor.shown import shown_redacted

SLICE_EVENTS = 4000             # events released per step while a backlog drains
LOG_LINES = 1000
LOG_MESSAGE_CHARS = 4000        # of a gateway-log line's message (the pane shows a line)
TIMELINE_CALLS = 200
ARGS_CHARS = 400
OUTCOME_CHARS = 120
#: Of a session's transcripts, what one poll of a timeline load reads.
HISTORY_POLL_BYTES = 1 << 20


@dataclass(frozen=True, slots=True)
class LogLine:
    seq: int
    ts: float | None
    level: str
    subsystem: str
    message: str


@dataclass(frozen=True, slots=True)
class TimelineEntry:
    index: int
    ts: float | None
    tool: str
    arguments: str
    outcome: str
    exit_code: int | None
    is_error: bool
    repeats: bool
    marks: tuple[tuple[str, str], ...]
    tokens_in: int | None
    tokens_out: int | None



class _Call:
    __slots__ = ("arguments", "exit_code", "index", "is_error", "key", "outcome", "repeats",
                 "tokens_in", "tokens_out", "tool", "ts")

    def __init__(self, index: int, event: ToolCall, usage: tuple[int, int] | None) -> None:
        self.index, self.ts, self.tool = index, event.ts, shown_redacted(event.name)
        self.arguments = clip(printable(format_arguments(redact(event.arguments, ARGS_CHARS))),
                              ARGS_CHARS)
        self.outcome, self.exit_code, self.is_error = "…", None, False
        self.repeats, self.key = False, ""
        self.tokens_in, self.tokens_out = usage if usage else (None, None)

    def freeze(self, marks: tuple[tuple[str, str], ...]) -> TimelineEntry:
        return TimelineEntry(self.index, self.ts, self.tool, self.arguments, self.outcome,
                             self.exit_code, self.is_error, self.repeats, marks,
                             self.tokens_in, self.tokens_out)


_NO_CALLS: tuple = ()
_NO_PENDING: dict = {}      # never written to: replaced by a dict of its own first


class _Timeline:
    """One session's calls. A session whose calls are all history the monitor only counts
    (most of a large state dir) keeps no containers: ``calls`` and ``pending`` are shared
    empty ones until its first recorded call (an empty deque alone is 600 bytes)."""

    __slots__ = ("calls", "count", "loaded_through", "pending", "unread", "usage")

    def __init__(self) -> None:
        self.calls: deque[_Call] | tuple = _NO_CALLS
        self.pending: dict[str, _Call] = _NO_PENDING
        self.count = 0
        #: Calls of history counted but not recorded: read when the timeline is looked at.
        self.unread = 0
        #: Calls numbered up to this were read from the transcripts by ``load_history`` (a
        #: load during the first scan reads ahead of what the scan has counted).
        self.loaded_through = 0
        self.usage: tuple[int, int] | None = None


class SnapshotFeed:
    """Wraps a ``SourceSet`` (``Monitor.sources``), recording what the snapshot needs.

    ``poll()`` hands events on in slices of at most ``slice_events`` (session index
    records are cheap and do not count, so the whole index shows at once); ``backlog``
    says how many read events still wait, ``released`` how many went through.

    A timeline call "repeats" when its outcome key equals an earlier call's. With
    ``keyed_by_engine`` the key is the detection engine's own (volatile values masked),
    handed over through ``outcome_known`` as the engine folds the result, so no outcome is
    normalised twice; a result the engine did not key by the next poll falls back to a
    plain hash of tool, arguments and text.
    """

    def __init__(self, sources, *, keyed_by_engine: bool = False,
                 slice_events: int = SLICE_EVENTS) -> None:
        self.inner = sources
        self.slice_events = slice_events
        #: The gateway-log tail as shown, and the notices that joined it since (made shown
        #: only when the tail is asked for: of a first scan's 44,000 lines, 1,000 ever are).
        self._shown_log: deque[LogLine] = deque(maxlen=LOG_LINES)
        self._unshown_log: deque[tuple[int, GatewayNotice]] = deque(maxlen=LOG_LINES)
        self.timelines: dict[str, _Timeline] = {}
        self.keyed_by_engine = keyed_by_engine
        #: ``(session_id, call_id) -> (timeline, call, result text)`` until the engine keys it.
        self._awaiting_key: dict[tuple[str, str], tuple[_Timeline, _Call, str]] = {}
        self.pending: deque = deque()
        #: Calls numbered below this are only counted, never shown (``load_history`` knows
        #: how many of a session's calls it can keep; making each shown is redacting it).
        self.shown_from = 0
        #: ``is_history(event)``: the monitor counts it without detecting on it (set by the
        #: snapshot builder); such calls get no timeline entry until ``load_history``.
        self.is_history: Callable[[object], bool] | None = None
        #: Set when the dashboard stops (the ingest loop's ``stopped``): ``load_history``
        #: gives up its read at the next poll of the transcripts.
        self.stop_requested: threading.Event | None = None
        self.read = 0
        self.released = 0
        self._log_seq = 0
        self._history_read: _HistoryRead | None = None

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    @property
    def log(self) -> deque[LogLine]:
        """The last ``LOG_LINES`` gateway-log lines, oldest first, redacted and printable."""
        if len(self._unshown_log) == LOG_LINES:
            self._shown_log.clear()
        for seq, notice in self._unshown_log:
            self._shown_log.append(LogLine(
                seq, notice.ts, shown_redacted((notice.level or "?").upper(), 12),
                shown_redacted(notice.subsystem or ""),
                printable(redacted_cut(notice.message, LOG_MESSAGE_CHARS), keep_newlines=True)))
        self._unshown_log.clear()
        return self._shown_log

    @property
    def backlog(self) -> int:
        return len(self.pending)

    def outcome_known(self, session_id: str, call_id: str, key: str) -> None:
        """The engine's outcome key for a result this feed recorded."""
        waiting = self._awaiting_key.pop((session_id, call_id), None)
        if waiting is not None:
            line, call, _ = waiting
            _set_key(line, call, key)

    def poll(self) -> list:
        for line, call, text in self._awaiting_key.values():
            _set_key(line, call, _plain_key(call, text))
        self._awaiting_key.clear()
        if not self.pending:
            fresh = self.inner.poll()
            self.read += len(fresh)
            self.pending.extend(fresh)
        if len(self.pending) <= self.slice_events:      # the whole backlog fits one slice
            out = list(self.pending)
            self.pending.clear()
        else:
            out = []
            heavy = 0
            while self.pending and heavy < self.slice_events:
                event = self.pending.popleft()
                out.append(event)
                heavy += not isinstance(event, SessionInfo)
        self.released += len(out)
        for event in out:
            self._record(event)
        return out

    def _record(self, event) -> None:
        if isinstance(event, GatewayNotice):
            self._log_seq += 1
            self._unshown_log.append((self._log_seq, event))
        elif isinstance(event, ToolCall):
            line = self._timeline(event.session_id)
            line.count += 1
            if line.count < self.shown_from:
                return
            if self.is_history is not None and self.is_history(event):
                if line.count > line.loaded_through:
                    line.unread += 1
                line.usage = None
                return
            call = _Call(line.count, event, line.usage)
            line.usage = None
            if line.calls is _NO_CALLS:
                line.calls = deque(maxlen=TIMELINE_CALLS)
            if line.pending is _NO_PENDING:
                line.pending = {}
            if line.count <= line.loaded_through:
                _replace_loaded(line, call)
            else:
                line.calls.append(call)
            line.pending[event.call_id] = call
            if len(line.pending) > TIMELINE_CALLS:
                line.pending.pop(next(iter(line.pending)))
        elif isinstance(event, AssistantMessage):
            if self.is_history is not None and self.is_history(event):
                return
            self._timeline(event.session_id).usage = (event.usage.input, event.usage.output)
        elif isinstance(event, ToolResult):
            line = self.timelines.get(event.session_id)
            call = line.pending.pop(event.call_id, None) if line else None
            if call is not None:
                self._fill(line, call, event)
        elif isinstance(event, CountedHistory) and event.tool_calls:
            line = self._timeline(event.session_id)
            counted_to = max(line.count, line.loaded_through)
            line.count += event.tool_calls
            line.unread += max(0, line.count - counted_to)
            line.usage = None

    def _timeline(self, session_id: str) -> _Timeline:
        line = self.timelines.get(session_id)
        if line is None:
            line = self.timelines[session_id] = _Timeline()
        return line

    @property
    def reading_history(self) -> int | None:
        """Calls read so far by a timeline load under way (``load_history``); None when
        none is."""
        return self._history_read.total if self._history_read is not None else None

    def load_history(self, session_id: str | None, seconds: float | None = None) -> bool:
        """Put the newest history calls of a session's timeline in place beside its recorded
        ones, read from its transcripts; again only when more history is counted. Returns
        whether the timeline is complete.

        With ``seconds``, the read stops after about that long and goes on at the next call
        for the same session (one for another session, or for None, drops it). The
        transcripts are read to their current end, which during the first scan is ahead of
        what the scan has counted: those calls are shown now and not counted as unread when
        the scan reaches them. A stop (``stop_requested``) abandons the read."""
        read = self._history_read
        if read is not None and read.session_id != session_id:
            self.drop_history_read()
            read = None
        line = self.timelines.get(session_id) if session_id is not None else None
        if read is None:
            if line is None or not line.unread or not hasattr(self.inner, "session_reader"):
                return True
            read = self._history_read = _HistoryRead(session_id,
                                                     self.inner.session_reader(session_id))
        deadline = None if seconds is None else time.monotonic() + seconds
        if not read.step(deadline, self.stop_requested):
            if self.stop_requested is not None and self.stop_requested.is_set():
                self.drop_history_read()
                return True
            return False
        self.drop_history_read()
        if line is None:
            return True
        recorded = {c.index for c in line.calls}
        merged = sorted([*(c for c in read.calls() if c.index not in recorded), *line.calls],
                        key=_call_index)
        line.calls = deque(merged[-TIMELINE_CALLS:], maxlen=TIMELINE_CALLS)
        line.loaded_through = max(line.loaded_through, read.total)
        line.unread = 0
        return True

    def drop_history_read(self) -> None:
        """End a timeline load under way, closing its reader."""
        read, self._history_read = self._history_read, None
        if read is not None:
            read.reader.close()

    def close(self) -> None:
        self.drop_history_read()
        self.inner.close()

    def _fill(self, line: _Timeline, call: _Call, result: ToolResult) -> None:
        text = _fill_outcome(call, result)
        if self.keyed_by_engine:
            self._awaiting_key[(result.session_id, result.call_id)] = (line, call, text)
        else:
            _set_key(line, call, _plain_key(call, text))


def _fill_outcome(call: _Call, result: ToolResult) -> str:
    """Give ``call`` the shown outcome of ``result``; returns the result's whole text."""
    details = result.details if isinstance(result.details, dict) else {}
    code = details.get("exitCode")
    call.exit_code = code if isinstance(code, int) and not isinstance(code, bool) else None
    call.is_error = result.is_error
    text = result.text or str(details.get("aggregated") or details.get("status") or "")
    start = redact_text(shown_start(text, OUTCOME_CHARS))
    call.outcome = clip(printable(start), OUTCOME_CHARS) or "(empty)"
    return text


def _call_index(call: _Call) -> int:
    return call.index


def _replace_loaded(line: _Timeline, call: _Call) -> None:
    """Record ``call`` in place of the entry ``load_history`` read ahead for its number."""
    kept = [c for c in line.calls if c.index != call.index]
    kept.append(call)
    if len(kept) > 1 and kept[-2].index > call.index:
        kept.sort(key=_call_index)
    line.calls = deque(kept[-TIMELINE_CALLS:], maxlen=TIMELINE_CALLS)


class _HistoryRead:
    """A session's transcripts being read for its timeline, from their start: the calls
    counted so far and the newest ``TIMELINE_CALLS`` of them with their results. It reads
    in steps (``step``) so that a long transcript does not hold the board's live events
    back; each poll reads at most ``HISTORY_POLL_BYTES``."""

    __slots__ = ("newest", "reader", "results", "session_id", "total", "usage")

    def __init__(self, session_id: str, reader) -> None:
        self.session_id = session_id
        self.reader = reader
        for source in getattr(reader, "sources", ()):
            if hasattr(source, "poll_budget_bytes"):
                source.poll_budget_bytes = min(source.poll_budget_bytes, HISTORY_POLL_BYTES)
        self.total = 0
        self.usage: tuple[int, int] | None = None
        self.newest: deque[tuple[int, ToolCall, tuple[int, int] | None]] = \
            deque(maxlen=TIMELINE_CALLS)
        self.results: dict[str, ToolResult | None] = {}

    def step(self, deadline: float | None, stop_requested: threading.Event | None) -> bool:
        """Read until the transcripts' end (True), or until ``time.monotonic()`` passes
        ``deadline`` or a stop is requested (False)."""
        while stop_requested is None or not stop_requested.is_set():
            events = self.reader.poll()
            for event in events:
                self._take(event)
            if not events and not self.reader.behind:
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False
        return False

    def _take(self, event) -> None:
        if isinstance(event, ToolCall):
            self.total += 1
            if len(self.newest) == TIMELINE_CALLS:
                self.results.pop(self.newest[0][1].call_id, None)
            self.newest.append((self.total, event, self.usage))
            self.results[event.call_id] = None
            self.usage = None
        elif isinstance(event, ToolResult):
            if event.call_id in self.results and self.results[event.call_id] is None:
                self.results[event.call_id] = event
        elif isinstance(event, AssistantMessage):
            self.usage = (event.usage.input, event.usage.output)
        elif isinstance(event, CountedHistory):
            self.total += event.tool_calls
            self.usage = None

    def calls(self) -> list[_Call]:
        """The newest calls read, with their outcomes. Only these are redacted: a
        transcript of 300,000 calls shows 200."""
        line = _Timeline()
        line.calls = deque(maxlen=TIMELINE_CALLS)
        for index, event, call_usage in self.newest:
            call = _Call(index, event, call_usage)
            line.calls.append(call)
            result = self.results.get(event.call_id)
            if result is not None:
                _set_key(line, call, _plain_key(call, _fill_outcome(call, result)))
        return list(line.calls)


def _plain_key(call: _Call, text: str) -> str:
    return hashlib.sha1(f"{call.tool}\0{call.arguments}\0{text}".encode(
        "utf-8", "replace")).hexdigest()


def _set_key(line: _Timeline, call: _Call, key: str) -> None:
    call.key = key
    call.repeats = any(c.key == key for c in line.calls if c is not call and c.key)

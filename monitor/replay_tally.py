"""What each session's transcripts gave a replay shard: events, errors and error samples per
source, so the replay cache can give them again without reading the session.

A source counts its events and errors as a whole; here each one is placed on the session it
came from, by the event's ``session_id`` and the error's file (``Source.session_of``) or
``<session>:<seq>`` row. ``agrees`` checks the placed counts add up to the sources' own: a
count that could not be placed makes the shard's sessions uncacheable, never wrong.
"""

from __future__ import annotations

from monitor.events import (
    AssistantMessage,
    Compaction,
    CountedHistory,
    GatewayNotice,
    LoopVeto,
    ModelChange,
    SessionInfo,
    SessionStart,
    SourceError,
    SourceNotice,
    ToolCall,
    ToolResult,
    UserMessage,
)
from monitor.sources.base import ERROR_SAMPLES_KEPT, error_sample, sample_order
from monitor.sources.sourceset import source_id

#: What a transcript's entries become: each counted on its ``session_id`` by its ``origin``.
_TRANSCRIPT_EVENT_TYPES = frozenset({
    AssistantMessage, Compaction, CountedHistory, LoopVeto, ModelChange, SessionStart, ToolCall,
    ToolResult, UserMessage})


class UnitTally:
    def __init__(self, sources: list) -> None:
        self._sources = sorted(sources, key=lambda s: len(s.path), reverse=True)
        self._ids = {id(s): source_id(s) for s in sources}
        #: Sources whose path no other source's path extends: an origin under one of them
        #: is that source's, so the source of the event before can be taken again.
        self._outermost = {id(s) for s in sources if not any(
            other is not s and other.path.startswith(s.path) for other in sources)}
        #: session_id -> source_id -> [events, errors, samples]
        self.units: dict[str, dict[str, list]] = {}
        self.unplaced = 0

    def add(self, events: list) -> None:
        last = None                 # the source of the event before, when outermost
        counted_sid = counted = None    # the session and events count of the event before
        for event in events:
            if type(event) in _TRANSCRIPT_EVENT_TYPES:
                sid, origin = event.session_id, event.origin
            elif self._added_apart(event):
                continue
            else:                       # a kind of event this tally does not know
                sid = getattr(event, "session_id", None)
                origin = getattr(event, "origin", "")
            if last is not None and origin.startswith(last.path):
                if sid == counted_sid and sid:
                    counted[0] += 1
                    continue
                source = last
            else:
                source = self._source_of(origin)
                last = source if source is not None and id(source) in self._outermost \
                    else None
            if sid and source is not None:
                counted = self._count(sid, source, 0)
                counted_sid = sid
            else:
                self.unplaced += 1
                counted_sid = None

    def _added_apart(self, event) -> bool:
        """Whether ``event`` is an error, a notice or an index record, tallied (or not) here
        rather than placed by its origin as ``add`` places the rest."""
        if isinstance(event, SourceError):
            if not event.shared:        # counted by the main process, not here
                self._error(event)
        elif isinstance(event, SessionInfo):
            source = self._source_of(event.origin)
            if source is not None and source.kind == "jsonl" \
                    and hasattr(source, "read_entry"):     # written with its transcript
                self._count(event.session_id, source, 0)
        elif not isinstance(event, (SourceNotice, GatewayNotice)):
            return False
        return True

    def agrees(self, sources: list) -> bool:
        """Every count placed: per source, the sessions' events and errors add up to its."""
        if self.unplaced:
            return False
        for source in sources:
            sid = self._ids.get(id(source))
            events = sum(u[sid][0] for u in self.units.values() if sid in u)
            errors = sum(u[sid][1] for u in self.units.values() if sid in u)
            if (events, errors) != (source.events, source.errors):
                return False
        return True

    def _error(self, error: SourceError) -> None:
        source = self._source_of(error.path)
        sid = None
        if source is not None:
            if source.kind == "sqlite":
                head, colon, seq = error.where.rpartition(":")
                sid = head if colon and seq.isdigit() else None
            elif error.path != source.path and hasattr(source, "session_of"):
                sid = source.session_of(error.path)
        if sid is None:
            self.unplaced += 1
            return
        unit = self._count(sid, source, 1)
        samples = unit[2]
        samples.append(error_sample(error))
        samples.sort(key=lambda e: sample_order(e["path"], e["where"]))
        del samples[ERROR_SAMPLES_KEPT:]

    def _count(self, session_id: str, source, kind: int) -> list:
        of_session = self.units.get(session_id)
        if of_session is None:
            of_session = self.units[session_id] = {}
        name = self._ids[id(source)]
        unit = of_session.get(name)
        if unit is None:
            unit = of_session[name] = [0, 0, []]
        unit[kind] += 1
        return unit

    def _source_of(self, where: str):
        for source in self._sources:
            if where.startswith(source.path):
                return source
        return None

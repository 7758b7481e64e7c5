"""What the gateway's ``agent`` events say about runs and their exec processes.

Every operator connection receives ``agent`` events. ``stream:"lifecycle"`` tells when a
run starts and ends (``phase`` ``end`` or ``error``); ``stream:"tool"`` with
``phase:"update"`` carries ``partialResult.details.pid`` (the exec shell, sent once the
command printed something) and ``phase:"result"`` of a backgrounded exec carries it too.
``RunTracker.feed`` is the ``on_event`` of a ``GatewayConnection`` (it runs on the reader
thread); the rest is read from other threads.

The gateway is not trusted with clawwatch's memory: of each event only what is used is
kept, ids cut to ``MAX_ID_CHARS``, an exec's output only as its last ``MAX_TAIL_CHARS``
and its lines as hashes, so the few hundred runs and pids remembered stay small whatever
size the frames have.
"""

from __future__ import annotations

import re
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field

MAX_RUNS = 512
MAX_PIDS = 1024
MAX_LINES = 2000
MAX_EPOCH_MS = 2**53          # the latest time in ms a gateway (JavaScript) writes exactly
MAX_ID_CHARS = 256            # a run id, session key or tool call id (a UUID is 36)
MAX_TAIL_CHARS = 16 * 1024    # the end of an exec's output compared between updates
END_FIELDS = ("phase", "status", "stopReason", "aborted")   # what a run's end is shown by
REPETITIVE_AFTER = 3          # updates without a new line before output counts as repetitive
_DIGITS = re.compile(r"\d+")
_SPACE = re.compile(r"\s+")


def _line_key(line: str) -> int:
    """A line with numbers and spacing masked, so a counter or a clock is not news; as a
    hash, so the lines seen cost a few bytes each."""
    return hash(_SPACE.sub(" ", _DIGITS.sub("#", line)).strip())


def ident(value) -> str:
    """An id from an event or an answer as text, cut to ``MAX_ID_CHARS``."""
    return str(value)[:MAX_ID_CHARS]


def _end_data(data: dict) -> dict:
    """The fields of a run's terminal lifecycle data that say how it ended, each scalar
    cut to ``MAX_ID_CHARS``."""
    return {name: data[name] if isinstance(data[name], (bool, int, float)) else ident(data[name])
            for name in END_FIELDS if data.get(name) is not None}


@dataclass
class ExecPid:
    """An exec shell the gateway reported, for which session and run, and whether its
    output (the ``tail`` of each update) still brings lines not seen before."""

    pid: int
    session_key: str
    run_id: str
    tool_call_id: str
    process_session: str | None
    started_at: float | None
    last_output_at: float
    tail: str = ""
    background: bool = False
    last_novel_at: float = 0.0
    updates_since_novel: int = 0
    seen_lines: set[int] = field(default_factory=set, repr=False)

    def observe_tail(self, tail: str, now: float) -> None:
        tail = tail[-MAX_TAIL_CHARS:]
        if tail == self.tail:
            return
        self.tail, self.last_output_at = tail, now
        novel = False
        for line in tail.splitlines():
            if not line.strip():
                continue
            key = _line_key(line)
            if key not in self.seen_lines and len(self.seen_lines) < MAX_LINES:
                self.seen_lines.add(key)
                novel = True
        if novel:
            self.last_novel_at, self.updates_since_novel = now, 0
        else:
            self.updates_since_novel += 1

    @property
    def repetitive(self) -> bool:
        """Its latest output only repeated lines already seen."""
        return self.updates_since_novel >= REPETITIVE_AFTER


class RunTracker:
    def __init__(self, clock=time.time) -> None:
        self._clock = clock
        self._cond = threading.Condition()
        self._active: OrderedDict[str, str] = OrderedDict()
        self._ended: OrderedDict[str, dict] = OrderedDict()
        self._pids: OrderedDict[int, ExecPid] = OrderedDict()
        self._new_keys: dict[str, None] = {}
        self._waits_over = False

    def feed(self, frame: dict) -> None:
        """One event frame: ``agent`` (lifecycle is sent to every operator connection, tool
        only to the run's owner) or ``session.tool`` (tool events of the sessions this
        connection subscribed to with ``sessions.messages.subscribe``)."""
        if frame.get("event") not in ("agent", "session.tool"):
            return
        payload = frame.get("payload")
        if not isinstance(payload, dict):
            return
        data = payload.get("data") if isinstance(payload.get("data"), dict) else {}
        run_id = ident(payload.get("runId") or "")
        key = ident(payload.get("sessionKey") or "")
        stream = payload.get("stream")
        with self._cond:
            if stream == "lifecycle" and run_id:
                phase = data.get("phase")
                if phase in ("end", "error"):
                    self._active.pop(run_id, None)
                    self._ended[run_id] = {**_end_data(data), "sessionKey": key}
                    _trim(self._ended, MAX_RUNS)
                elif run_id not in self._ended:
                    if run_id not in self._active and key:
                        self._new_keys[key] = None
                    self._active[run_id] = key
                    _trim(self._active, MAX_RUNS)
            elif stream == "tool" and data.get("phase") in ("update", "result"):
                self._note_pid(key, run_id, data)
            self._cond.notify_all()

    def _note_pid(self, key: str, run_id: str, data: dict) -> None:
        result = data.get("partialResult") if data.get("phase") == "update" else data.get(
            "result")
        details = result.get("details") if isinstance(result, dict) else None
        if not isinstance(details, dict):
            return
        pid = details.get("pid")
        if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 1:
            return
        now = self._clock()
        tail = str(details.get("tail") or "")
        started = details.get("startedAt")
        started = started / 1000.0 if type(started) in (int, float) \
            and 0 < started < MAX_EPOCH_MS else None
        known = self._pids.get(pid)
        if known is None or known.session_key != key or (
                started is not None and known.started_at is not None
                and abs(started - known.started_at) > 1):
            known = ExecPid(
                pid, key, run_id, ident(data.get("toolCallId") or ""),
                ident(details["sessionId"]) if isinstance(details.get("sessionId"), str)
                else None,
                started, now, last_novel_at=now)
            self._pids[pid] = known
            _trim(self._pids, MAX_PIDS)
        known.observe_tail(tail, now)
        known.background = known.background or data.get("phase") == "result"

    # ------------------------------------------------------------------ reading

    def take_new_keys(self) -> list[str]:
        """Session keys whose runs started since the last call (to subscribe to)."""
        with self._cond:
            keys, self._new_keys = list(self._new_keys), {}
        return keys

    def end_waits(self) -> None:
        """clawwatch is stopping: ``wait_run_ends`` returns at once, now and later."""
        with self._cond:
            self._waits_over = True
            self._cond.notify_all()

    def wait_run_ends(self, run_ids: list[str], timeout: float) -> dict[str, dict]:
        """The terminal lifecycle data of those runs that end within ``timeout`` seconds
        (or before ``end_waits``)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                ended = {run: self._ended[run] for run in run_ids if run in self._ended}
                remaining = deadline - time.monotonic()
                if len(ended) == len(run_ids) or remaining <= 0 or self._waits_over:
                    return ended
                self._cond.wait(remaining)

    def exec_pids(self, session_key: str | None = None) -> list[ExecPid]:
        with self._cond:
            return [entry for entry in self._pids.values()
                    if session_key is None or entry.session_key == session_key]

    def owner(self, pid: int) -> ExecPid | None:
        with self._cond:
            return self._pids.get(pid)


def _trim(mapping: OrderedDict, limit: int) -> None:
    while len(mapping) > limit:
        mapping.popitem(last=False)

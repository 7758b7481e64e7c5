"""Acknowledgements and the bell, kept apart from Textual so the rules are easy to test.

A critical alert rings the bell when it arrives (history from the first scan
never does). Bursts ring once: at most one bell per ``BELL_MIN_INTERVAL``.
While an unacknowledged critical remains and ``bell_repeat_seconds`` is set,
the bell repeats, never more often than ``BELL_REPEAT_FLOOR``. Muting stops
both; toasts still appear.

What the person did about the alerts (acknowledgements, the mute) is an
``AlertMarks`` value, replaced on each change and handed to ``on_change``: the app
keeps it in a reactive that the alerts pane follows.

Toasts come one per burst: criticals that arrive within ``BURST_QUIET`` of each
other (for at most ``BURST_LONGEST``) are gathered by ``CriticalBurst`` and
announced together, naming their sessions (``burst_toast``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from functools import cached_property

from monitor.redaction import clip_redacted
from monitor.snapshot import AlertEntry

BELL_MIN_INTERVAL = 1.0
BELL_REPEAT_FLOOR = 2.0
BURST_QUIET = 1.0
BURST_LONGEST = 4.0
BURST_NAMED = 3


@dataclass(frozen=True)
class AlertMarks:
    """Acknowledged up to which alert ``seq`` (overall, and per session key), and whether the
    bell is muted. Frozen: a change is a new value, so it can be a reactive's value."""

    acked_all: int = 0
    acked_by_session: tuple[tuple[str, int], ...] = ()
    muted: bool = False

    @cached_property
    def _acked_up_to(self) -> dict[str, int]:
        return dict(self.acked_by_session)

    def is_acked(self, alert: AlertEntry) -> bool:
        """History, actions and notices never need acknowledging; findings do."""
        if alert.history or alert.kind != "finding":
            return True
        return alert.seq <= max(self.acked_all, self._acked_up_to.get(alert.session_key, 0))

    def acknowledged(self, top: int, session_key: str | None = None) -> AlertMarks:
        """These marks with every alert up to ``top`` acknowledged (of ``session_key``)."""
        if session_key is None:
            return replace(self, acked_all=max(self.acked_all, top))
        acked = dict(self.acked_by_session)
        acked[session_key] = max(acked.get(session_key, 0), top)
        return replace(self, acked_by_session=tuple(sorted(acked.items())))


class AlertBook:
    def __init__(self, clock: Callable[[], float], *, bell: bool = True,
                 repeat_seconds: float = 0.0,
                 on_change: Callable[[AlertMarks], None] | None = None) -> None:
        self.clock = clock
        self.bell_enabled = bell
        self.repeat_seconds = repeat_seconds
        self.on_change = on_change
        """Called with the new marks whenever an acknowledgement or the mute changes them."""
        self.marks = AlertMarks()
        self.last_seen = 0
        self.last_ring: float | None = None

    @property
    def muted(self) -> bool:
        return self.marks.muted

    @muted.setter
    def muted(self, muted: bool) -> None:
        self._mark(replace(self.marks, muted=bool(muted)))

    def _mark(self, marks: AlertMarks) -> None:
        if marks != self.marks:
            self.marks = marks
            if self.on_change is not None:
                self.on_change(marks)

    def is_acked(self, alert: AlertEntry) -> bool:
        return self.marks.is_acked(alert)

    def acknowledge(self, alerts: Iterable[AlertEntry], session_key: str | None = None) -> int:
        """Acknowledge every alert so far (of ``session_key`` when given); returns how many."""
        alerts = list(alerts)
        pending = [a for a in alerts if not self.is_acked(a)
                   and (session_key is None or a.session_key == session_key)]
        self._mark(self.marks.acknowledged(max((a.seq for a in alerts), default=0),
                                           session_key))
        return len(pending)

    def unacked_critical(self, alerts: Iterable[AlertEntry]) -> list[AlertEntry]:
        return [a for a in alerts if a.level == "critical" and not self.is_acked(a)]

    def take_new(self, alerts: Iterable[AlertEntry]) -> list[AlertEntry]:
        """Alerts that arrived since the last call (history excluded)."""
        fresh = [a for a in alerts if a.seq > self.last_seen and not a.history]
        for alert in alerts:
            self.last_seen = max(self.last_seen, alert.seq)
        return fresh

    def should_ring(self, new_criticals: int, alerts: Iterable[AlertEntry]) -> bool:
        """Whether to ring now; records the ring when it says yes."""
        if self.muted or not self.bell_enabled:
            return False
        now = self.clock()
        since = None if self.last_ring is None else now - self.last_ring
        ring = False
        if new_criticals:
            ring = since is None or since >= BELL_MIN_INTERVAL
        elif self.repeat_seconds > 0 and since is not None \
                and since >= max(self.repeat_seconds, BELL_REPEAT_FLOOR):
            ring = bool(self.unacked_critical(alerts))
        if ring:
            self.last_ring = now
        return ring


class CriticalBurst:
    """Criticals gathered for one toast; ``add`` says how long to wait before showing it."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.pending: list[AlertEntry] = []
        self.began: float | None = None

    def add(self, criticals: Iterable[AlertEntry]) -> float:
        """Gather ``criticals``; returns the seconds until the burst is announced."""
        now = self.clock()
        if self.began is None:
            self.began = now
        self.pending.extend(criticals)
        return max(0.0, min(BURST_QUIET, self.began + BURST_LONGEST - now))

    def take(self) -> list[AlertEntry]:
        """The burst's criticals; the next ``add`` begins a new burst."""
        pending, self.pending, self.began = self.pending, [], None
        return pending


def burst_toast(criticals: list[AlertEntry]) -> tuple[str, str]:
    """(title, message) of the one toast of a burst: "5 criticals: <sessions>" and what
    fired. Redacted before it is cut (a halved secret could escape its rule); the app's
    ``notify`` makes it printable."""
    sessions = list(dict.fromkeys(a.session_key for a in criticals))
    named = ", ".join(clip_redacted(key, 80) for key in sessions[:BURST_NAMED])
    if len(sessions) > BURST_NAMED:
        named += f" and {len(sessions) - BURST_NAMED} more"
    count = len(criticals)
    lines = [f"{count} critical{'s' if count > 1 else ''}: {named}"]
    if count == 1:
        alert = criticals[0]
        lines.append(f"{alert.detector} ×{alert.count}: {clip_redacted(alert.message, 200)}")
    else:
        detectors: dict[str, int] = {}
        for alert in criticals:
            detectors[alert.detector] = detectors.get(alert.detector, 0) + 1
        lines.append(", ".join(f"{name} ({n})" for name, n in detectors.items()))
    return f"{count} critical finding{'s' if count > 1 else ''}", "\n".join(lines)

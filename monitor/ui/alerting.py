"""Acknowledgements and the bell, kept apart from Textual so the rules are easy to test.

A critical alert rings the bell when it arrives (history from the first scan
never does). Bursts ring once: at most one bell per ``BELL_MIN_INTERVAL``.
While an unacknowledged critical remains and ``bell_repeat_seconds`` is set,
the bell repeats, never more often than ``BELL_REPEAT_FLOOR``. Muting stops
both; toasts still appear.

Toasts come one per burst: criticals that arrive within ``BURST_QUIET`` of each
other (for at most ``BURST_LONGEST``) are gathered by ``CriticalBurst`` and
announced together, naming their sessions (``burst_toast``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from monitor.snapshot import AlertEntry

BELL_MIN_INTERVAL = 1.0
BELL_REPEAT_FLOOR = 2.0
BURST_QUIET = 1.0
BURST_LONGEST = 4.0
BURST_NAMED = 3


class AlertBook:
    def __init__(self, clock: Callable[[], float], *, bell: bool = True,
                 repeat_seconds: float = 0.0) -> None:
        self.clock = clock
        self.bell_enabled = bell
        self.repeat_seconds = repeat_seconds
        self.muted = False
        self.acked_all = 0
        self.acked_by_session: dict[str, int] = {}
        self.last_seen = 0
        self.last_ring: float | None = None

    def is_acked(self, alert: AlertEntry) -> bool:
        if alert.history or alert.kind != "finding":
            return True
        return alert.seq <= max(self.acked_all, self.acked_by_session.get(alert.session_key, 0))

    def acknowledge(self, alerts: Iterable[AlertEntry], session_key: str | None = None) -> int:
        """Acknowledge every alert so far (of ``session_key`` when given); returns how many."""
        alerts = list(alerts)
        pending = [a for a in alerts if not self.is_acked(a)
                   and (session_key is None or a.session_key == session_key)]
        top = max((a.seq for a in alerts), default=0)
        if session_key is None:
            self.acked_all = max(self.acked_all, top)
        else:
            self.acked_by_session[session_key] = max(
                self.acked_by_session.get(session_key, 0), top)
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
    fired. Raw data: the app's ``notify`` makes it printable."""
    sessions = list(dict.fromkeys(a.session_key for a in criticals))
    named = ", ".join(key[:80] for key in sessions[:BURST_NAMED])
    if len(sessions) > BURST_NAMED:
        named += f" and {len(sessions) - BURST_NAMED} more"
    count = len(criticals)
    lines = [f"{count} critical{'s' if count > 1 else ''}: {named}"]
    if count == 1:
        alert = criticals[0]
        lines.append(f"{alert.detector} ×{alert.count}: {alert.message[:200]}")
    else:
        detectors: dict[str, int] = {}
        for alert in criticals:
            detectors[alert.detector] = detectors.get(alert.detector, 0) + 1
        lines.append(", ".join(f"{name} ({n})" for name, n in detectors.items()))
    return f"{count} critical finding{'s' if count > 1 else ''}", "\n".join(lines)

"""Values read from OpenClaw's records, checked before they count as evidence of whose an
exec shell is.

Its tables are not STRICT and its transcripts are any JSON, so a column or a field may hold
a value of any type or size: a pid that is not a plausible positive integer, or a timestamp
that is not a number, is skipped (None), never trusted.
"""

from __future__ import annotations

PID_MAX = 1 << 22      # Linux's highest possible pid_max


def valid_pid(value) -> int | None:
    """``value`` when it is a plausible pid of an exec shell (an int above 1, not a bool,
    at most ``PID_MAX``), else None."""
    if isinstance(value, int) and not isinstance(value, bool) and 1 < value <= PID_MAX:
        return value
    return None


def epoch_number(value) -> float | None:
    """A finite, positive number (seconds or milliseconds since the epoch), else None."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) \
            and 0 < value < 1e15:
        return float(value)
    return None

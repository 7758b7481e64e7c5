"""Memory around a first scan: fewer collections while it runs, free heap given back after.

A first scan decodes gigabytes of transcripts a line at a time; what it freed stays in the
C allocator's heap, so the resident size of a monitor that then sits for days keeps the
scan's high-water mark. glibc's ``malloc_trim`` returns those free pages (on the 10,003
session bench dir, 12 MB of the headless monitor's 88). Elsewhere this does nothing.

While it runs, the scan builds hundreds of thousands of objects that live on (sessions,
detector windows, timelines); the cyclic collector's defaults (a young collection every 700
net allocations, older ones every 10 of those) traverse them again and again, ~6 % of the
scan on the 10,003-session dir. Refcounting frees almost everything the scan drops, so a
young collection every ``CATCH_UP_GC_THRESHOLD`` allocations loses nothing that matters.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import sys
import threading

CATCH_UP_GC_THRESHOLD = 50_000

_trim = None
if sys.platform.startswith("linux"):
    try:
        _trim = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
        _trim.argtypes = [ctypes.c_size_t]
        _trim.restype = ctypes.c_int
    except (OSError, AttributeError):    # not glibc (musl has no malloc_trim)
        _trim = None


def give_back_free_memory() -> None:
    """``malloc_trim(0)`` where there is one."""
    if _trim is not None:
        _trim(0)


_relaxed_by: set[object] = set()
_thresholds_before: tuple[int, ...] = gc.get_threshold()
_relaxing = threading.Lock()


def relax_collector() -> object:
    """Collect the young generation every ``CATCH_UP_GC_THRESHOLD`` allocations while a
    catch-up runs; the token to give ``restore_collector`` when it is over. Catch-ups may
    overlap (two boards in one process): the thresholds come back when the last one ends."""
    token = object()
    global _thresholds_before
    with _relaxing:
        if not _relaxed_by:
            _thresholds_before = gc.get_threshold()
            gc.set_threshold(max(_thresholds_before[0], CATCH_UP_GC_THRESHOLD),
                             *_thresholds_before[1:])
        _relaxed_by.add(token)
    return token


def restore_collector(token: object) -> None:
    """The catch-up ``token`` names is over (once; again does nothing)."""
    with _relaxing:
        if token not in _relaxed_by:
            return
        _relaxed_by.discard(token)
        if not _relaxed_by:
            gc.set_threshold(*_thresholds_before)

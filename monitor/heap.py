"""Give the C heap's free memory back to the system.

A first scan decodes gigabytes of transcripts a line at a time; what it freed stays in the
C allocator's heap, so the resident size of a monitor that then sits for days keeps the
scan's high-water mark. glibc's ``malloc_trim`` returns those free pages (on the 10,003
session bench dir, 12 MB of the headless monitor's 88). Elsewhere this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

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

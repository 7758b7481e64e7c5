"""Helper processes that end with the process that started them."""

from __future__ import annotations

import ctypes
import os
import signal

#: ``prctl`` option (linux/prctl.h): the signal a process gets when its parent ends.
PR_SET_PDEATHSIG = 1


def end_with_parent(parent: int, signum: int = signal.SIGTERM) -> None:
    """Called first in a helper process (a replay worker, a history reader; in a child that
    runs another program, such as ``journalctl``, before it does): it gets ``signum`` when its
    parent ends (Linux's ``PR_SET_PDEATHSIG``, tied to the thread that started it), so a
    monitor or replay stopped mid-way leaves no helper reading on; it exits at once if the
    parent ``parent`` ended before that was in place."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signum)
    except (OSError, AttributeError):       # not Linux
        return
    if os.getppid() != parent:
        os._exit(0)

"""Values read back from a checkpoint, checked before a source uses them.

A checkpoint is a file on disk: truncated by a crash, edited by hand, written by another
version or by someone else. A source given a position from it must get a value of the type
and range it would have saved, or nothing: a string where a dict was saved, ``Infinity``
where an offset was, or an integer too large for SQLite would otherwise end ``watch`` with a
traceback at every start.
"""

from __future__ import annotations

from typing import Any

#: The largest position, inode or row number saved: what a signed 64-bit integer holds
#: (file offsets, ``st_ino``, SQLite rowids and seqs all fit).
MAX_SAVED_INT = 2 ** 63 - 1


def saved_dict(value: Any) -> dict:
    """``value`` when it is a dict, else an empty one."""
    return value if type(value) is dict else {}


def saved_int(value: Any, default: int, *, minimum: int = 0) -> int:
    """``value`` when it is an integer (a bool is not) in [``minimum``, ``MAX_SAVED_INT``],
    else ``default``."""
    return value if is_saved_int(value, minimum=minimum) else default


def saved_seqs(value: Any) -> dict[str, int]:
    """``session_id -> highest seq read`` of an agent DB's checkpoint: the entries that are
    one; a damaged entry is left out, so that session is read as one not read before."""
    return {sid: seq for sid, seq in saved_dict(value).items() if is_saved_int(seq)}


def is_saved_int(value: Any, *, minimum: int = 0) -> bool:
    """Whether ``saved_int`` would keep ``value``."""
    return type(value) is int and minimum <= value <= MAX_SAVED_INT

"""Which lines of a Codex rollout are another thread's history copied into it.

A thread that starts from another's history (``codex fork``, a backtrack in the interactive
UI, a ``thread_spawn`` sub-agent) gets a new rollout. When the parent rollout is in codex-rs's
legacy layout (``history_mode`` ``legacy`` or absent), the new rollout's own ``session_meta``
(``forked_from_id`` names the parent) is followed by the parent's items copied as they were,
starting with the parent's ``session_meta`` (and its ancestors' metas, for a fork of a fork),
every line stamped with the instant the copy was written. The copy includes the parent's
cumulative ``token_count`` lines. codex-rs then seeds the new thread's token usage from the
last of them (``last_token_info_from_rollout``), so the new thread's own totals continue from
the parent's: a copied total was spent once, by the parent, and is only the starting total
of the thread that copied it.

Nothing in the file marks where the copy ends, so the end is found from the turns: each turn
of a thread begins with a ``task_started`` / ``turn_context`` line naming its ``turn_id``.
Thread and turn ids are UUIDv7, whose first 48 bits are the creation time in milliseconds,
and the copied turns all began before the thread that copies them was created: a turn newer
than the rollout's own thread id is the thread's own, and ends the copy. Where the ids carry
no such time (versions whose turns have no id), the copy is what shares the second of the
copied ``session_meta``, as written in one burst.

ccusage finds the copy by matching the rollout's first usage lines against its parent's (read
from the parent's file when it is among those it reads) and, failing that, skips a first burst
of usage lines less than a second apart, the thread's own first replies too when they are
that quick (as a scripted model's are; a fork that copies nothing never matches its parent).
Ids need neither the parent's file nor a pause before the thread's first reply.

A rollout in the paginated layout (``history_base``) copies nothing: only its totals
continue from the parent's, which ``codex_usage.share`` accounts for.
"""

from __future__ import annotations

import re

_UUID7 = re.compile(r"([0-9a-f]{8})-([0-9a-f]{4})-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\Z")


def uuid7_millis(value: str | None) -> int | None:
    """The creation time (ms since the epoch) of a UUIDv7, None for anything else."""
    match = _UUID7.match(value or "")
    return int(match.group(1) + match.group(2), 16) if match else None


def turn_id_of(line_type: str, payload: dict) -> str | None:
    """The ``turn_id`` a line starting a turn names (None for every other line)."""
    if line_type == "turn_context" or (line_type == "event_msg"
                                       and payload.get("type") == "task_started"):
        turn = payload.get("turn_id")
        return turn if isinstance(turn, str) else None
    return None


def copied_turn(own_thread: str, turn: str | None) -> bool | None:
    """Whether a turn began before the thread ``own_thread`` was created (a copied turn);
    None when either id carries no creation time."""
    own, began = uuid7_millis(own_thread), uuid7_millis(turn)
    if own is None or began is None:
        return None
    return began < own


def still_copied(own_thread: str, line_type: str, payload: dict, in_copy_second: bool,
                 in_copied_turn: bool) -> tuple[bool, bool]:
    """Whether a line after a copied ``session_meta`` is still a copy, and whether a copied
    turn is then under way: a turn older than the thread ``own_thread`` is copied, and so is
    what follows it; a newer turn is the thread's own. Where the ids tell nothing, what
    shares the second of the copied meta (``in_copy_second``) is a copy."""
    turn = turn_id_of(line_type, payload)
    older = copied_turn(own_thread, turn) if turn is not None else None
    if older is not None:
        return older, older
    return in_copied_turn or in_copy_second, in_copied_turn

"""Reading a transcript across a restart from a source's checkpoint, as ``watch`` does."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from monitor.sources.tail_state import complete_files


def read_across_a_restart(make_source: Callable[[dict | None], object], target: Path,
                          rest: bytes) -> tuple[list, list]:
    """What a source (``make_source(None)``) reads of ``target`` as it is now, and what a new
    one resumed from its checkpoint (``make_source(saved)``, the checkpoint through JSON as it
    is saved) reads once ``rest`` is appended."""
    before = make_source(None)
    first = before.poll()
    saved = json.loads(json.dumps(before.checkpoint()))
    before.close()
    with open(target, "ab") as handle:
        handle.write(rest)
    after = make_source(saved)
    with complete_files():
        second = after.poll()
    return first, second

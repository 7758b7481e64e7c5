"""``give_back_free_memory``: what a scan freed leaves the resident size (issue 11)."""

from __future__ import annotations

import gc
import sys

import psutil
import pytest

from monitor.heap import give_back_free_memory


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_memory_freed_between_live_blocks_goes_back_to_the_system():
    process = psutil.Process()
    blocks = [bytes(1024) for _ in range(60_000)]     # ~64 MB on the C heap, not pymalloc's
    kept = blocks[::100]                               # live blocks all along the heap
    del blocks
    gc.collect()
    before = process.memory_info().rss
    give_back_free_memory()
    after = process.memory_info().rss
    assert before - after > 32 * 1024 * 1024, (before, after)
    assert len(kept) == 600

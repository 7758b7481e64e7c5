"""Memory around a first scan and a replay (``monitor.heap``, issue 11): what it freed leaves
the resident size; the collector is relaxed while any catch-up or replay shard runs and as it
was once the last one ends, whatever the order they end in."""

from __future__ import annotations

import gc
import sys

import psutil
import pytest
from test_ui_scenes import run_first_scan, write_world

from monitor import heap
from monitor.config import Config
from monitor.detect.engine import DetectionEngine
from monitor.heap import give_back_free_memory
from monitor.pipeline import Monitor
from monitor.replay import ReplayInput, replay


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


def test_overlapping_catch_ups_leave_the_collector_as_they_found_it():
    before = gc.get_threshold()
    first = heap.relax_collector()
    assert gc.get_threshold()[0] >= heap.CATCH_UP_GC_THRESHOLD
    second = heap.relax_collector()
    heap.restore_collector(first)
    assert gc.get_threshold()[0] >= heap.CATCH_UP_GC_THRESHOLD, "the second still runs"
    heap.restore_collector(first)                   # again: nothing
    assert gc.get_threshold()[0] >= heap.CATCH_UP_GC_THRESHOLD
    heap.restore_collector(second)
    assert gc.get_threshold() == before


def test_the_boards_first_scan_relaxes_the_collector_only_while_it_runs():
    before = gc.get_threshold()
    world = write_world("collector")
    seen: list[tuple[bool, int]] = []
    try:
        run_first_scan(
            world, timeout=20,
            on_publish=lambda snapshot: seen.append((snapshot.scanning, gc.get_threshold()[0])))
    finally:
        world.sim.close()
    assert {young for scanning, young in seen if scanning} == {heap.CATCH_UP_GC_THRESHOLD}
    assert {young for scanning, young in seen if not scanning} == {before[0]}
    assert gc.get_threshold() == before


def test_a_replay_shard_relaxes_the_collector_only_while_it_reads(generated_state_dirs,
                                                                   monkeypatch):
    before = gc.get_threshold()
    seen: set[int] = set()
    fold = Monitor.fold

    def fold_and_look(monitor, events):
        seen.add(gc.get_threshold()[0])
        return fold(monitor, events)

    monkeypatch.setattr(Monitor, "fold", fold_and_look)
    state_dir = generated_state_dirs / "legacy"
    document = replay(ReplayInput(state_dir=str(state_dir)), Config(), DetectionEngine, 1)
    assert document["sessions"]
    assert heap.CATCH_UP_GC_THRESHOLD in seen
    assert gc.get_threshold() == before

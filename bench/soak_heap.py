"""Run the monitor's CLI with a thread that samples where its memory is, for soaks.

    python bench/soak_heap.py OUT.jsonl [--every SECONDS] [--trim] -- watch --headless ...

Every ``--every`` seconds (60) one JSON line goes to OUT.jsonl: RSS; glibc's ``mallinfo2``
(the C heap: SQLite, large strings; ``uordblks`` in use, ``fordblks`` free); pymalloc's
arenas and the bytes in their used and free blocks (Python's small objects: what a
fragmented heap keeps resident after the live set shrinks); and the number of objects the
cyclic collector tracks. ``--trim`` calls ``malloc_trim(0)`` before each sample, to see
what giving free C-heap pages back would change (run with ``PYTHONMALLOC=malloc`` to put
Python's objects in that heap too). Linux with glibc only.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import re
import sys
import threading
import time
from pathlib import Path

import psutil

sys.path.insert(0, os.getcwd())    # bench_soak runs it in --monitor-root: that tree's monitor

from monitor.heap import give_back_free_memory

MALLINFO_FIELDS = ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
                   "uordblks", "fordblks", "keepcost")


class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in MALLINFO_FIELDS]


LIBC = ctypes.CDLL("libc.so.6")
LIBC.mallinfo2.restype = MallInfo2
PYMALLOC_LINES = {"# arenas allocated current": "arenas",
                  "bytes in allocated blocks": "used_bytes",
                  "bytes in available blocks": "free_bytes"}


def pymalloc_stats() -> dict[str, int]:
    """Arenas and block bytes from ``sys._debugmallocstats`` (it writes to fd 2)."""
    read_end, write_end = os.pipe()
    saved_stderr = os.dup(2)
    os.dup2(write_end, 2)
    try:
        sys._debugmallocstats()
    finally:
        os.dup2(saved_stderr, 2)
        os.close(saved_stderr)
        os.close(write_end)
    chunks = []
    while chunk := os.read(read_end, 65536):
        chunks.append(chunk)
    os.close(read_end)
    stats = {}
    for line in b"".join(chunks).decode(errors="replace").splitlines():
        for label, name in PYMALLOC_LINES.items():
            if label in line and "=" in line:
                stats[name] = int(re.sub(r"[^\d]", "", line.split("=")[1]) or 0)
    return stats


def sample(process: psutil.Process, trim: bool) -> dict:
    if trim:
        give_back_free_memory()
    info = LIBC.mallinfo2()
    return {"t": round(time.time(), 1), "rss": process.memory_info().rss,
            "glibc": {name: getattr(info, name) for name in MALLINFO_FIELDS},
            "pymalloc": pymalloc_stats(), "gc_objects": len(gc.get_objects())}


def start_sampler(out: Path, every: float, trim: bool) -> None:
    process = psutil.Process()

    def run() -> None:
        while True:
            time.sleep(every)
            with out.open("a") as sink:
                sink.write(json.dumps(sample(process, trim)) + "\n")

    threading.Thread(target=run, name="soak-heap", daemon=True).start()


def main() -> int:
    if "--" not in sys.argv:
        raise SystemExit(__doc__)
    split = sys.argv.index("--")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--every", type=float, default=60.0)
    parser.add_argument("--trim", action="store_true")
    args = parser.parse_args(sys.argv[1:split])
    start_sampler(args.out, args.every, args.trim)
    from monitor.cli import main as clawwatch
    return clawwatch(sys.argv[split + 1:])


if __name__ == "__main__":
    sys.exit(main())

"""The compiled build (``CLAWWATCH_COMPILE=1``, README "A compiled build") unpacked into a
dir, for the ``--monitor-root`` of ``bench_replay.py`` and ``bench_read_floor.py``: the
compiled code timed against the same peer and floor as the interpreted code.

    .venv/bin/python bench/build_compiled.py [--out /tmp/clawwatch-compiled]
    .venv/bin/python bench/bench_replay.py --monitor-root /tmp/clawwatch-compiled/root ...

pip builds the wheel (fetching Cython into its build environment) with this interpreter,
so the extension modules load in it. The compiled replay document must be ``cmp``-equal to
the interpreted code's (``tests/test_compiled_build.py`` checks it on the generated dirs).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def build(out: Path) -> Path:
    """The root of the unpacked compiled wheel (``out/root``, holding ``monitor``)."""
    dist = out / "dist"
    shutil.rmtree(dist, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", str(REPO),
                    "-w", str(dist)], check=True, env={**os.environ, "CLAWWATCH_COMPILE": "1"})
    (wheel,) = dist.glob("clawwatch-*.whl")
    root = out / "root"
    shutil.rmtree(root, ignore_errors=True)
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(root, [n for n in archive.namelist() if n.startswith("monitor/")])
    return root


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="/tmp/clawwatch-compiled")
    args = parser.parse_args(argv)
    root = build(Path(args.out))
    version = subprocess.run([sys.executable, "-m", "monitor", "--version"], cwd=root,
                             capture_output=True, text=True, check=True).stdout.strip()
    print(f"{version}: {root}; run the benches with --monitor-root {root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

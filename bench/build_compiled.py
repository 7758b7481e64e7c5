"""A copy of ``monitor`` whose hot modules Cython compiled as they are (pure-Python mode, no
type declarations), for the ``--monitor-root`` of ``bench_replay.py`` and
``bench_read_floor.py``: what compiling alone gives, timed against the same peer and floor as
the interpreted code.

    .venv/bin/python bench/build_compiled.py [--out /tmp/clawwatch-compiled]
    .venv/bin/python bench/bench_replay.py --monitor-root /tmp/clawwatch-compiled/root ...

Cython is installed from the package registry into a virtual environment under ``--out``,
made from this interpreter, so the extension modules load in it. The copy's replay document
must be ``cmp``-equal to the interpreted code's; the bench writes both into its output dir.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CYTHON = "cython>=3.1,<4"
#: What a replay spends its time in (py-spy): the detectors, the pipeline and the legacy and
#: SQLite readers. ``events`` and ``records`` are msgspec Structs, left alone.
HOT_MODULES = (
    *(f"detect/{path.name}" for path in sorted((REPO / "monitor" / "detect").glob("*.py"))
      if path.name != "__init__.py"),
    "pipeline.py", "replay_tally.py", "run_index.py", "session_state.py", "untrusted_json.py",
    "sources/base.py", "sources/legacy.py", "sources/line_split.py", "sources/tail_reading.py",
    "sources/transcript.py", "sources/sqlite_agent.py", "sources/sqlite_event_rows.py",
)

SETUP = """
from setuptools import setup
from Cython.Build import cythonize
setup(ext_modules=cythonize({modules!r}, language_level=3, nthreads=2, quiet=True,
      compiler_directives={{"binding": True, "annotation_typing": False}}),
      script_args=["build_ext", "--inplace", "-j", "2"])
"""


def build(out: Path) -> Path:
    """The root of the compiled copy (``out/root``, holding ``monitor``)."""
    builder = out / "cython-env"
    if not (builder / "bin" / "cython").exists():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(builder)], check=True)
        subprocess.run([str(builder / "bin" / "pip"), "install", "-q", CYTHON, "setuptools"],
                       check=True)
    root = out / "root"
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(REPO / "monitor", root / "monitor",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.c"))
    modules = [f"monitor/{module}" for module in HOT_MODULES]
    (root / "setup_compiled.py").write_text(SETUP.format(modules=modules))
    log = out / "build.log"
    with open(log, "wb") as written:
        done = subprocess.run([str(builder / "bin" / "python"), "setup_compiled.py"], cwd=root,
                              stdout=written, stderr=subprocess.STDOUT)
    built = sorted(root.glob("monitor/**/*.so"))
    if done.returncode != 0 or len(built) != len(modules):
        raise SystemExit(f"build_compiled: {len(built)} of {len(modules)} modules built; "
                         f"see {log}")
    return root


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="/tmp/clawwatch-compiled")
    args = parser.parse_args(argv)
    root = build(Path(args.out))
    print(f"compiled copy: {root} ({len(HOT_MODULES)} modules); run the benches with "
          f"--monitor-root {root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A copy of what a wheel is built from, so a test's build leaves this checkout untouched,
and the wheel built from it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FILES = ("pyproject.toml", "README.md", "setup.py", "MANIFEST.in")
DIRS = ("monitor", "build_backend")


def copy_source_tree(dest: Path) -> Path:
    """``dest`` holding the package, its build backend and its metadata."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        shutil.copy2(ROOT / name, dest / name)
    for name in DIRS:
        shutil.copytree(ROOT / name, dest / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.so", "*.c"))
    return dest


def build_wheel(source: Path, out: Path, compile_asked: bool = False) -> Path:
    """The wheel ``pip wheel`` builds from ``source`` into ``out``: compiled only when
    ``compile_asked``, whatever this environment's ``CLAWWATCH_COMPILE`` says."""
    env = {k: v for k, v in os.environ.items() if k != "CLAWWATCH_COMPILE"}
    if compile_asked:
        env["CLAWWATCH_COMPILE"] = "1"
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
                            str(source), "-w", str(out)], capture_output=True, text=True,
                           timeout=900, cwd=source, env=env)
    assert build.returncode == 0, build.stdout + build.stderr
    (wheel,) = out.glob("clawwatch-*.whl")
    return wheel

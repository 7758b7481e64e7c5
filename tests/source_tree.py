"""A copy of what a wheel is built from, so a test's build leaves this checkout untouched."""

from __future__ import annotations

import shutil
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

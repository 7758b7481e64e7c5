"""The hot modules an optional build compiles, and how many of them this process runs compiled.

``CLAWWATCH_COMPILE=1 pip install .`` (or ``pip wheel .``) has Cython compile these modules
as they are, with no type declarations: the detectors, the pipeline, and the legacy and
SQLite readers, where a replay spends its time. Their ``.py`` files stay in the package; an
install without the compiled modules runs them. ``clawwatch --version`` says which build
runs, so a bug report names it.

This module is also read by ``setup.py`` with ``runpy`` at build time, so it imports only
the standard library.
"""

from __future__ import annotations

from functools import cache
from importlib.machinery import EXTENSION_SUFFIXES
from importlib.util import find_spec
from pathlib import Path

#: Besides every module of ``detect/``: the pipeline and the readers of both storage eras.
#: ``events`` and ``records`` are msgspec Structs, already in C.
HOT_MODULES_OUTSIDE_DETECT = (
    "pipeline.py", "replay_tally.py", "run_index.py", "session_state.py", "untrusted_json.py",
    "sources/base.py", "sources/legacy.py", "sources/line_split.py", "sources/tail_reading.py",
    "sources/transcript.py", "sources/sqlite_agent.py", "sources/sqlite_event_rows.py",
)


def hot_modules(package_dir: Path) -> list[str]:
    """The hot modules' paths relative to ``package_dir`` (the ``monitor`` dir)."""
    detect = sorted(f"detect/{path.name}" for path in (package_dir / "detect").glob("*.py")
                    if path.name != "__init__.py")
    return [*detect, *HOT_MODULES_OUTSIDE_DETECT]


def compiled_modules() -> tuple[int, int]:
    """How many of the hot modules this process imports compiled, and how many there are."""
    package_dir = Path(__file__).resolve().parent
    names = [f"{package_dir.name}.{path.removesuffix('.py').replace('/', '.')}"
             for path in hot_modules(package_dir)]
    compiled = sum(1 for name in names if _is_extension(name))
    return compiled, len(names)


@cache
def build_label() -> str:
    """``compiled`` or ``pure``: the ``build`` label of ``clawwatch_build_info``."""
    return "compiled" if compiled_modules()[0] else "pure"


def build_description() -> str:
    """``pure Python``, or ``compiled: 38 of 38 hot modules``."""
    compiled, total = compiled_modules()
    return f"compiled: {compiled} of {total} hot modules" if compiled else "pure Python"


def _is_extension(module: str) -> bool:
    spec = find_spec(module)
    origin = spec.origin if spec is not None else None
    return bool(origin) and origin.endswith(tuple(EXTENSION_SUFFIXES))

"""``bench/build_compiled.py`` compiles modules that exist: a module renamed or split away
would otherwise leave the compiled copy running its interpreted code unnoticed."""

from __future__ import annotations

import importlib.util
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench"


def test_every_hot_module_is_a_module_of_the_package():
    spec = importlib.util.spec_from_file_location("build_compiled", BENCH / "build_compiled.py")
    build_compiled = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build_compiled)
    package = BENCH.parent / "monitor"
    assert len(build_compiled.HOT_MODULES) >= 30
    missing = [m for m in build_compiled.HOT_MODULES if not (package / m).is_file()]
    assert not missing
    assert "detect/loopcore.py" in build_compiled.HOT_MODULES
    assert not any(m.endswith("__init__.py") for m in build_compiled.HOT_MODULES)

"""The core never loads textual or rich: replay and headless watch must run without a UI."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import monitor


def core_modules() -> list[str]:
    names = []
    for info in pkgutil.walk_packages(monitor.__path__, prefix="monitor."):
        if info.name.startswith("monitor.ui") or info.name.endswith("__main__"):
            continue
        names.append(info.name)
    return names


def test_core_modules_exist():
    names = core_modules()
    for expected in ("monitor.cli", "monitor.pipeline", "monitor.sources.tail",
                     "monitor.sources.sqlite_agent", "monitor.events"):
        assert expected in names


def test_importing_any_core_module_loads_neither_textual_nor_rich():
    probe = (
        "import importlib, sys\n"
        f"for name in {core_modules()!r}:\n"
        "    importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'))\n"
        "print(','.join(bad))\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == ""

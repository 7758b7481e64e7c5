"""``bench/gen_large_state.py`` refuses sizes it cannot honour instead of filling the disk."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

GENERATOR = Path(__file__).resolve().parent.parent / "bench" / "gen_large_state.py"


@pytest.mark.parametrize("args, message", [
    (["--big-mb", "0"], "--big-mb: each size must be more than 0"),
    (["--big-mb", "20,0"], "--big-mb: each size must be more than 0"),
    (["--big-mb", "nan"], "--big-mb: each size must be more than 0"),
    (["--big-mb", "x"], "--big-mb: not a list of numbers"),
    (["--sessions", "-1"], "--sessions: must be 0 or more"),
])
def test_bad_sizes_are_refused_before_writing_anything(tmp_path, args, message):
    out = tmp_path / "out"
    result = subprocess.run([sys.executable, str(GENERATOR), "--out", str(out), *args],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and message in result.stderr
    assert not out.exists()

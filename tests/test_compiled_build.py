"""The optional compiled build (``CLAWWATCH_COMPILE=1 pip install .``).

Cython compiles the hot modules ``monitor/compiled.py`` lists, as they are. The compiled
wheel must replay every document byte for byte as the pure-Python code does, say which build
it is, and be asked for: a plain wheel (``tests/test_packaging.py``), an sdist and an editable
install stay pure Python.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from setuptools import build_meta
from source_tree import ROOT, build_wheel, copy_source_tree

from monitor import __version__, compiled

PACKAGE = ROOT / "monitor"


def _backend():
    spec = importlib.util.spec_from_file_location(
        "clawwatch_build", ROOT / "build_backend" / "clawwatch_build.py")
    backend = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(backend)
    return backend


def test_every_hot_module_is_a_module_of_the_package():
    """A hot module renamed or split away would otherwise leave its new code interpreted."""
    modules = compiled.hot_modules(PACKAGE)
    assert len(modules) >= 30 and "detect/loopcore.py" in modules
    assert not [m for m in modules if not (PACKAGE / m).is_file()]
    assert not any(m.endswith("__init__.py") for m in modules)
    detect = {f"detect/{p.name}" for p in (PACKAGE / "detect").glob("*.py")} - {
        "detect/__init__.py"}
    assert detect <= set(modules), "every detector is compiled"


@pytest.mark.filterwarnings("ignore:Support for .\\[tool.setuptools\\]")
def test_only_a_wheel_build_asked_to_compile_fetches_cython(monkeypatch, tmp_path):
    backend = _backend()
    monkeypatch.chdir(copy_source_tree(tmp_path / "src"))    # the hooks write egg-info there
    monkeypatch.delenv("CLAWWATCH_COMPILE", raising=False)
    assert backend.CYTHON not in backend.get_requires_for_build_wheel()
    for asked in ("1", "true", " YES "):
        monkeypatch.setenv("CLAWWATCH_COMPILE", asked)
        assert backend.CYTHON in backend.get_requires_for_build_wheel()
    monkeypatch.setenv("CLAWWATCH_COMPILE", "0")
    assert backend.CYTHON not in backend.get_requires_for_build_wheel()
    monkeypatch.setenv("CLAWWATCH_COMPILE", "1")
    assert backend.CYTHON not in backend.get_requires_for_build_editable()
    assert backend.build_editable is build_meta.build_editable
    assert backend.build_sdist is build_meta.build_sdist


def test_this_checkout_says_which_build_runs():
    done, total = compiled.compiled_modules()
    assert total == len(compiled.hot_modules(PACKAGE))
    run = subprocess.run([sys.executable, "-m", "monitor", "--version"], capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 0 and run.stderr == ""
    expected = f"compiled: {done} of {total} hot modules" if done else "pure Python"
    assert run.stdout == f"clawwatch {__version__} ({expected})\n"


@pytest.fixture(scope="module")
def compiled_site(tmp_path_factory):
    """The compiled wheel, built from a copy of this checkout and unpacked: a dir to put
    first on ``PYTHONPATH``."""
    base = tmp_path_factory.mktemp("compiled")
    source = copy_source_tree(base / "src")
    # What an earlier build of a module since taken off the hot list leaves behind.
    built_package = source / "build" / (
        f"lib.{sysconfig.get_platform()}-{sys.implementation.cache_tag}") / "monitor"
    built_package.mkdir(parents=True)
    (built_package / f"no_longer_hot{sysconfig.get_config_var('EXT_SUFFIX')}").write_bytes(
        b"stale")
    wheel = build_wheel(source, base / "dist", compile_asked=True)
    site = base / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    return {"wheel": wheel, "site": site}


def _run(site: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(site), "PYTHONSAFEPATH": "1", "TZ": "UTC"}
    return subprocess.run([sys.executable, "-m", "monitor", *args], capture_output=True,
                          timeout=300, env=env, cwd=site)


@pytest.mark.timeout(900)
def test_the_compiled_wheel_holds_every_hot_module_compiled(compiled_site):
    wheel = compiled_site["wheel"]
    assert not wheel.name.endswith("-none-any.whl"), wheel.name
    names = zipfile.ZipFile(wheel).namelist()
    hot = compiled.hot_modules(PACKAGE)
    built = {name.split(".")[0] for name in names if name.endswith(".so")}
    assert built == {f"monitor/{m.removesuffix('.py')}" for m in hot}
    assert all(f"monitor/{m}" in names for m in hot), "the .py stays beside its module"
    assert not [name for name in names if name.endswith(".c")]
    version = _run(compiled_site["site"], "--version")
    assert version.stdout.decode() == (
        f"clawwatch {__version__} (compiled: {len(hot)} of {len(hot)} hot modules)\n")


@pytest.fixture(scope="module")
def pure_site(tmp_path_factory):
    """This checkout's package without any compiled module: the reference."""
    site = tmp_path_factory.mktemp("pure")
    shutil.copytree(PACKAGE, site / "monitor",
                    ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    assert _run(site, "--version").stdout.endswith(b"(pure Python)\n")
    return site


@pytest.mark.timeout(900)
@pytest.mark.parametrize("era", ["legacy", "sqlite"])
def test_the_compiled_wheel_replays_the_pure_document(compiled_site, pure_site,
                                                      generated_state_dirs, era):
    """Every detector's findings, counts and errors, byte for byte, across both eras."""
    state_dir = generated_state_dirs / era
    args = ("replay", "--state-dir", str(state_dir), "--log",
            str(state_dir / "logs" / "openclaw.log"), "--json", "--no-cache")
    pure = _run(pure_site, *args)
    built = _run(compiled_site["site"], *args)
    assert pure.returncode == built.returncode == 0, built.stderr[-2000:]
    assert b'"findings": [{' in pure.stdout and len(pure.stdout) > 10_000
    assert built.stdout == pure.stdout

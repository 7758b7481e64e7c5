"""A package that installs whole (issue 12, item 10).

The built-in themes ship inside the package (``monitor/themes/``) with the other package
data (``ui/app.tcss``, ``demo/sim/*.sql``), so a wheel installed into a fresh venv — what
``pip install .`` and ``pipx install`` do — starts the dashboard with all three themes and
no theme error. The user's own themes live in ``$XDG_CONFIG_HOME/clawwatch/themes``
(``~/.config/clawwatch/themes``): each file adds a theme or replaces the built-in one of the
same name.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from pathlib import Path

import pytest
import yaml
from source_tree import build_wheel, copy_source_tree

import monitor
from monitor.ui import themes as theme_module
from monitor.ui.themes import load_themes

ROOT = Path(__file__).resolve().parents[1]
BUILTIN = ("dark", "light", "night")
SOLAR = "name: solar\ndark: true\nprimary: '#B58900'\nbackground: '#002B36'\n"


# ------------------------------------------------------------------ themes, in-process

@pytest.fixture
def user_env(tmp_path, monkeypatch):
    """An isolated home and config dir; returns the user themes dir (not yet created)."""
    monkeypatch.delenv("CLAWWATCH_THEMES", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "clawwatch" / "themes"


def test_the_built_in_themes_are_package_data():
    package = Path(monitor.__file__).resolve().parent
    for name in BUILTIN:
        path = package / "themes" / f"{name}.yaml"
        assert yaml.safe_load(path.read_text())["name"] == name
    themes, errors = load_themes()
    assert errors == [] and [t.name for t in themes][:3] == list(BUILTIN)


def test_the_repository_themes_dir_is_the_packaged_one():
    """The documented top-level ``themes/`` still holds the three themes: the same files."""
    package = Path(monitor.__file__).resolve().parent / "themes"
    assert (ROOT / "themes").resolve() == package.resolve()


def test_user_themes_add_to_and_override_the_built_in_ones(user_env):
    user_env.mkdir(parents=True)
    (user_env / "solar.yaml").write_text(SOLAR)
    (user_env / "my-night.yaml").write_text("name: night\ndark: true\nprimary: '#FF00FF'\n")
    themes, errors = load_themes()
    assert errors == []
    assert [t.name for t in themes] == ["dark", "light", "night", "solar"]
    night = next(t for t in themes if t.name == "night")
    assert night.primary == "#FF00FF", "the user's night replaces the built-in one"


def test_a_broken_user_theme_is_reported_and_the_built_in_one_kept(user_env):
    user_env.mkdir(parents=True)
    (user_env / "dark.yaml").write_text("name: dark\nprimary: not-a-colour\n")
    themes, errors = load_themes()
    assert [t.name for t in themes] == list(BUILTIN)
    assert next(t for t in themes if t.name == "dark").primary == "#3B82C4"
    (error,) = errors
    assert str(user_env / "dark.yaml") in error and "not a colour" in error


def test_no_user_themes_dir_is_no_error(user_env):
    assert not user_env.exists()
    themes, errors = load_themes()
    assert errors == [] and [t.name for t in themes] == list(BUILTIN)


def test_the_user_themes_dir_follows_xdg_and_home(tmp_path):
    env = {"HOME": str(tmp_path)}
    assert theme_module.user_themes_dir(env) == Path.home() / ".config/clawwatch/themes"
    env["XDG_CONFIG_HOME"] = str(tmp_path / "cfg")
    assert theme_module.user_themes_dir(env) == tmp_path / "cfg/clawwatch/themes"
    env["XDG_CONFIG_HOME"] = "relative/is/ignored"   # the XDG spec: only absolute paths count
    assert theme_module.user_themes_dir(env) == Path.home() / ".config/clawwatch/themes"
    env["CLAWWATCH_THEMES"] = str(tmp_path / "mine")
    assert theme_module.user_themes_dir(env) == tmp_path / "mine"


# ------------------------------------------------------------------ a wheel in a fresh venv

DASHBOARD_PROBE = textwrap.dedent('''
    import asyncio, json, os, sys, time
    from pathlib import Path

    import monitor
    from monitor.demo.sim.scenarios import make_scenario
    from monitor.demo.sim.session import FakeClock
    from monitor.demo.sim.simulator import Simulator
    from monitor.ui.factory import DashboardOptions, build_app
    from monitor.ui.panes.status import StatusLine

    base = Path(sys.argv[1])
    # the simulator's SQLite era uses the packaged schema (demo/sim/*.sql)
    with Simulator(base / "state", log_path=base / "openclaw.log", clock=FakeClock(),
                   seed=3) as sim:
        session = sim.add_session(make_scenario("hammer", limit=12))
        while sim.step(session):
            pass

    async def show(theme):
        app = build_app(DashboardOptions(state_dir=str(base / "state"),
                                         log=str(base / "openclaw.log"), theme=theme),
                        poll_seconds=0.1)
        async with app.run_test(size=(140, 44)) as pilot:
            deadline = time.monotonic() + 30
            while not (app.settled and app.latest.rows) and time.monotonic() < deadline:
                await pilot.pause(0.05)
            await pilot.pause()
            notes = [str(n) for n in app.query_one(StatusLine).notes]
            return {"theme": app.theme, "errors": list(app.theme_errors), "notes": notes,
                    "names": list(app.theme_names), "rows": len(app.latest.rows),
                    "primary": str(app.current_theme.primary),
                    "background": str(app.current_theme.background)}

    out = {"monitor": monitor.__file__, "shown": {}}
    for theme in sys.argv[2:]:
        out["shown"][theme] = asyncio.run(show(theme))
    print(json.dumps(out))
''')


def _site_packages(python: Path) -> Path:
    result = subprocess.run([str(python), "-c", "import sysconfig; "
                             "print(sysconfig.get_paths()['purelib'])"],
                            capture_output=True, text=True, check=True)
    return Path(result.stdout.strip())


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """clawwatch built as a wheel from a copy of the source tree and installed (no deps)
    into a fresh venv; the dependencies come from this venv through a ``.pth`` path line
    (whose own ``.pth`` files, among them this checkout's editable install, are not run)."""
    base = tmp_path_factory.mktemp("wheel")
    wheel = build_wheel(copy_source_tree(base / "src"), base / "dist")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    python = venv / "bin" / "python"
    install = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install",
                              "--no-deps", "--no-index", "-q", str(wheel)],
                             capture_output=True, text=True, timeout=300, env=_env(base))
    assert install.returncode == 0, install.stdout + install.stderr
    assert (_site_packages(python) / "monitor" / "__init__.py").is_file(), install.stdout
    deps = Path(sysconfig.get_paths()["purelib"])
    (_site_packages(python) / "zz_clawwatch_test_deps.pth").write_text(f"{deps}\n")
    return {"base": base, "wheel": wheel, "venv": venv, "python": python}


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENCLAW_", "CLAWWATCH_", "PYTHON", "VIRTUAL_ENV"))
           or k == "CLAWWATCH_LOG_DIRS"}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"),
               XDG_STATE_HOME=str(home / ".state"), TZ="UTC")
    return env


def test_the_wheel_holds_the_package_data(installed):
    names = set(zipfile.ZipFile(installed["wheel"]).namelist())
    assert installed["wheel"].name.endswith("-py3-none-any.whl"), "a plain wheel is pure Python"
    assert not [n for n in names if n.endswith((".so", ".c"))]
    for name in (*(f"monitor/themes/{t}.yaml" for t in BUILTIN), "monitor/ui/app.tcss",
                 "monitor/demo/sim/agent_schema_v23.sql"):
        assert name in names, f"{name} is not in the wheel"


@pytest.mark.timeout(300)
def test_a_wheel_in_a_fresh_venv_starts_the_dashboard_with_each_theme(installed, tmp_path):
    home = tmp_path / "home"
    (home / ".config" / "clawwatch" / "themes").mkdir(parents=True)
    (home / ".config" / "clawwatch" / "themes" / "solar.yaml").write_text(SOLAR)
    probe = tmp_path / "probe.py"
    probe.write_text(DASHBOARD_PROBE)
    run = subprocess.run([str(installed["python"]), str(probe), str(tmp_path), *BUILTIN,
                          "solar"], cwd=tmp_path, env=_env(home), capture_output=True,
                         text=True, timeout=240)
    assert run.returncode == 0, run.stderr[-4000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    site = _site_packages(installed["python"])
    assert Path(out["monitor"]).resolve().is_relative_to(site.resolve()), out["monitor"]
    packaged = Path(monitor.__file__).resolve().parent / "themes"
    for theme in BUILTIN:
        shown = out["shown"][theme]
        assert shown["errors"] == [] and not [n for n in shown["notes"] if "theme" in n], shown
        assert shown["theme"] == theme and shown["rows"] >= 1, shown
        assert set(BUILTIN) | {"solar"} <= set(shown["names"]), shown
        data = yaml.safe_load((packaged / f"{theme}.yaml").read_text())
        assert shown["primary"].upper() == data["primary"].upper(), shown
        assert shown["background"].upper() == data["background"].upper(), shown
    solar = out["shown"]["solar"]
    assert solar["errors"] == [] and solar["theme"] == "solar", solar


def test_the_installed_command_runs(installed, tmp_path):
    run = subprocess.run([str(installed["venv"] / "bin" / "clawwatch"), "--version"],
                         cwd=tmp_path, env=_env(tmp_path), capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 0 and run.stdout.startswith("clawwatch "), run.stdout + run.stderr

"""setuptools' entry for the optional compiled build: the metadata is in pyproject.toml.

The wheel build of ``build_backend/clawwatch_build.py`` sets ``CLAWWATCH_COMPILING_WHEEL``
when ``CLAWWATCH_COMPILE`` asks for the compiled modules; every other build (an sdist, an
editable install, a plain wheel) has no extension modules and stays pure Python.
"""

import os
import runpy
from pathlib import Path

from setuptools import setup


def drop_stale_extensions(package_dir: Path, hot: list[str]) -> None:
    """Delete the extension modules an earlier build left in setuptools' ``build/lib.*``
    for modules no longer hot: setuptools packs all that dir holds into the wheel, where
    such a module would shadow its ``.py``."""
    wanted = {str(Path(module).with_suffix("")) for module in hot}
    for built_package in Path("build").glob(f"lib.*/{package_dir}"):
        for extension in built_package.rglob("*.so"):
            relative = extension.relative_to(built_package)
            if str(relative.with_name(relative.name.split(".")[0])) not in wanted:
                extension.unlink()


ext_modules = []
workers = os.cpu_count() or 1
if os.environ.get("CLAWWATCH_COMPILING_WHEEL") == "1":
    from Cython.Build import cythonize

    package_dir = Path("monitor")
    hot = runpy.run_path(str(package_dir / "compiled.py"))["hot_modules"](package_dir)
    drop_stale_extensions(package_dir, hot)
    ext_modules = cythonize(
        [str(package_dir / module) for module in hot],
        build_dir="build/cython", language_level=3, nthreads=workers, quiet=True,
        compiler_directives={"binding": True, "annotation_typing": False})

setup(ext_modules=ext_modules,
      options={"build_ext": {"parallel": workers}} if ext_modules else {})

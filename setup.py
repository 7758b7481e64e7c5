"""setuptools' entry for the optional compiled build: the metadata is in pyproject.toml.

The wheel build of ``build_backend/clawwatch_build.py`` sets ``CLAWWATCH_COMPILING_WHEEL``
when ``CLAWWATCH_COMPILE`` asks for the compiled modules; every other build (an sdist, an
editable install, a plain wheel) has no extension modules and stays pure Python.
"""

import os
import runpy
from pathlib import Path

from setuptools import setup

ext_modules = []
workers = os.cpu_count() or 1
if os.environ.get("CLAWWATCH_COMPILING_WHEEL") == "1":
    from Cython.Build import cythonize

    package_dir = Path("monitor")
    hot_modules = runpy.run_path(str(package_dir / "compiled.py"))["hot_modules"]
    ext_modules = cythonize(
        [str(package_dir / module) for module in hot_modules(package_dir)],
        build_dir="build/cython", language_level=3, nthreads=workers, quiet=True,
        compiler_directives={"binding": True, "annotation_typing": False})

setup(ext_modules=ext_modules,
      options={"build_ext": {"parallel": workers}} if ext_modules else {})

"""setuptools' build backend, with the optional compiled wheel.

``CLAWWATCH_COMPILE=1`` makes a wheel build (``pip install .``, ``pip wheel .``) fetch
Cython and compile the hot modules ``monitor/compiled.py`` lists, into a wheel for this
platform and interpreter. Without it, and for every sdist and editable install, the build
is pure Python. An editable install is never compiled: it would go on running a compiled
module after its ``.py`` was edited.
"""

from __future__ import annotations

import os

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403  (every hook this module does not change)

CYTHON = "cython>=3.1,<4"
ASKED = "CLAWWATCH_COMPILE"
COMPILING = "CLAWWATCH_COMPILING_WHEEL"


def compile_asked() -> bool:
    """Whether ``CLAWWATCH_COMPILE`` asks for the compiled modules (1, true, yes, on)."""
    return os.environ.get(ASKED, "").strip().lower() in {"1", "true", "yes", "on"}


def get_requires_for_build_wheel(config_settings=None):
    requires = _setuptools.get_requires_for_build_wheel(config_settings)
    return [*requires, CYTHON] if compile_asked() else requires


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    if not compile_asked():
        return _setuptools.build_wheel(wheel_directory, config_settings, metadata_directory)
    os.environ[COMPILING] = "1"
    try:
        return _setuptools.build_wheel(wheel_directory, config_settings, metadata_directory)
    finally:
        del os.environ[COMPILING]

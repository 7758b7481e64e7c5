"""Finding the Prometheus and Alertmanager binaries (Debian's ``prometheus`` and
``prometheus-alertmanager`` packages; tests/e2e/install_prometheus.sh installs them)."""

from __future__ import annotations

import shutil
import socket

import pytest

NAMES = {
    "prometheus": ("prometheus",),
    "promtool": ("promtool",),
    "alertmanager": ("prometheus-alertmanager", "alertmanager"),
    "amtool": ("amtool",),
}
HOW = ("run tests/e2e/install_prometheus.sh (as root: apt-get install prometheus "
       "prometheus-alertmanager); scripts/test does it when it can")


def tool(name: str) -> str:
    """The path of ``name`` (one of ``NAMES``), or skip the test saying how to install it."""
    for candidate in NAMES[name]:
        path = shutil.which(candidate)
        if path:
            return path
    pytest.skip(f"{name} is not installed: {HOW}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]

"""Fixtures for the e2e tests: a real OpenClaw gateway (see gateway.py), started once per session.

The tests need the private OpenClaw install made by ``tests/e2e/install_openclaw.sh``. Without
it they are skipped, except under CI (env ``CI`` set), where a missing install is a failure.
Select or deselect them with ``-m e2e`` / ``-m "not e2e"``.
"""

from __future__ import annotations

import os

import pytest

from .gateway import INSTALL_COMMAND, OPENCLAW_VERSION, RealGateway, find_openclaw, openclaw_prefix


def pytest_configure(config: pytest.Config) -> None:
    if any(line.startswith("e2e:") for line in config.getini("markers")):
        return
    config.addinivalue_line(
        "markers", "e2e: end-to-end test against a real OpenClaw gateway (slow, needs the "
                   "install from tests/e2e/install_openclaw.sh)")


@pytest.fixture(scope="session")
def openclaw_install() -> tuple:
    """``(node binary, openclaw entry)``; skips (or, under CI, fails) when not installed."""
    install = find_openclaw()
    if install is None:
        command = INSTALL_COMMAND
        if os.environ.get("CLAWWATCH_OPENCLAW_PREFIX"):
            command = f"CLAWWATCH_OPENCLAW_PREFIX={openclaw_prefix()} {command}"
        reason = (f"OpenClaw {OPENCLAW_VERSION} is not installed under {openclaw_prefix()}; "
                  f"install it with: {command}")
        if os.environ.get("CI"):
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    return install


@pytest.fixture(scope="session")
def real_gateway(openclaw_install) -> RealGateway:
    """A started gateway with OpenClaw's loop detection ON, shared by the whole session."""
    gateway = RealGateway(loop_detection=True)
    with gateway:
        yield gateway
    leftovers = gateway.leftover_processes()
    assert not leftovers, f"processes outlived the gateway: {leftovers}"

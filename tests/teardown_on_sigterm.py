"""A pytest plugin: SIGTERM ends a test run as Ctrl-C does, so every fixture tears down what
it started. Without it the run dies at once and a real OpenClaw gateway the e2e harness
started gets only its own SIGTERM, after which it drains exec sessions for minutes."""

from __future__ import annotations

import signal
import threading


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_configure(config) -> None:
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _interrupt)

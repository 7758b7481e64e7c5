"""A pytest plugin: SIGTERM and SIGHUP (the run's terminal closed) end a test run as Ctrl-C
does, so every fixture tears down what it started. Without it the run dies at once and a real
OpenClaw gateway the e2e harness started gets only its own SIGTERM, after which it drains exec
sessions for minutes. A second signal does not interrupt that teardown."""

from __future__ import annotations

import signal
import threading

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


def _interrupt(signum, frame) -> None:
    """The first signal interrupts the run; later ones are let pass, so they cannot cut short
    the teardown it started (a gateway draining its exec sessions takes a while)."""
    for number in STOP_SIGNALS:
        signal.signal(number, _let_pass)
    raise KeyboardInterrupt(f"signal {signum}")


def _let_pass(signum, frame) -> None:
    """A handler that does nothing: unlike ``SIG_IGN``, a process the teardown starts does
    not inherit it, and still ends on SIGTERM."""


def pytest_configure(config) -> None:
    if threading.current_thread() is threading.main_thread():
        for number in STOP_SIGNALS:
            signal.signal(number, _interrupt)

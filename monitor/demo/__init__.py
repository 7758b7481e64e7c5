"""``clawwatch demo`` and the simulator behind it.

* :mod:`monitor.demo.run`: ``DemoWorld``, the demo's temp state dir, simulator thread,
  gateway endpoint and exec children (``clawwatch demo``);
* :mod:`monitor.demo.gateway`: the demo's stand-in for the OpenClaw gateway;
* :mod:`monitor.demo.sim`: the simulator that writes realistic OpenClaw data live
  (``python -m monitor.demo.sim``), also used by the tests and benchmarks.

The names of ``run`` are loaded on first use, so ``import monitor.demo.sim`` stays as light
as the simulator (no WebSocket server, no process library).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from monitor.demo.run import DEFAULT_RATE, DEMO_SCENARIOS, LOOPING, TOKEN_ENV, DemoWorld

__all__ = ["DEFAULT_RATE", "DEMO_SCENARIOS", "LOOPING", "TOKEN_ENV", "DemoWorld"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module("monitor.demo.run"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

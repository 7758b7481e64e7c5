"""A simulator that writes realistic OpenClaw 2026.9.6 data live into a state dir.

Used by the ingest tests and by ``clawwatch demo``. It writes the raw formats only
(SQLite agent DB or legacy JSONL + ``sessions.json``, and the gateway file log) and
never imports the readers in ``monitor.sources``.
"""

from monitor.demo.sim.legacy_writer import LegacyWriter
from monitor.demo.sim.log_writer import GatewayLogWriter, Trace
from monitor.demo.sim.scenarios import SCENARIOS, EndStep, Scenario, ToolStep, make_scenario
from monitor.demo.sim.simulator import FakeClock, SimSession, Simulator
from monitor.demo.sim.sqlite_writer import SqliteAgentWriter

__all__ = [
    "SCENARIOS",
    "EndStep",
    "FakeClock",
    "GatewayLogWriter",
    "LegacyWriter",
    "Scenario",
    "SimSession",
    "Simulator",
    "SqliteAgentWriter",
    "ToolStep",
    "Trace",
    "make_scenario",
]

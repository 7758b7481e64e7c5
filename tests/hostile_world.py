"""OpenClaw state dirs (both storage eras) and a gateway log with the hostile corpus in every
field the monitor reads: session keys, labels, model, agent id, tool names, arguments, exec
commands, tool results and gateway-log lines (subsystem, level, message, a loop line).

Written by the real simulator (``monitor.demo.sim``); labels are set afterwards the way the
gateway stores them (``session_nodes.label`` / ``sessions.json`` ``label``). Used by
tests/test_hostile_display.py.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from hostile import HOSTILE_STRINGS, PAYLOAD

from monitor.demo.sim.log_writer import LEVEL_IDS, _times
from monitor.demo.sim.scenarios import Scenario, ScenarioEnv, ToolStep
from monitor.demo.sim.session import FakeClock
from monitor.demo.sim.simulator import Simulator

START = 1_795_960_000.0
# A directory name can hold any of these but ``/`` and NUL: an agent id from the state dir.
AGENT = "main" + HOSTILE_STRINGS["osc0_title"]
MODEL = HOSTILE_STRINGS["markup_close"] + HOSTILE_STRINGS["osc52_clipboard"]
CALLS = 12              # identical calls per session: past the generic_repeat warning (10)
CRITICAL_CALLS = 22     # … and past its critical (20) for CRITICAL_NAME
CRITICAL_NAME = "markup_close"
SHORT_CALLS = 3         # the 100 kB session stays small on disk


def storable(text: str) -> str:
    """``text`` without lone surrogates: SQLite and the simulator's UTF-8 writers cannot
    store them (a transcript gets them only as JSON ``\\ud800`` escapes, which the gateway
    log lines below carry)."""
    return "".join(char for char in text if not 0xD800 <= ord(char) < 0xE000)


def hostile_key(name: str, text: str) -> str:
    return f"agent:{AGENT}:{name}:{storable(text)}"


def log_line(ts: float, level: str, subsystem: str, message: str) -> str:
    """One tslog line as the gateway writes it, JSON-escaped (lone surrogates included)."""
    bindings = json.dumps({"subsystem": subsystem})
    date, time_text = _times(ts)
    return json.dumps({"0": bindings, "1": message, "_meta": {
        "runtime": "node", "hostname": "vm", "date": date,
        "logLevelId": LEVEL_IDS.get(level, 3), "logLevelName": level, "name": bindings,
        "parentNames": ["openclaw"]}, "time": time_text, "hostname": "vm",
        "message": message}) + "\n"


def hostile_scenario(name: str, text: str) -> Scenario:
    """The same call over and over: tool name, arguments, exec command and result all
    hostile."""

    text = storable(text)

    def steps(env: ScenarioEnv):
        while True:
            yield ToolStep(text, {"command": f"echo {text}", "path": text, text[:40]: text},
                           text, details={"status": "completed", "exitCode": 1,
                                          "aggregated": text}, is_error=False)

    return Scenario(name, text, 13050, steps, "a hostile session")


@dataclass
class HostileWorld:
    root: Path
    era: str
    state_dir: Path
    log_path: Path
    sim: Simulator
    keys: dict[str, str] = field(default_factory=dict)     # corpus name -> session key
    _ts: float = START
    _blocks: int = 0

    def close(self) -> None:
        self.sim.close()

    def session_id(self, name: str) -> str:
        return self.sim.session(self.keys[name]).session_id

    def append_log_lines(self, *, critical: bool = True) -> None:
        """Hostile gateway-log lines: subsystem, level and message, and (``critical``) an
        OpenClaw critical loop line whose session key, tool and detector are hostile."""
        self._ts += 1.0
        lines = [log_line(self._ts, "INFO", f"{name}/{text}", f"{name}: {text}")
                 for name, text in HOSTILE_STRINGS.items()]
        lines.append(log_line(self._ts, HOSTILE_STRINGS["osc0_title"], "gateway",
                              "a hostile level"))
        if critical:       # each a new block (a higher count), so each is a new finding
            self._blocks += 1
            text = HOSTILE_STRINGS[CRITICAL_NAME]
            lines.append(log_line(
                self._ts, "ERROR", "diagnostic",
                f"tool loop: sessionId={self.session_id(CRITICAL_NAME)} "
                f"sessionKey={self.keys[CRITICAL_NAME]} tool={text} level=critical "
                f"action=block detector=generic_repeat count={19 + self._blocks} message=\"{text} "
                f"{HOSTILE_STRINGS['osc0_title']} {HOSTILE_STRINGS['bidi_override']} "
                f"{HOSTILE_STRINGS['markup_click']} {HOSTILE_STRINGS['lone_surrogate']}\""))
        with open(self.log_path, "a", encoding="utf-8") as handle:
            handle.write("".join(lines))


def write_hostile_world(root: Path, era: str = "sqlite") -> HostileWorld:
    """A state dir (``era``: sqlite or legacy) and gateway log under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    clock = FakeClock(START, tick=0.25)
    log_path = root / "openclaw.log"
    sim = Simulator(root / "state", era=era, log_path=log_path, agent_id=AGENT, clock=clock,
                    seed=7, model=MODEL, provider="fake" + HOSTILE_STRINGS["bidi_override"],
                    hostname="vm")
    world = HostileWorld(root, era, root / "state", log_path, sim)
    for name, text in HOSTILE_STRINGS.items():
        key = hostile_key(name, text)
        world.keys[name] = key
        sim.add_session(hostile_scenario(name, text), key=key)
        calls = CRITICAL_CALLS if name == CRITICAL_NAME else \
            SHORT_CALLS if len(text) > 1000 else CALLS
        session = sim.session(key)
        for _ in range(calls):
            sim.step(session)
    world._ts = clock.now
    set_labels(world)
    world.append_log_lines(critical=True)
    return world


def set_labels(world: HostileWorld) -> None:
    """Each session's label is its corpus string (as the gateway stores a label)."""
    labels = {world.keys[name]: f"{name} {storable(text)}"
              for name, text in HOSTILE_STRINGS.items()}
    if world.era == "sqlite":
        db = sqlite3.connect(world.sim.path)
        try:
            for key, label in labels.items():
                db.execute("UPDATE session_nodes SET label = ? WHERE session_key = ?",
                           (label, key))
            db.commit()
        finally:
            db.close()
    else:
        index = world.sim.path / "sessions.json"
        entries = json.loads(index.read_text(encoding="utf-8", errors="surrogatepass"))
        for key, label in labels.items():
            entries[key]["label"] = label
        index.write_text(json.dumps(entries), encoding="utf-8")


def visible(text: str) -> str:
    """What the display boundary shows of ``text`` (for asserting it was drawn)."""
    from monitor.display import printable

    return printable(text)


__all__ = ["AGENT", "CRITICAL_NAME", "MODEL", "PAYLOAD", "HostileWorld", "visible",
           "write_hostile_world"]

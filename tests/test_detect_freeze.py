"""A session the engine froze (``freeze_idle``) thaws to exactly the state it had.

The real OpenClaw transcripts of the fixtures are interleaved event by event, so every
event goes to a session another event just left: one engine freezes every other session
after each event, the other never does. Both must raise the same findings and end with the
same streaks, burn and ping-pong pairs.
"""

from __future__ import annotations

from itertools import zip_longest

from test_detect_support import fixture_events

from monitor.config import Config
from monitor.detect.engine import DetectionEngine

NAMES = ("oc-hammer.jsonl", "oc-pingpong.jsonl", "oc-drift.jsonl", "oc-poll.jsonl",
         "oc-unknown-tool.jsonl")


def interleaved() -> list[tuple[str, object]]:
    streams = [[(f"agent:main:{name}", event) for event in fixture_events(name)]
               for name in NAMES]
    return [pair for row in zip_longest(*streams) for pair in row if pair is not None]


def views(engine: DetectionEngine, session_ids: set[str]) -> dict:
    return {sid: (engine.streaks(sid), engine.burn(sid), engine.pingpong_pairs(sid))
            for sid in sorted(session_ids)}


def test_frozen_sessions_thaw_to_the_state_they_had():
    events = interleaved()
    session_ids = {event.session_id for _, event in events}
    assert len(session_ids) == len(NAMES)
    plain, freezing = DetectionEngine(Config()), DetectionEngine(Config())
    plain_findings, frozen_findings = [], []
    for key, event in events:
        plain_findings += plain.observe(key, "main", event)
        frozen_findings += freezing.observe(key, "main", event)
        freezing.freeze_idle()
        assert len(freezing._sessions) == 1
    assert len(freezing._frozen) == len(NAMES) - 1
    assert frozen_findings == plain_findings
    assert {f.level for f in plain_findings} == {"warning", "critical"}
    assert views(freezing, session_ids) == views(plain, session_ids)


def test_a_state_pickle_cannot_take_stays_alive():
    engine = DetectionEngine(Config())
    events = fixture_events("oc-hammer.jsonl")
    for event in events[:6]:
        engine.observe("agent:main:a", "main", event)
    sid = events[0].session_id
    engine._sessions[sid].bloat_factor = lambda: None      # no pickle for a lambda
    engine._last_session = None
    engine.freeze_idle()
    assert sid in engine._sessions and sid not in engine._frozen

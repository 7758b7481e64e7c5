"""A session the engine froze (``freeze_idle``) thaws to exactly the state it had.

The real OpenClaw transcripts of the fixtures are interleaved event by event, so every
event goes to a session another event just left: one engine freezes every other session
after each event, the other never does. Both must raise the same findings and end with the
same streaks, burn and ping-pong pairs.
"""

from __future__ import annotations

import copyreg
import gc
import io
import pickle
import tempfile
from collections import ChainMap
from itertools import zip_longest

import msgspec
import psutil
import pytest
from test_detect_support import fixture_events

from monitor.config import Config
from monitor.detect.engine import DetectionEngine
from monitor.detect.normalise import Normaliser
from monitor.detect.outcome_keys import REPLAY_BUDGET_BYTES, LazyDigest

NAMES = ("oc-hammer.jsonl", "oc-pingpong.jsonl", "oc-drift.jsonl", "oc-poll.jsonl",
         "oc-unknown-tool.jsonl")


def interleaved() -> list[tuple[str, object]]:
    streams = [[(f"agent:main:{name}", event) for event in fixture_events(name)]
               for name in NAMES]
    return [pair for row in zip_longest(*streams) for pair in row if pair is not None]


def views(engine: DetectionEngine, session_ids: set[str]) -> dict:
    return {sid: (engine.streaks(sid), engine.burn(sid), engine.pingpong_pairs(sid))
            for sid in sorted(session_ids)}


@pytest.mark.parametrize("budget", [0, REPLAY_BUDGET_BYTES])
def test_frozen_sessions_thaw_to_the_state_they_had(budget):
    """With a budget (a replay's engine) most keys are frozen unmade, with their bodies."""
    events = interleaved()
    session_ids = {event.session_id for _, event in events}
    assert len(session_ids) == len(NAMES)
    plain, freezing = DetectionEngine(Config()), DetectionEngine(Config())
    freezing.hold_outcome_bodies(budget)
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


def _two_sessions(engine: DetectionEngine) -> str:
    """Feed the hammer's first events as two sessions; the id of the one the last event
    did not go to."""
    events = fixture_events("oc-hammer.jsonl")[:6]
    for event in events:
        engine.observe("agent:main:a", "main", event)
    engine.observe("agent:main:b", "main", msgspec.structs.replace(events[0], session_id="b"))
    return events[0].session_id


def test_frozen_states_are_kept_in_an_unnamed_file_closed_with_the_engine(tmp_path,
                                                                           monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    process = psutil.Process()
    gc.collect()        # earlier tests' garbage holding files would be collected below
    fds_before = process.num_fds()
    engine = DetectionEngine(Config())
    sid = _two_sessions(engine)
    before = views(engine, {sid})
    engine.freeze_idle()
    assert sid in engine._frozen and sid not in engine._sessions
    assert list(tmp_path.iterdir()) == []           # unlinked at once
    assert process.num_fds() == fds_before + 1
    assert views(engine, {sid}) == before           # thawed as it was
    assert sid in engine._sessions and sid not in engine._frozen
    del engine
    gc.collect()
    assert process.num_fds() == fds_before


def test_a_state_with_nowhere_to_be_written_stays_alive(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing"))
    engine = DetectionEngine(Config())
    sid = _two_sessions(engine)
    engine.freeze_idle()
    assert sid in engine._sessions and len(engine._frozen) == 0


def lazy_digests(state) -> list[LazyDigest]:
    """The outcome keys and hashes ``state`` holds, in the order pickle meets them."""
    found: list[LazyDigest] = []

    def note(digest: LazyDigest):
        found.append(digest)
        return digest.reduce_unmade()
    pickler = pickle.Pickler(io.BytesIO(), pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = ChainMap({LazyDigest: note}, copyreg.dispatch_table)
    pickler.dump(state)
    return found


def test_a_freeze_makes_no_outcome_key_and_a_thaw_makes_the_same_ones():
    engine = DetectionEngine(Config())
    engine.hold_outcome_bodies(REPLAY_BUDGET_BYTES)
    sid = _two_sessions(engine)
    before = lazy_digests(engine._sessions[sid])
    unmade = [digest for digest in before if not digest.made]
    assert len(unmade) >= 2
    engine.freeze_idle()
    assert sid in engine._frozen
    assert not any(digest.made for digest in unmade)
    after = lazy_digests(engine._live(sid))
    assert [digest.made for digest in after] == [digest.made for digest in before]
    assert [(d.group, d.make()) for d in after] == [(d.group, d.make()) for d in before]


def test_a_normaliser_pickles_as_what_it_was_made_from():
    normaliser = Normaliser(extra_patterns=(r"build-[0-9]+",), volatile_keys=("elapsed",))
    pickled = pickle.dumps(normaliser, pickle.HIGHEST_PROTOCOL)
    assert len(pickled) < 300                   # not its compiled patterns and gate tables
    thawed = pickle.loads(pickled)
    text = "build-42 done at 2026-12-04T10:00:00Z after 35 ms, pid 4242"
    assert thawed.text(text) == normaliser.text(text) == "# done at # after #, #"
    assert thawed.strip_keys({"elapsed": 3, "ok": True}) == {"ok": True}


def test_windows_and_ordered_maps_thaw_with_their_bounds_and_order():
    from collections import OrderedDict, deque

    from monitor.detect.frozen import FrozenStates

    engine = DetectionEngine(Config())
    sid = _two_sessions(engine)
    state = engine._sessions[sid]
    windows = {name: value for name in dir(state) if not name.startswith("__")
               for value in [getattr(state, name, None)] if isinstance(value, deque)}
    assert any(window.maxlen for window in windows.values())
    state.probe_order = OrderedDict([("b", deque([1, 2], maxlen=2)), ("a", None)])
    frozen = FrozenStates()
    assert frozen.put(sid, state)
    thawed = frozen.take(sid)
    for name, window in windows.items():
        again = getattr(thawed, name)
        assert list(map(_fields, again)) == list(map(_fields, window))
        assert again.maxlen == window.maxlen
    assert list(thawed.probe_order.items()) == [("b", deque([1, 2], maxlen=2)), ("a", None)]
    assert thawed.probe_order["b"].maxlen == 2


def _fields(item):
    slots = getattr(type(item), "__slots__", None)
    return tuple(getattr(item, name, None) for name in slots) if slots else item

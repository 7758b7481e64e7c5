"""Outcome keys made only when compared: the same findings as keys made at once, fewer
digests, and bodies held within a budget."""

from __future__ import annotations

import gc
import pickle
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st
from test_detect_support import Script, exec_details

from monitor.detect.beyond import SessionProgress
from monitor.detect.normalise import Normaliser, outcome_key
from monitor.detect.outcome_keys import (
    REPLAY_BUDGET_BYTES,
    DeferredBodies,
    LazyDigest,
)
from monitor.detect.outcomes import outcome_of

NORMALISER = Normaliser()


def key_of(deferred: DeferredBodies, command: str, output: str, code: int = 0) -> LazyDigest:
    details = exec_details(output, code)
    return deferred.key(NORMALISER, "exec", f"h-{command}", is_error=False,
                        details=details, text=output, held=deferred.held(details, output))


def test_a_key_reads_as_the_key_made_at_once():
    deferred = DeferredBodies(REPLAY_BUDGET_BYTES)
    for command, output, code in (("ls", "a\nb", 0), ("ls /x", "No such file", 2),
                                  ("date", "Fri Dec  4 14:05:05 UTC 2026", 0)):
        key = key_of(deferred, command, output, code)
        assert not key.made
        assert key.make() == str(key) == outcome_key(
            NORMALISER, "exec", f"h-{command}", is_error=False,
            details=exec_details(output, code), text=output)
        assert key.made


def test_only_keys_of_the_same_prefix_are_ever_made():
    deferred = DeferredBodies(REPLAY_BUDGET_BYTES)
    window = Counter(key_of(deferred, f"cat f{n}", f"body {n}") for n in range(50))
    assert len(window) == 50
    assert not any(key.made for key in window)
    again = key_of(deferred, "cat f7", "body 7 at 2026-12-04T14:05:05Z")
    other = key_of(deferred, "cat f8", "changed")
    assert window[again] == 0 and window[other] == 0
    made = {key.group for key in window if key.made}
    assert made == {"ok:h-cat f7", "ok:h-cat f8"}
    assert key_of(deferred, "cat f7", "body 7") in window


def test_failures_of_rotated_commands_share_a_prefix_and_compare_masked():
    deferred = DeferredBodies(REPLAY_BUDGET_BYTES)
    first = key_of(deferred, "ls /nope", "ls: /nope: missing at 14:05:05", 2)
    second = key_of(deferred, "find /nope", "ls: /nope: missing at 14:06:01", 2)
    assert first.group == second.group == "fail:exec"
    assert first == second and hash(first) == hash(second)


def test_held_bodies_stay_within_the_budget_and_dead_keys_leave():
    deferred = DeferredBodies(budget_bytes=64 << 10)
    kept = [key_of(deferred, f"cat f{n}", "x" * 4000) for n in range(200)]
    assert deferred.held_bytes <= 64 << 10
    assert sum(not key.made for key in kept) * 4000 <= 64 << 10
    assert kept[0].made and not kept[-1].made
    del kept
    gc.collect()
    assert deferred.held_bytes == 0


def test_a_pickled_key_comes_back_made_and_equal():
    deferred = DeferredBodies(REPLAY_BUDGET_BYTES)
    key = key_of(deferred, "date", "Fri Dec  4 14:05:05 UTC 2026")
    thawed = pickle.loads(pickle.dumps(key))
    assert key.made and thawed.made
    assert thawed == key and hash(thawed) == hash(key)


def test_nested_details_are_made_at_once():
    deferred = DeferredBodies(REPLAY_BUDGET_BYTES)
    details = {"content": [{"type": "text", "text": "x"}]}
    held = deferred.held(details, "x")
    key = deferred.key(NORMALISER, "read", "h", is_error=False, details=details, text="x",
                       held=held)
    assert held is None and key.made and deferred.held_bytes == 0


RESULTS = [  # tool, params, is_error, details, text: every way outcome_of hashes
    ("exec", {"command": "ls"}, False, exec_details("a\nb"), "a\nb"),
    ("exec", {"command": "ls /x"}, False,
     exec_details("ls: /x: missing at 14:05:05, pid 42", 2, "failed"), "ls: /x: missing"),
    ("exec", {"command": "sleep 9"}, False, {"status": "running", "tail": "zz"}, ""),
    ("exec", {"command": "rm -rf /"}, False,
     {"status": "approval-pending", "host": "h", "command": "rm -rf /"}, ""),
    ("read", {"path": "x"}, True, None, "ENOENT: no such file"),
    ("write", {"path": "x"}, False, {"changed": False}, ""),
    ("process", {"action": "poll"}, False, {"status": "running", "aggregated": "x"}, "x"),
    ("process", {"action": "log"}, False, {"status": "running", "totalLines": 3}, "x"),
    ("message", {"action": "send", "to": "a"}, False, {"messageId": "1", "ok": True}, "sent"),
    ("read", {"path": "y"}, False, {"kind": "text"}, "body"),
]


def test_deferred_outcome_hashes_are_those_outcome_of_makes():
    deferred = DeferredBodies(REPLAY_BUDGET_BYTES)
    identities = 0
    for tool, params, is_error, details, text in RESULTS:
        eager = outcome_of(tool, params, is_error=is_error, details=details, text=text,
                           is_veto=False)
        defer = deferred.deferring(tool, deferred.held(details, text))
        lazy = outcome_of(tool, params, is_error=is_error, details=details, text=text,
                          is_veto=False, defer=defer)
        assert isinstance(lazy.result_hash, LazyDigest) and not lazy.result_hash.made
        assert lazy.result_hash.make() == eager.result_hash
        assert (lazy.kind, lazy.no_progress, lazy.unknown_tool_name) == \
            (eager.kind, eager.no_progress, eager.unknown_tool_name)
        if eager.failure_identity is not None:
            identities += 1
            assert lazy.failure_identity.make() == eager.failure_identity
    assert identities == 1


def test_digests_are_equal_within_a_tool_and_made_when_compared():
    first, second = LazyDigest("exec", str, "h1"), LazyDigest("exec", str, "h1")
    other_tool, changed = LazyDigest("read", str, "h1"), LazyDigest("exec", str, "h2")
    assert not first.made and first == second and first.made and second.made
    assert hash(first) == hash(second) and first != other_tool
    assert len({first, second, other_tool}) == 2
    assert changed != first and f"{changed}" == "h2"
    thawed = pickle.loads(pickle.dumps(LazyDigest("exec", str, "h1")))
    assert thawed.made and thawed == first


def test_a_live_engine_makes_each_key_at_once_and_a_replay_holds_bodies():
    live, replaying = Script(), Script()
    replaying.engine.hold_outcome_bodies(REPLAY_BUDGET_BYTES)
    for script in (live, replaying):
        for n in range(40):
            script.exec(f"cat f{n}", f"body {n}")
    assert live.engine._calls.outcome_keys.held_bytes == 0
    assert replaying.engine._calls.outcome_keys.held_bytes > 0
    assert live.findings == replaying.findings


OUTPUTS = st.sampled_from([
    "ok", "ok at 2026-12-04T14:05:05Z", "ok at 2026-12-04T14:06:11Z", "Permission denied",
    "took 12ms", "took 340ms", "pid 4242 exited", "pid 4343 exited", "x" * 300, "",
])
STEPS = st.lists(st.tuples(
    st.sampled_from(["ls", "find .", "python3 x.py", "tail log", "cat a"]),
    OUTPUTS, st.sampled_from([0, 0, 1, 2]), st.booleans(),
    st.sampled_from(["step", "step", "step", "compaction"])), max_size=120)


class TextKey(str):
    """A key's text, as the engine would use a key."""

    @property
    def group(self) -> str:
        return self.rpartition(":")[0]      # its prefix

    def make(self) -> str:
        return self


class TextKeys(DeferredBodies):
    """Each key its text, made at once (``normalise.outcome_key``)."""

    def key(self, normaliser, tool, args_hash, *, is_error, details, text, held):
        return TextKey(outcome_key(normaliser, tool, args_hash, is_error=is_error,
                                   details=details, text=text))


def _run(steps, budget: int | None) -> tuple[list, list]:
    """Findings and streaks of ``steps``, with keys made lazily within ``budget`` (None:
    text keys)."""
    script = Script()
    script.engine._calls.outcome_keys = TextKeys() if budget is None else DeferredBodies(budget)
    for command, output, code, read_instead, kind in steps:
        if kind == "compaction":
            script.compaction()
        elif read_instead:
            script.step("read", {"path": command}, {"kind": "text", "size": len(output)}, output)
        else:
            script.exec(command, output, code)
    streaks = [(s.detector, s.count, s.level) for s in script.engine.streaks(script.session_id)]
    return [(f.detector, f.level, f.count, f.at_call) for f in script.findings], streaks


@settings(max_examples=150, deadline=None)
@given(STEPS, st.sampled_from([1 << 20, 2048, 0]))
def test_findings_and_streaks_are_those_of_text_keys(steps, budget):
    assert _run(steps, budget) == _run(steps, None)


class NaiveWindow:
    """``session_no_progress`` as it reads: is the key's text among the last ``window``."""

    def __init__(self, window: int) -> None:
        self.window, self.texts, self.streak = window, [], 0

    def observe(self, group: str, text: str | None) -> int:
        self.streak = self.streak + 1 if text is None or (group, text) in self.texts else 0
        if text is not None:
            self.texts = [*self.texts, (group, text)][-self.window:]
        return self.streak


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 6), st.lists(st.tuples(st.sampled_from("abc"), st.sampled_from("xyz"),
                                             st.booleans(), st.booleans()), max_size=60))
def test_the_no_progress_window_is_that_of_the_keys_texts(window, steps):
    """Keys of a few groups and texts, some made before they arrive, some never compared
    (a veto: None); each made only when it meets a key of its group."""
    progress, naive = SessionProgress(window), NaiveWindow(window)

    def make(group, text):
        return f"{group}:{text}"
    for group, text, made_first, veto in steps:
        key = None if veto else LazyDigest(group, make, group, text)
        if key is not None and made_first:
            key.make()
        assert progress.observe(key) == naive.observe(group, None if veto else f"{group}:{text}")
        assert len(progress) == len(set(naive.texts))
    per_group = Counter(group for group, _ in naive.texts)
    assert all(per_group[group] == 1 for group in progress.lone)   # alone of its group
    assert [k.make() for k in progress.distinct()] == list(dict.fromkeys(
        text for _, text in naive.texts))

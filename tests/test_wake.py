"""The waker watches each directory tree once and wakes on a real file change."""

from __future__ import annotations

import threading

from monitor.sources.wake import Waker


def test_nested_paths_are_watched_through_their_outermost_root(tmp_path):
    state = tmp_path / "state"
    sessions = state / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    sibling = tmp_path / "state-logs"
    sibling.mkdir()
    waker = Waker([str(state), str(sessions), str(sessions / "a.jsonl"), str(sibling)],
                  poll_seconds=30)
    try:
        assert waker._roots == [str(state), str(sibling)]
    finally:
        waker.close()


def test_a_write_under_the_root_wakes_the_waiter(tmp_path):
    sessions = tmp_path / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    waker = Waker([str(tmp_path), str(sessions)], poll_seconds=30)
    woke = threading.Event()

    def waiter() -> None:
        if waker.wait(20):
            woke.set()

    try:
        thread = threading.Thread(target=waiter)
        thread.start()
        for attempt in range(40):
            (sessions / "a.jsonl").write_text("{}\n" * (attempt + 1))
            if woke.wait(0.5):
                break
        thread.join(25)
        assert woke.is_set(), "no wake-up within 20 s of writes under the watched root"
    finally:
        waker.close()

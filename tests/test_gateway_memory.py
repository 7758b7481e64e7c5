"""A gateway cannot make clawwatch hold its frames: what the client and the run tracker keep
of a flood of large frames stays small (measured with tracemalloc, real sockets)."""

from __future__ import annotations

import tracemalloc

import pytest
from test_act_gateway import TOKEN, FakeGateway, fast_client

from monitor.act.runs import RunTracker

pytestmark = pytest.mark.timeout(60)

FRAMES = 30
BLOB = "x" * (1024 * 1024)
KEPT_LIMIT = 4 * 1024 * 1024     # the flood is 60 MiB; what stays must be a small part


def retained_after(work) -> int:
    """Bytes still allocated after ``work()`` returns, beyond what was before it."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        keep = work()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    del keep
    return after - before


def test_events_and_stray_responses_before_the_answer_are_not_kept():
    """Before its answer the gateway sends 30 events and 30 responses to no request, 1 MiB
    each: the call gets its answer, the listener saw the events, and none is kept."""
    gateway = FakeGateway("flood-before-answer", flood=(FRAMES, BLOB))
    seen: list[str] = []
    client = fast_client(gateway.url, TOKEN, call_timeout=20,
                         on_event=lambda frame: seen.append(frame.get("event")))

    def call():
        client.chat_abort("agent:main:idle")
        return client

    try:
        kept = retained_after(call)
    finally:
        client.close()
        gateway.close()
    assert seen.count("flood") == FRAMES
    assert kept < KEPT_LIMIT, f"{kept / 2**20:.0f} MiB kept"


def test_the_run_tracker_keeps_only_what_it_uses_of_large_events():
    tracker = RunTracker()

    def feed():
        for number in range(FRAMES):
            tracker.feed({"event": "agent", "payload": {
                "runId": f"run-{number}-{BLOB}", "sessionKey": f"agent:main:{BLOB}",
                "stream": "lifecycle", "data": {"phase": "end", "status": "ok", "x": BLOB}}})
            tracker.feed({"event": "agent", "payload": {
                "runId": "run-x", "sessionKey": "agent:main:x", "stream": "tool",
                "data": {"phase": "update", "toolCallId": BLOB, "partialResult": {
                    "details": {"pid": 1000 + number, "tail": f"{number}\n{BLOB}\n" * 2}}}}})
        return tracker

    kept = retained_after(feed)
    assert kept < KEPT_LIMIT, f"{kept / 2**20:.0f} MiB kept"
    run = f"run-0-{BLOB}"[:256]
    assert tracker.wait_run_ends([run], 0) == {
        run: {"phase": "end", "status": "ok", "sessionKey": f"agent:main:{BLOB}"[:256]}}
    assert len(tracker.exec_pids()) == FRAMES

"""The gateway log parsed ahead while it is held (``sources.log_ahead``): the polls that
follow give out what a plain read gives, in order, and until then nothing of it counts as
read, neither in the source's counts nor in its checkpoint."""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor.events import GatewayNotice, SourceError, SourceNotice
from monitor.sources import gateway_log, log_ahead
from monitor.sources.gateway_log import GatewayLogSource
from monitor.sources.tail_state import FollowerState

SAMPLE = Path(__file__).parent / "fixtures" / "gateway-log.sample.jsonl"


@pytest.fixture
def log(tmp_path, monkeypatch) -> Path:
    """Forty copies of the real sample, a malformed line in the middle; read ahead in
    small steps."""
    monkeypatch.setattr(gateway_log, "AHEAD_STEP_BYTES", 4096)
    lines = [line for line in SAMPLE.read_bytes().splitlines(keepends=True) if line.strip()]
    body = lines * 40
    body.insert(len(body) // 2, b"{not json\n")
    path = tmp_path / "openclaw.log"
    path.write_bytes(b"".join(body))
    return path


def small_steps(log: Path) -> GatewayLogSource:
    """A source reading the log in steps of ``AHEAD_STEP_BYTES``, as parsing ahead does
    (a file's notices come after the lines of the step that found them)."""
    source = GatewayLogSource(str(log))
    source.poll_budget_bytes = gateway_log.AHEAD_STEP_BYTES
    return source


def read_all(source: GatewayLogSource) -> list:
    events: list = []
    while True:
        events += source.poll()
        if not source.behind:
            return events


def test_what_is_parsed_ahead_comes_out_as_a_plain_read_gives_it(log):
    plain = small_steps(log)
    expected = read_all(plain)
    assert sum(isinstance(e, SourceError) for e in expected) == 1

    source = small_steps(log)
    at_start = source.checkpoint()
    source.parse_ahead()
    while source.follower.behind:
        source.parse_ahead()
    assert source.behind and source.follower.state().offset == log.stat().st_size
    assert (source.events, source.errors) == (0, 0)
    assert source.checkpoint() == at_start
    assert source.backlog_bytes == log.stat().st_size
    first = source.poll()
    notices = sum(isinstance(e, GatewayNotice) for e in first)
    step = small_steps(log)
    assert first == step.poll()
    assert notices and source.events == notices and source.checkpoint() == step.checkpoint()
    assert first + read_all(source) == expected
    assert (source.events, source.errors) == (plain.events, plain.errors)
    assert source.checkpoint() == plain.checkpoint()
    assert not source.ahead and source.backlog_bytes == 0


def places(events: list) -> list[str]:
    """Where each line given came from (a restart forgets which run a trace was in)."""
    return [e.origin if isinstance(e, GatewayNotice) else e.where for e in events
            if not isinstance(e, SourceNotice)]


def test_a_restart_from_a_checkpoint_taken_meanwhile_reads_every_line_once(log):
    expected = read_all(small_steps(log))
    source = small_steps(log)
    given = source.poll()
    for _ in range(10):
        source.parse_ahead()
    given += source.poll()
    saved = source.checkpoint()
    source.close()
    assert len(given) < len(expected) // 4
    resumed = GatewayLogSource(str(log), resume=FollowerState.from_json(saved["follower"]))
    resumed.poll_budget_bytes = gateway_log.AHEAD_STEP_BYTES
    assert places(given + read_all(resumed)) == places(expected)


def test_what_is_kept_ahead_is_bounded(log, monkeypatch):
    monkeypatch.setattr(log_ahead, "AHEAD_KEPT_BYTES", 3000)
    source = small_steps(log)
    source.parse_ahead()
    source.parse_ahead()
    offset = source.follower.state().offset
    assert source.ahead.full
    source.parse_ahead()
    assert source.follower.state().offset == offset
    assert read_all(source) == read_all(small_steps(log))


def test_a_message_holding_a_lone_surrogate_is_parsed_ahead_and_given_out(log):
    """OpenClaw's JSON writes a lone surrogate of a tool's output as ``\\ud800``: the step
    holding it cannot be packed, is kept as it is, and comes out in order (it ended
    ``watch``'s catch-up with a traceback)."""
    bad = (b'{"0":"{\\"subsystem\\":\\"agents/tools\\"}","1":"output \\ud800 cut",'
           b'"_meta":{"logLevelName":"WARN"},"time":"2026-07-12T21:12:28.674Z"}\n')
    log.write_bytes(log.read_bytes() + bad)
    expected = read_all(small_steps(log))
    source = small_steps(log)
    source.parse_ahead()
    while source.follower.behind:
        source.parse_ahead()
    given = read_all(source)
    assert given == expected
    assert [e.message for e in given if isinstance(e, GatewayNotice)][-1] == "output \ud800 cut"

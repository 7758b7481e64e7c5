"""``--metrics`` series as Prometheus reads them over time: a counter never goes down (a
decrease is a reset to ``increase()`` and ``rate()``, and fires the shipped alert rules
falsely), a session keeps its label values from one scrape to the next, and a session stamped
in the future still ages out of the per-session series.

Real parts: a real ``Monitor`` folds the events its sources would produce, the page is fetched
twice over HTTP from the ``prometheus_client`` server and parsed with its parser.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from monitor import metrics
from monitor.config import load_config
from monitor.detect.engine import DetectionEngine
from monitor.events import AssistantMessage, GatewayNotice, SessionInfo, ToolCall, Usage
from monitor.metrics import OTHER, MetricsHub
from monitor.metrics_server import MetricsServer
from monitor.pipeline import Monitor
from monitor.sources.sourceset import SourceSet
from tests.test_metrics import samples, scrape

NOW = time.time()
LOOP_LINE = "Loop warning: exec called 10 times with identical arguments"


def reply(session_id: str, tokens: int, ts: float = NOW) -> AssistantMessage:
    return AssistantMessage(session_id, None, ts, Usage(total=tokens), "stop", None, "model",
                            None, 0, 5)


def call(session_id: str, number: int, ts: float = NOW) -> ToolCall:
    return ToolCall(session_id, f"call-{number}", "read", {"path": f"/f{number}"}, None, ts)


@pytest.fixture
def served(tmp_path: Path):
    """(monitor, hub, server, clock): a monitor fed by hand, its hub on a settable clock."""
    clock = [NOW]
    sources = SourceSet(state_dir=str(tmp_path / "state"), log_path=str(tmp_path / "gw.log"))
    monitor = Monitor(sources, DetectionEngine(load_config(None, {})))
    hub = MetricsHub(monitor, clock=lambda: clock[0])
    server = MetricsServer(hub, "127.0.0.1:0")
    yield monitor, hub, server, clock
    server.close()
    sources.close()


def counters(server: MetricsServer) -> dict[tuple, float]:
    """Every ``*_total`` sample of a scrape, by name and labels."""
    return {(name, *sorted(labels.items())): value
            for name, rows in samples(scrape(server)).items() if name.endswith("_total")
            for labels, value in rows}


def assert_none_went_down(before: dict, after: dict) -> None:
    went_down = {series: (value, after.get(series)) for series, value in before.items()
                 if after.get(series, 0) < value}
    assert went_down == {}


def test_counters_stay_put_when_the_agent_ranking_changes(served, monkeypatch):
    monkeypatch.setattr(metrics, "MAX_AGENTS", 1)
    monitor, _, server, _ = served
    monitor.fold([SessionInfo("agent:a:1", "sa", "a"), SessionInfo("agent:b:1", "sb", "b"),
                  reply("sa", 100), call("sa", 1), reply("sb", 50), call("sb", 2),
                  call("sb", 3)])
    before = counters(server)
    assert before[("clawwatch_tool_calls_total", ("agent", OTHER))] == 2
    monitor.fold([reply("sb", 500)])            # b now outweighs a
    after = counters(server)
    assert_none_went_down(before, after)
    assert after[("clawwatch_tokens_total", ("agent", OTHER))] == 550


def test_findings_of_a_log_only_session_stay_with_its_agent_once_adopted(served):
    monitor, _, server, _ = served
    monitor.fold([GatewayNotice("WARN", "agents/loop-detection", LOOP_LINE, NOW,
                                session_key="agent:a:x", agent_id="a")])
    before = counters(server)
    series = ("clawwatch_findings_total", ("agent", "a"), ("detector", "gateway_loop_notice"),
              ("level", "warning"))
    assert before[series] == 1
    monitor.fold([SessionInfo("agent:a:x", "sx", "a"), reply("sx", 10)])
    after = counters(server)
    assert_none_went_down(before, after)
    assert after[series] == 1


def test_a_session_moving_to_another_agent_takes_nothing_back(served):
    monitor, _, server, _ = served
    monitor.fold([SessionInfo("agent:a:m", "sm", "a"), reply("sm", 100), call("sm", 1),
                  SessionInfo("agent:a:n", "sn", "a"), reply("sn", 1)])
    before = counters(server)
    monitor.fold([SessionInfo("agent:b:m", "sm", "b"), reply("sm", 5), call("sm", 2)])
    after = counters(server)
    assert_none_went_down(before, after)
    assert after[("clawwatch_tokens_total", ("agent", "a"))] == 101
    assert after[("clawwatch_tokens_total", ("agent", "b"))] == 5


def test_twin_sessions_keep_their_label_suffixes_whichever_ranks_first(served):
    monitor, _, server, _ = served
    twins = ["agent:a:" + "T" * 300 + "-one", "agent:a:" + "T" * 300 + "-two"]
    monitor.fold([SessionInfo(twins[0], "s1", "a"), SessionInfo(twins[1], "s2", "a"),
                  reply("s1", 10, NOW - 20), reply("s2", 20, NOW - 10)])

    def label_of_each() -> dict[float, str]:
        """session_key label by tokens (which tell the twins apart)."""
        rows = samples(scrape(server))["clawwatch_session_tokens"]
        return {value: labels["session_key"] for labels, value in rows}

    before = label_of_each()
    assert len(set(before.values())) == 2
    monitor.fold([reply("s1", 1, NOW)])         # s1 is now the most recent
    after = label_of_each()
    assert after == {11: before[10], 20: before[20]}


def test_a_session_stamped_in_the_future_ages_out_past_the_lookback(served):
    monitor, hub, server, clock = served
    monitor.fold([SessionInfo("agent:a:skewed", "sf", "a"),
                  reply("sf", 10, NOW + 10 * 86400)])     # a host clock ten days ahead

    def session_keys() -> list[str]:
        rows = samples(scrape(server)).get("clawwatch_session_tokens", [])
        return [labels["session_key"] for labels, _ in rows]

    assert session_keys() == ["agent:a:skewed"]
    clock[0] = NOW + hub.lookback_seconds - 1
    assert session_keys() == ["agent:a:skewed"]
    clock[0] = NOW + hub.lookback_seconds + 1
    assert session_keys() == []
    monitor.fold([reply("sf", 1, NOW + 10 * 86400 + 5)])   # it is read again: back
    assert session_keys() == ["agent:a:skewed"]

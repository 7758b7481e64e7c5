"""``--metrics``: the exporter's page agrees with the replay document, its per-session series
are bounded and drop when a session ends, and hostile session keys reach it only as
printable, clipped, unique label values.

Real parts: the simulator writes a real state dir, a real ``Monitor`` reads it, the page is
fetched over HTTP from the ``prometheus_client`` server and parsed with its parser.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from pathlib import Path

import pytest
from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as openmetrics_families,
)
from prometheus_client.parser import text_string_to_metric_families

from monitor.compiled import compiled_modules
from monitor.config import load_config
from monitor.demo import DEMO_SCENARIOS, LOOPING
from monitor.demo.sim.simulator import Simulator
from monitor.detect.engine import DetectionEngine
from monitor.metrics import LABEL_CHARS, OTHER, MetricsHub
from monitor.metrics_server import MetricsListenError, MetricsServer, parse_listen
from monitor.pipeline import Monitor
from monitor.records import ActionRecord, FindingRecord
from monitor.sources.sourceset import SourceSet
from tests.hostile import HOSTILE_STRINGS, PAYLOAD, raw_controls

KEYS = dict(DEMO_SCENARIOS)
BUDGET = 2_000_000


def world(tmp_path: Path, sessions, *, rounds: int, era: str = "sqlite",
          agent_id: str = "main") -> Simulator:
    sim = Simulator(tmp_path / "state", era=era, log_path=tmp_path / "gateway.log",
                    agent_id=agent_id)
    for scenario, key in sessions:
        sim.add_session(scenario, key=key)
    for _ in range(rounds):
        for session in sim.sessions:
            sim.step(session)
    return sim


def monitor_of(tmp_path: Path) -> Monitor:
    config = load_config(None, {"CLAWWATCH_BUDGETS__SESSION_TOKENS": str(BUDGET)})
    sources = SourceSet(state_dir=str(tmp_path / "state"), log_path=str(tmp_path / "gateway.log"))
    return Monitor(sources, DetectionEngine(config))


def catch_up(hub: MetricsHub) -> None:
    """Steps until the sources have nothing more to read."""
    for _ in range(200):
        hub.step()
        if not hub.monitor.sources.behind:
            break
    hub.step()


def scrape(server: MetricsServer, openmetrics: bool = False) -> str:
    request = urllib.request.Request(server.url)
    if openmetrics:
        request.add_header("Accept", "application/openmetrics-text; version=1.0.0")
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.read().decode("utf-8")


def samples(page: str) -> dict[str, list[tuple[dict, float]]]:
    out: dict[str, list[tuple[dict, float]]] = {}
    for family in text_string_to_metric_families(page):
        for sample in family.samples:
            out.setdefault(sample.name, []).append((sample.labels, sample.value))
    return out


@pytest.fixture
def served(tmp_path):
    """(simulator, hub, server) over the demo's six sessions, 40 turns each."""
    sim = world(tmp_path, DEMO_SCENARIOS, rounds=40)
    hub = MetricsHub(monitor_of(tmp_path))
    server = MetricsServer(hub, "127.0.0.1:0")
    catch_up(hub)
    yield sim, hub, server
    server.close()
    hub.monitor.sources.close()
    sim.close()


def test_the_page_agrees_with_the_replay_document_of_the_same_state(served):
    _, hub, server = served
    page = scrape(server)
    document = hub.monitor.report()
    got = samples(page)

    sessions = {s["key"]: s for s in document["sessions"]}
    assert set(sessions) == set(KEYS.values())
    # findings: every one the sessions ever produced, by detector and level
    expected = Counter()
    for session in sessions.values():
        assert session["findings_total"] == len(session["findings"])   # none dropped here
        for finding in session["findings"]:
            expected[(finding["detector"], finding["level"])] += 1
    counted = Counter()
    for labels, value in got["clawwatch_findings_total"]:
        assert labels["agent"] == "main"
        counted[(labels["detector"], labels["level"])] += int(value)
    assert counted == expected and sum(expected.values()) > 10

    # tokens and tool calls: per active session, and summed by agent over every session
    per_session = {labels["session_key"]: value
                   for labels, value in got["clawwatch_session_tokens"]}
    calls = {labels["session_key"]: value for labels, value in
             got["clawwatch_session_tool_calls"]}
    active = {key for key, s in sessions.items() if s["status"] not in ("done",)}
    assert set(per_session) == active == set(KEYS.values()) - {KEYS["healthy"]}
    for key in active:
        assert per_session[key] == sessions[key]["tokens"]["total"]
        assert calls[key] == sessions[key]["tool_calls"]
    [(labels, total)] = got["clawwatch_tokens_total"]
    assert total == sum(s["tokens"]["total"] for s in sessions.values())
    [(labels, total)] = got["clawwatch_tool_calls_total"]
    assert total == sum(s["tool_calls"] for s in sessions.values())

    # levels: the looping sessions are critical (2); the healthy one has ended: no series
    levels = {labels["session_key"]: value for labels, value in got["clawwatch_session_level"]}
    for scenario in LOOPING:
        assert levels[KEYS[scenario]] == 2
        assert any(f["level"] == "critical" for f in sessions[KEYS[scenario]]["findings"])
    assert KEYS["healthy"] not in levels and not sessions[KEYS["healthy"]]["findings"]
    states = {labels["state"]: value for labels, value in got["clawwatch_sessions"]}
    assert states["done"] == 1 and states["looping"] >= 4 and sum(states.values()) == 6
    budgets = {labels["session_key"]: value for labels, value in
               got["clawwatch_session_token_budget"]}
    assert set(budgets.values()) == {BUDGET}

    # sources: the same events and errors as the document's "sources", by kind
    by_kind = Counter()
    for source in document["sources"]:
        by_kind[source["kind"]] += source["events"]
    assert {labels["kind"]: value for labels, value in got["clawwatch_source_events_total"]} \
        == dict(by_kind)
    assert all(value == 0 for _, value in got["clawwatch_source_errors_total"])
    assert {labels["kind"] for labels, _ in
            got["clawwatch_source_last_event_timestamp_seconds"]} == set(by_kind)
    [(labels, version)] = got["clawwatch_build_info"]
    assert labels["version"] and version == 1
    assert labels["build"] == ("compiled" if compiled_modules()[0] else "pure")
    assert got["clawwatch_last_poll_timestamp_seconds"][0][1] == pytest.approx(time.time(),
                                                                              abs=60)


def test_openmetrics_is_served_when_asked_for(served):
    _, _, server = served
    page = scrape(server, openmetrics=True)
    assert page.rstrip().endswith("# EOF")
    names = {family.name for family in openmetrics_families(page)}
    assert {"clawwatch_findings", "clawwatch_session_level", "clawwatch_build_info"} <= names


def test_a_new_step_shows_in_the_next_scrape(served):
    sim, hub, server = served
    before = samples(scrape(server))
    hammer = sim.session(KEYS["hammer"])
    for _ in range(5):
        sim.step(hammer)
    catch_up(hub)
    after = samples(scrape(server))
    calls = {labels["session_key"]: value for labels, value in
             after["clawwatch_session_tool_calls"]}
    old = {labels["session_key"]: value for labels, value in
           before["clawwatch_session_tool_calls"]}
    assert calls[KEYS["hammer"]] == old[KEYS["hammer"]] + 5
    assert after["clawwatch_polls_total"][0][1] > before["clawwatch_polls_total"][0][1]


def test_actions_are_counted_from_the_loop_records(served):
    _, hub, server = served
    def action(name: str, ok: bool, dry_run: bool = False) -> ActionRecord:
        return ActionRecord(ts=None, key="k", action=name, trigger=None, ok=ok, detail="",
                            pids=[], session_id=None, level=None, dry_run=dry_run)

    hub.observe([
        action("abort", True), action("abort", True), action("kill", False),
        action("kill", True, dry_run=True),
        FindingRecord(ts=None, key=KEYS["poll"], session_id=sim_id(hub, KEYS["poll"]),
                      detector="hung_process", level="critical", count=1, tool=None,
                      at_call=0, message=""),
    ])
    got = samples(scrape(server))
    actions = {(labels["action"], labels["ok"]): value
               for labels, value in got["clawwatch_actions_total"]}
    assert actions == {("abort", "true"): 2, ("kill", "false"): 1}
    assert got["clawwatch_dry_run_actions_total"] == [({"action": "kill"}, 1)]
    assert ({"detector": "hung_process", "level": "critical", "agent": "main"}, 1) \
        in got["clawwatch_findings_total"]


def sim_id(hub: MetricsHub, key: str) -> str:
    return hub.monitor.key_to_session[key]


def test_a_busy_loop_does_not_block_a_scrape(served):
    _, hub, _ = served
    first = hub.snapshot()
    with hub.lock:                       # the loop is in the middle of a long step
        started = time.monotonic()
        stale = hub.snapshot(wait=0.2)
        assert time.monotonic() - started < 2
    assert stale is first


def test_sessions_beyond_max_sessions_are_aggregated_and_an_ended_one_drops(tmp_path):
    sessions = [("hammer" if i % 3 else "drift", f"agent:main:s{i:02}") for i in range(12)]
    sim = world(tmp_path, sessions, rounds=12)
    hub = MetricsHub(monitor_of(tmp_path), max_sessions=5)
    server = MetricsServer(hub, "127.0.0.1:0")
    try:
        catch_up(hub)
        got = samples(scrape(server))
        document = {s["key"]: s for s in hub.monitor.report()["sessions"]}
        keys = [labels["session_key"] for labels, _ in got["clawwatch_session_tokens"]]
        assert len(keys) == 6 and keys.count(OTHER) == 1
        assert got["clawwatch_active_sessions"][0][1] == 12
        assert got["clawwatch_sessions_aggregated"][0][1] == 7
        tokens = {labels["session_key"]: value for labels, value in
                  got["clawwatch_session_tokens"]}
        assert sum(tokens.values()) == sum(s["tokens"]["total"] for s in document.values())
        kept = [k for k in keys if k != OTHER]
        assert tokens[OTHER] == sum(document[k]["tokens"]["total"] for k in document
                                    if k not in kept)
        # the worst sessions keep their own series
        levels = {labels["session_key"]: value for labels, value in
                  got["clawwatch_session_level"]}
        assert min(levels[k] for k in kept) >= levels[OTHER]

        # a session ends: its series is gone at the next scrape, and one from "_other"
        # takes its place
        ended = kept[0]
        assert sim.end_session(ended, status="done", aborted=False)
        catch_up(hub)
        got = samples(scrape(server))
        keys = [labels["session_key"] for labels, _ in got["clawwatch_session_level"]]
        assert ended not in keys and len(keys) == 6
        assert got["clawwatch_sessions_aggregated"][0][1] == 6
        states = {labels["state"]: value for labels, value in got["clawwatch_sessions"]}
        assert states["done"] == 1
    finally:
        server.close()
        hub.monitor.sources.close()
        sim.close()


def test_sessions_quiet_past_the_lookback_have_no_series(tmp_path):
    sim = world(tmp_path, DEMO_SCENARIOS, rounds=15)
    later = time.time() + 3600
    hub = MetricsHub(monitor_of(tmp_path), lookback_seconds=900, clock=lambda: later)
    try:
        catch_up(hub)
        snap = hub.snapshot()
        assert snap.sessions == () and snap.other is None and snap.active == 0
        assert sum(snap.states.values()) == 6       # still counted, by state
    finally:
        hub.monitor.sources.close()
        sim.close()


def test_hostile_session_keys_become_printable_clipped_unique_labels(tmp_path):
    hostile = {name: text for name, text in HOSTILE_STRINGS.items()
               if name not in ("lone_surrogate", "nul")}      # the index cannot store these
    twins = ["agent:main:" + "T" * 300 + "-one", "agent:main:" + "T" * 300 + "-two"]
    sessions = [("hammer", f"agent:main:{text}") for text in hostile.values()]
    sessions += [("hammer", key) for key in [*twins, OTHER]]
    sim = world(tmp_path, sessions, rounds=3, era="legacy")
    hub = MetricsHub(monitor_of(tmp_path))
    server = MetricsServer(hub, "127.0.0.1:0")
    try:
        catch_up(hub)
        page = scrape(server)
        assert raw_controls(page) == []
        got = samples(page)
        keys = [labels["session_key"] for labels, _ in got["clawwatch_session_level"]]
        assert len(keys) == len(set(keys)) == len(sessions)
        assert all(len(key) <= LABEL_CHARS for key in keys)
        assert sum(PAYLOAD in key for key in keys) == len(hostile)
        assert keys.count(OTHER) == 0        # a session really named "_other" is renamed
        assert "\u241b]0;" + PAYLOAD in "".join(keys)              # ESC shown as ␛
    finally:
        server.close()
        hub.monitor.sources.close()
        sim.close()


def test_secrets_in_session_keys_and_agent_ids_never_reach_a_label(tmp_path):
    # the shipped alert rules forward session_key to Alertmanager
    agent = "ops-sk-proj-" + "Z" * 30
    secrets = [agent, "ghp_" + "B" * 36, "ghp_" + "C" * 36]
    sessions = [("hammer", f"agent:{agent}:hook:{token}") for token in secrets[1:]]
    sim = world(tmp_path, sessions, rounds=3, era="legacy", agent_id=agent)
    hub = MetricsHub(monitor_of(tmp_path))
    server = MetricsServer(hub, "127.0.0.1:0")
    try:
        catch_up(hub)
        page = scrape(server)
        assert [secret for secret in secrets if secret in page] == []
        got = samples(page)
        keys = [labels["session_key"] for labels, _ in got["clawwatch_session_level"]]
        assert len(set(keys)) == 2, "two keys that redact alike are still two series"
        assert all(key.startswith("agent:") and "«redacted»" in key for key in keys)
        assert {labels["agent"] for labels, _ in got["clawwatch_tokens_total"]} == {
            "ops-«redacted»"}
    finally:
        server.close()
        hub.monitor.sources.close()
        sim.close()


@pytest.mark.parametrize(("text", "expected"), [
    ("127.0.0.1:9464", ("127.0.0.1", 9464)),
    ("9464", ("127.0.0.1", 9464)),
    ("0.0.0.0:9000", ("0.0.0.0", 9000)),
    ("[::1]:9464", ("::1", 9464)),
    ("localhost:0", ("localhost", 0)),
])
def test_listen_addresses(text, expected):
    assert parse_listen(text) == expected


@pytest.mark.parametrize("text", [":9464", "::1:9464", "host", "host:port", "h:70000", ""])
def test_bad_listen_addresses(text):
    with pytest.raises(MetricsListenError):
        parse_listen(text)


def test_a_taken_port_is_a_clear_error(served):
    _, hub, server = served
    with pytest.raises(MetricsListenError, match="cannot listen"):
        MetricsServer(hub, f"127.0.0.1:{server.port}")


def test_the_exporter_loads_prometheus_client_only_when_started():
    probe = ("import sys, monitor.metrics, monitor.cli\n"
             "print('prometheus_client' in sys.modules)\n")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "False"


def test_scrapes_while_the_loop_steps_stay_consistent(tmp_path):
    """Scrapes from another thread while the loop reads a live simulator: every page is a
    consistent picture (the sessions gauge sums to the sessions known)."""
    sim = world(tmp_path, DEMO_SCENARIOS, rounds=2)
    hub = MetricsHub(monitor_of(tmp_path))
    server = MetricsServer(hub, "127.0.0.1:0")
    stop = threading.Event()
    writer = threading.Thread(target=lambda: sim.run(rate=200, stop_event=stop), daemon=True)
    writer.start()
    try:
        pages = 0
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            hub.step()
            got = samples(scrape(server))
            assert sum(v for _, v in got["clawwatch_sessions"]) == 6
            pages += 1
        assert pages > 5
    finally:
        stop.set()
        writer.join(timeout=5)
        server.close()
        hub.monitor.sources.close()
        sim.close()


def clawwatch(*args: str, home: Path, stdout=subprocess.PIPE) -> subprocess.Popen:
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "TMPDIR": str(home)}
    return subprocess.Popen([sys.executable, "-m", "monitor", *args], env=env,
                            stdout=stdout, stderr=subprocess.PIPE, text=True,
                            cwd=Path(__file__).resolve().parents[1])


@pytest.mark.timeout(60)
def test_watch_headless_serves_metrics_while_it_runs(tmp_path):
    from tests.prom_tools import free_port

    sim = world(tmp_path, DEMO_SCENARIOS, rounds=25)
    port = free_port()
    proc = clawwatch("watch", "--headless", "--json", "--seconds", "20", "--no-checkpoint",
                     "--from-start", "--state-dir", str(tmp_path / "state"), "--log",
                     str(tmp_path / "gateway.log"), "--metrics", f"127.0.0.1:{port}",
                     home=tmp_path, stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        levels = {}
        while time.monotonic() < deadline and len(levels) < 5:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                            timeout=2) as response:
                    got = samples(response.read().decode())
                levels = {labels["session_key"]: value
                          for labels, value in got.get("clawwatch_session_level", [])}
            except OSError:
                pass
            time.sleep(0.2)
        assert {KEYS[s] for s in LOOPING} <= set(levels), levels
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
        sim.close()
    assert proc.returncode == 0, err
    assert f"metrics at http://127.0.0.1:{port}/metrics" in err


@pytest.mark.timeout(60)
async def test_the_dashboard_serves_metrics_from_its_ingest_thread(tmp_path):
    from monitor.ui import build_app
    from monitor.ui.factory import DashboardOptions
    from tests.prom_tools import free_port

    sim = world(tmp_path, DEMO_SCENARIOS, rounds=25)
    hub = MetricsHub(None)
    server = MetricsServer(hub, f"127.0.0.1:{free_port()}")
    assert samples(scrape(server)).get("clawwatch_session_level", []) == []
    app = build_app(DashboardOptions(state_dir=str(tmp_path / "state"),
                                     log=str(tmp_path / "gateway.log")), metrics=hub)
    try:
        async with app.run_test(size=(160, 48)) as pilot:
            deadline = time.monotonic() + 30
            levels: dict = {}
            while time.monotonic() < deadline and not {KEYS[s] for s in LOOPING} <= set(levels):
                await pilot.pause(0.2)
                levels = {labels["session_key"]: value for labels, value in
                          samples(scrape(server)).get("clawwatch_session_level", [])}
            assert {KEYS[s] for s in LOOPING} <= set(levels), levels
            assert hub.monitor is app.ingest.monitor
    finally:
        server.close()
        sim.close()


@pytest.mark.parametrize(("args", "message"), [
    (("demo", "--headless", "--metrics", "nonsense"), "expected HOST:PORT"),
    (("demo", "--metrics", "nonsense"), "expected HOST:PORT"),
    (("--metrics", ":9464", "demo"), "name the host"),
])
def test_metrics_setup_errors_exit_2(tmp_path, args, message):
    proc = clawwatch(*args, home=tmp_path)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and message in err, (out, err)
    assert list(tmp_path.glob("clawwatch-demo-*")) == []

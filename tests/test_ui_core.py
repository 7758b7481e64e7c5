"""The dashboard's headless parts: snapshots, redaction, the ingest loop, the bell rules, themes.

Real sources over simulator-written state dirs; no Textual app is started here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_ui_scenes import SECRET, START, FixedClock, run_first_scan, scene_config, write_world

from monitor import redaction
from monitor.demo.sim.scenarios import Scenario, ScenarioEnv, ToolStep, make_scenario
from monitor.demo.sim.session import FakeClock
from monitor.demo.sim.simulator import Simulator
from monitor.detect.engine import DetectionEngine
from monitor.pipeline import Monitor
from monitor.records import FindingRecord
from monitor.redaction import REDACTED, clipping, format_arguments, redact, redact_text, shown_start
from monitor.session_state import SessionState
from monitor.snapshot import AlertEntry
from monitor.snapshot_builder import STALL_AFTER_SECONDS, SnapshotBuilder
from monitor.sources.sourceset import SourceSet
from monitor.ui.alerting import (
    BELL_MIN_INTERVAL,
    BELL_REPEAT_FLOOR,
    BURST_LONGEST,
    BURST_QUIET,
    AlertBook,
    CriticalBurst,
    burst_toast,
)
from monitor.ui.themes import REPO_THEMES, load_themes


@pytest.fixture(scope="module")
def world():
    made = write_world("core")
    yield made
    made.sim.close()


def built(world, clock=None, **kw) -> tuple[Monitor, SnapshotBuilder]:
    monitor = Monitor(SourceSet(state_dir=str(world.state_dir), log_path=str(world.log_path)),
                      DetectionEngine(scene_config()))
    builder = SnapshotBuilder(monitor, clock or world.clock, **kw)
    monitor.quiet = True
    while monitor.step() or builder.feed.backlog:
        pass
    builder.finish_scan()
    return monitor, builder


# ---------------------------------------------------------------- redaction


@pytest.mark.parametrize("text, secret", [
    ("curl -H 'Authorization: Bearer abcdefghijklmnop1234' x", "abcdefghijklmnop1234"),
    ("export OPENAI=sk-proj-ABCDEFGHIJKLMNOP", "sk-proj-ABCDEFGHIJKLMNOP"),
    ("git push https://bob:hunter2pass@github.com/x.git", "hunter2pass"),
    ("deploy --token=zzzz9999 --force", "zzzz9999"),
    ("API_KEY=live_1234567 ./run", "live_1234567"),
    ("gh auth login ghp_abcdefghijklmnopqrstuvwx", "ghp_abcdefghijklmnopqrstuvwx"),
    ("jwt eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0NTY3.SflKxwRJSMeKKF2QT4", "SflKxwRJSMeKKF2QT4"),
])
def test_secret_looking_text_is_redacted(text, secret):
    masked = redact_text(text)
    assert secret not in masked and REDACTED in masked


# Fragments of every secret shape, in the case variants (?i) matches, to build texts from.
SECRET_PIECES = st.sampled_from([
    "Bearer ", "BASIC ", "bas\u0131c ", "ba\u017fic ", "sk-", "pk-", "rk-", "ghp_", "xoxb-",
    "AKIA", "eyJ", ".", "api_key", "APIKEY", "ap\u0130", "token", "To\u212aen", "secret",
    "password", "pwd", "--token=", "--api-key ", "://bob:", "@", "=", ":", "'", '"', " ",
    "\n", "\t", "ABCDEFGHIJKLMNOP", "abcdefgh12345678", "0123456789", "x", "\u00e9",
    # the shapes added for issue 10: gitleaks prefixes, env names, -u, argv pairs
    "github_pat_", "sk_live_", "AIza", "AWS_SECRET_ACCESS_KEY", "_KEY", "secretKey", "-u ",
    "--user=", '["--token", "', "', '", "\\", "hooks.slack.com/services/", "glpat-",
])


def redact_ungated(text: str) -> str:
    for pattern, replacement, _ in redaction._SECRET_TEXT:
        text = pattern.sub(replacement, text)
    return text


@settings(max_examples=400, deadline=None)
@given(st.lists(SECRET_PIECES, max_size=30).map("".join))
def test_redaction_gated_by_markers_masks_what_every_regex_would(text):
    assert redact_text(text) == redact_ungated(text)


@settings(max_examples=300, deadline=None)
@given(st.lists(SECRET_PIECES, max_size=40).map("".join))
def test_a_long_text_is_redacted_as_far_as_it_is_shown(text):
    """A pane shows a text's start, whitespace collapsed; redacting that start (plus the
    slack) shows what redacting the whole collapsed text would."""
    limit, slack = 10, 120  # a slack longer than the longest minimal secret match (~105)
    original, clipping.REDACT_SLACK = clipping.REDACT_SLACK, slack
    try:
        start = shown_start(text, limit)
    finally:
        clipping.REDACT_SLACK = original
    whole = " ".join(text.split())
    assert whole.startswith(start) and len(start) >= min(len(whole), limit + slack)
    assert redact_text(start)[:limit] == redact_text(whole)[:limit]


def test_secret_named_keys_are_redacted_at_any_depth_and_the_rest_kept():
    value = redact({"command": "ls -la", "headers": {"Authorization": "x", "Accept": "json"},
                    "items": [{"password": "p"}, {"path": "/tmp"}], "apiKey": "k",
                    "count": 3})
    assert value == {"command": "ls -la", "headers": {"Authorization": REDACTED,
                                                      "Accept": "json"},
                     "items": [{"password": REDACTED}, {"path": "/tmp"}], "apiKey": REDACTED,
                     "count": 3}
    assert format_arguments({"command": "ls", "env": {"A": 1}}) == 'command=ls, env={"A": 1}'


def test_the_desktop_notification_is_redacted_and_printable():
    from monitor.ui.actions import AlertsAndActions

    written: list[str] = []
    app = SimpleNamespace(bell=lambda: None, terminal_notifications=True, is_headless=False,
                          _driver=SimpleNamespace(write=written.append),
                          post_message=lambda message: None)
    token = "ghp_" + "B" * 36
    AlertsAndActions.ring(app, f"agent:main:hook:{token}\x1b]0;x\x07: generic_repeat critical")
    assert len(written) == 2 and not any(token[:12] in osc for osc in written)
    assert all(osc.count("\x1b") == osc.count("\x07") == 1 for osc in written)
    assert all(REDACTED in osc and "generic_repeat critical" in osc for osc in written)


# ---------------------------------------------------------------- snapshots


def test_board_rows_carry_state_worst_finding_burn_and_idle_time(world):
    _, builder = built(world)
    snap = builder.build()
    rows = {r.key: r for r in snap.rows}
    hammer = rows["agent:main:night-hammer"]
    assert (hammer.state, hammer.worst_level, hammer.tool_calls) == ("looping", "critical", 25)
    assert hammer.tokens_in > 0 and hammer.burn_per_minute > 0
    assert 0 < hammer.budget_percent < 100
    assert hammer.idle_seconds == int(world.clock.now - hammer.last_ts)
    assert rows["agent:main:tidy"].state == "done"
    assert not snap.scanning and snap.scan_done == snap.scan_total > 0
    assert snap.top_burners[0].label == "agent:main:log-burner"


def test_state_follows_the_clock_and_the_index_status():
    state = SessionState("s1", key="k", status="running", last_ts=1000.0)
    assert SnapshotBuilder._state_of(state, [], 5.0) == "running"
    assert SnapshotBuilder._state_of(state, [], STALL_AFTER_SECONDS + 1) == "stalled"
    state.status = None
    assert SnapshotBuilder._state_of(state, [], 60.0) == "idle"
    state.status = "killed"
    assert SnapshotBuilder._state_of(state, [], 1.0) == "stopped"
    state.status = "timeout"
    assert SnapshotBuilder._state_of(state, [], 1.0) == "done"


def test_focus_detail_has_streaks_pairs_and_a_redacted_timeline(world):
    monitor, builder = built(world)
    ids = {s.key: s.session_id for s in monitor.sessions.values()}
    builder.focus = ids["agent:main:pingpong"]
    focus = builder.build().focus
    assert focus.label == "agent:main:pingpong"
    assert focus.pairs and focus.pairs[0].count >= 10 and focus.pairs[0].no_progress
    pingpong = next(s for s in focus.streaks if s.detector == "ping_pong")
    assert pingpong.count == focus.pairs[0].count
    builder.focus = ids["agent:main:night-hammer"]
    timeline = builder.build().focus.timeline
    assert [c.index for c in timeline] == list(range(1, 26))
    assert not timeline[0].repeats and all(c.repeats for c in timeline[1:])
    assert ("generic_repeat", "critical") in timeline[20].marks and not timeline[19].marks
    assert timeline[0].tokens_in and timeline[0].exit_code == 2
    builder.focus = ids["agent:main:deploy"]
    deploy = builder.build().focus.timeline
    assert all(SECRET not in c.arguments and REDACTED in c.arguments for c in deploy)


@pytest.mark.parametrize("engine", [True, False], ids=["engine-key", "plain-hash"])
def test_timeline_repeats_use_the_engines_volatile_masked_key(tmp_path, engine):
    """Outputs that differ only by a timestamp repeat by the engine's key (the one the
    detectors use); without an engine the plain hash sees them as all different."""
    sim = Simulator(tmp_path / "state", clock=FakeClock(START, tick=2.0))
    sim.add_session(make_scenario("drift", limit=6), key="agent:main:drift")
    sim.run(calls=6, rate=0)
    sim.close()
    monitor = Monitor(SourceSet(state_dir=str(tmp_path / "state")),
                      DetectionEngine(scene_config()) if engine else None)
    builder = SnapshotBuilder(monitor, FixedClock(START))
    monitor.step()
    builder.focus = next(iter(monitor.sessions))
    timeline = builder.build().focus.timeline
    assert len(timeline) == 6 and len({c.outcome for c in timeline}) == 6
    assert [c.repeats for c in timeline] == [False] + [engine] * 5


def test_secrets_in_keys_agents_and_tool_names_are_redacted_on_the_board(tmp_path):
    agent, token = "ops-sk-proj-" + "Z" * 30, "ghp_" + "B" * 36
    tool = f"exec {SECRET}"

    def steps(env: ScenarioEnv):
        while True:
            yield ToolStep(tool, {"command": "ls"}, "same")

    sim = Simulator(tmp_path / "state", clock=FakeClock(START, tick=2.0), agent_id=agent)
    sim.add_session(Scenario("leaky", "go", 1000, steps), key=f"agent:{agent}:hook:{token}")
    sim.run(calls=12, rate=0)
    sim.close()
    monitor = Monitor(SourceSet(state_dir=str(tmp_path / "state")),
                      DetectionEngine(scene_config()))
    builder = SnapshotBuilder(monitor, FixedClock(START))
    monitor.step()
    builder.finish_scan()
    builder.focus = next(iter(monitor.sessions))
    snap = builder.build()
    shown = [(row.label, row.agent) for row in snap.rows] + [
        (call.tool,) for call in snap.focus.timeline] + [
        (alert.tool or "",) for alert in snap.alerts] + [(snap.focus.label,)]
    assert snap.focus.timeline and snap.alerts
    assert not any(secret in text for texts in shown for text in texts
                   for secret in (agent, token, SECRET))
    assert snap.focus.timeline[0].tool == f"exec {REDACTED}"


def test_history_findings_become_acknowledged_alerts(world):
    monitor, builder = built(world)
    alerts = builder.build().alerts
    assert len(alerts) == sum(len(s.findings) for s in monitor.sessions.values())
    assert all(a.history for a in alerts)
    assert [a.ts for a in alerts] == sorted(a.ts for a in alerts)


def test_gateway_log_tail_is_bounded_and_in_order(world):
    _, builder = built(world)
    log = builder.build().log
    assert 0 < len(log) <= 1000
    assert [line.seq for line in log] == sorted(line.seq for line in log)
    assert {"INFO", "DEBUG"} <= {line.level for line in log}


def test_gateway_log_lines_are_shown_redacted(tmp_path):
    line = {"0": '{"subsystem":"gateway/ws"}', "1": "auth ok Bearer abcdefghijklmnop1234",
            "_meta": {"logLevelName": "INFO", "date": "2026-11-29T13:56:57.276Z"},
            "time": "2026-11-29T13:56:57.276+00:00"}
    log = tmp_path / "openclaw.log"
    log.write_text(json.dumps(line) + "\n")
    monitor = Monitor(SourceSet(log_path=str(log)), DetectionEngine(scene_config()))
    builder = SnapshotBuilder(monitor, FixedClock(0.0))
    monitor.step()
    [shown] = builder.build().log
    assert (shown.level, shown.subsystem) == ("INFO", "gateway/ws")
    assert shown.message == f"auth ok Bearer {REDACTED}"


def test_missing_inputs_show_with_their_hint(world):
    _, builder = built(world, expected=[("gateway log", str(world.root / "nope.log"),
                                         "pass --log FILE"), ("state dir", None, "pass --x")])
    lines = builder.build().sources
    bad = [s.text for s in lines if not s.ok]
    assert bad == [f"gateway log: missing {world.root / 'nope.log'} — pass --log FILE",
                   "state dir: not found — pass --x"]
    assert any(s.ok and "sqlite" in s.text for s in lines)


# ---------------------------------------------------------------- ingest loop


def test_first_scan_fills_the_board_progressively_then_goes_live(world):
    # Every step publishes: at the default pace, how many come depends on the machine's load
    # (test_first_scan_coalescing holds the pacing).
    published, loop = run_first_scan(world, timeout=10, scan_cost_factor=0.0)
    scanning = [s for s in published if s.scanning]
    assert len(scanning) >= 3
    assert [s.scan_done for s in scanning] == sorted(s.scan_done for s in scanning)
    assert any(0 < len(s.rows) < 6 for s in scanning) or scanning[0].scan_total == 0
    assert len(published[-1].rows) == 6 and published[-1].alerts
    assert loop.finished.is_set()


def test_a_loop_under_way_when_the_scan_ends_is_a_live_alert_and_goes_to_the_actions(world):
    """The first scan's findings are history, but for those of a session still under way
    that still hold: they arrive as live alerts (with the time they were raised) and are
    handed to the actions, as they would have been had the dashboard been running."""
    handed: list = []
    published, loop = run_first_scan(
        world, timeout=10, after_step=lambda monitor, records: handed.extend(records) or [])
    alerts = published[-1].alerts
    live = {(a.session_key, a.detector, a.level) for a in alerts if not a.history}
    assert ("agent:main:night-hammer", "generic_repeat", "critical") in live
    assert not any(key == "agent:main:tidy" for key, _, _ in live)
    hammer = next(s for s in loop.monitor.sessions.values()
                  if s.key == "agent:main:night-hammer")
    raised = max(f.ts for f in hammer.findings if f.detector == "generic_repeat")
    assert any(a.ts == raised and not a.history for a in alerts
               if a.detector == "generic_repeat" and a.level == "critical")
    superseded = [a for a in alerts if a.session_key == "agent:main:night-hammer"
                  and a.detector == "session_no_progress" and a.level == "warning"]
    assert superseded and all(a.history for a in superseded)
    caught_up = [r for r in handed if isinstance(r, FindingRecord)]
    assert caught_up and all(r.caught_up for r in caught_up)
    assert {(r.key, r.detector, r.level) for r in caught_up} == live
    assert loop.monitor.still_current(world.clock.now + 301) == []


# ---------------------------------------------------------------- the bell


def alert(seq, level="critical", key="k", history=False) -> AlertEntry:
    return AlertEntry(seq, 0.0, "finding", level, key, "s", "generic_repeat", 20, "exec", "m",
                      history)


def test_bell_rings_once_per_burst_and_repeats_only_at_a_bounded_rate():
    clock = FixedClock(100.0)
    book = AlertBook(clock, repeat_seconds=0.5)
    alerts = [alert(1), alert(2)]
    assert book.should_ring(2, alerts)
    assert not book.should_ring(1, alerts)
    clock.now += BELL_MIN_INTERVAL
    assert book.should_ring(1, alerts)
    clock.now += BELL_REPEAT_FLOOR - 0.1
    assert not book.should_ring(0, alerts)
    clock.now += 0.2
    assert book.should_ring(0, alerts)
    book.acknowledge(alerts, "k")
    clock.now += 10
    assert not book.should_ring(0, alerts)


def test_warnings_history_and_mute_never_ring_and_acks_are_per_session():
    clock = FixedClock(0.0)
    book = AlertBook(clock, repeat_seconds=5)
    assert book.take_new([alert(1, history=True), alert(2, "warning")]) == [alert(2, "warning")]
    assert book.unacked_critical([alert(1, history=True), alert(2, "warning")]) == []
    book.muted = True
    assert not book.should_ring(1, [alert(3)])
    alerts = [alert(3, key="a"), alert(4, key="b")]
    assert book.acknowledge(alerts, "a") == 1
    assert [a.session_key for a in book.unacked_critical(alerts)] == ["b"]
    assert book.acknowledge(alerts) == 1 and book.unacked_critical(alerts) == []


def test_a_burst_waits_for_quiet_but_not_past_its_longest_and_names_its_sessions():
    clock = FixedClock(0.0)
    burst = CriticalBurst(clock)
    assert burst.add([alert(1, key="a")]) == BURST_QUIET
    clock.now = BURST_LONGEST - 0.25
    assert burst.add([alert(2, key="b"), alert(3, key="a")]) == pytest.approx(0.25)
    clock.now = BURST_LONGEST + 1
    assert burst.add([alert(4, key="c"), alert(5, key="d")]) == 0.0
    criticals = burst.take()
    assert [a.seq for a in criticals] == [1, 2, 3, 4, 5] and burst.take() == []
    assert burst.add([alert(6)]) == BURST_QUIET
    title, message = burst_toast(criticals)
    assert title == "5 critical findings"
    assert message == "5 criticals: a, b, c and 1 more\ngeneric_repeat (5)"
    title, message = burst_toast([alert(7, key="solo")])
    assert (title, message) == ("1 critical finding", "1 critical: solo\ngeneric_repeat ×20: m")


def test_a_burst_toast_redacts_a_key_before_cutting_it():
    token = "ghp_" + "C" * 36
    key = "agent:main:hook:" + "x" * 55 + ":" + token
    _, message = burst_toast([alert(1, key=key)])
    assert "ghp_" not in message and ":«redact" in message


def test_live_alerts_of_a_secret_bearing_key_are_acknowledged_by_that_key(tmp_path):
    token = "ghp_" + "D" * 36
    key = f"agent:main:hook:{token}"
    monitor = Monitor(SourceSet(state_dir=str(tmp_path / "absent")),
                      DetectionEngine(scene_config()))
    builder = SnapshotBuilder(monitor, FixedClock(START))
    builder.finish_scan()
    record = FindingRecord(ts=None, key=key, session_id="s1", detector="generic_repeat",
                           level="critical", count=20, tool=f"exec {token}", at_call=20,
                           message=f"exec {token} repeated")
    [live] = builder.absorb([record])
    assert token not in live.message + (live.tool or "")
    book = AlertBook(FixedClock(START))
    alerts = builder.build().alerts
    assert book.acknowledge(alerts, key) == 1 and book.unacked_critical(alerts) == []


# ---------------------------------------------------------------- themes


def test_repo_themes_load_and_a_broken_file_is_reported(tmp_path):
    themes, errors = load_themes(REPO_THEMES)
    assert errors == [] and {"dark", "light", "night"} <= {t.name for t in themes}
    (tmp_path / "bad.yaml").write_text("name: bad\nprimary: '#12'\nsparkle: 1\n")
    (tmp_path / "worse.yaml").write_text(": : :\n")
    themes, errors = load_themes(tmp_path)
    assert [t.name for t in themes] == ["dark"]
    assert len(errors) == 2 and any("bad.yaml: unknown key(s): sparkle" in e for e in errors)


def test_importing_the_snapshot_module_loads_neither_textual_nor_rich():
    probe = ("import sys, monitor.snapshot, monitor.snapshot_builder, monitor.ui.alerting\n"
             "print(sorted(m for m in sys.modules if m.split('.')[0] in ('textual','rich')))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"

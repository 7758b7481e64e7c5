"""Which dated gateway log is the one to read: the profile's own family (gateways of two
profiles share ``/tmp/openclaw``), and a ``logging.file`` of the dated shape rolls to each
day's file as OpenClaw rolls it. The expected names are what OpenClaw 2026.9.6's
``resolveConfiguredLogFilePath`` gave under Node for each ``OPENCLAW_PROFILE``."""

from __future__ import annotations

import json
import os
import time

import pytest

from monitor.discovery import discover
from monitor.log_names import log_family, newest_log_in
from monitor.sources.sourceset import SourceSet

OPENCLAW_NAMES = {
    "work": "openclaw-work-2026-12-07.log",
    "Work_1": "openclaw--1work-01-2026-12-07.log",
    "a-b": "openclaw-a--b-2026-12-07.log",
    "default": "openclaw-2026-12-07.log",
    " Dev ": "openclaw--1dev-2026-12-07.log",
    "café": "openclaw-caf-2e9--2026-12-07.log",
    "x" * 230: "openclaw--317f5e6ed54a8109d97483057fd3282449a6f4ebaf8d567c66893e23bdfe5fd3b"
               "-2026-12-07.log",
    "\N{CRAB}": "openclaw--21f980--2026-12-07.log",
}


@pytest.mark.parametrize("profile", list(OPENCLAW_NAMES), ids=range(len(OPENCLAW_NAMES)))
def test_a_profiles_log_family_is_openclaws(profile):
    assert f"{log_family(profile)}-2026-12-07.log" == OPENCLAW_NAMES[profile]


def write_logs(directory, names_by_age: list[str]) -> None:
    """Empty logs, the last of ``names_by_age`` the newest."""
    directory.mkdir(parents=True, exist_ok=True)
    for age, name in enumerate(reversed(names_by_age)):
        path = directory / name
        path.write_text("")
        os.utime(path, (1_000_000 - age,) * 2)


def test_the_newest_log_of_the_profile_is_read_not_another_profiles(tmp_path):
    logs = tmp_path / "logs"
    write_logs(logs, ["openclaw-2026-12-06.log", "openclaw-2026-12-06.1.log",
                      "openclaw-work-2026-12-07.log", "openclaw-other.log"])
    env = {"CLAWWATCH_LOG_DIRS": str(logs), "HOME": str(tmp_path)}
    default = discover(state_dir=str(tmp_path), env=env)
    assert default.log_path == str(logs / "openclaw-2026-12-06.log") and default.log_is_rolling
    work = discover(state_dir=str(tmp_path), profile="work", env=env)
    assert work.log_path == str(logs / "openclaw-work-2026-12-07.log")
    assert work.log_family == "openclaw-work"
    assert discover(state_dir=str(tmp_path), env={**env, "OPENCLAW_PROFILE": "work"}
                    ).log_path == work.log_path


@pytest.mark.parametrize(("configured", "rolling"), [
    ("openclaw-2026-01-01.log", True), ("openclaw-YYYY-MM-DD.log", True),
    ("gateway.log", False), ("openclaw-work-2026-01-01.log", False)])
def test_a_configured_log_of_the_dated_shape_rolls_in_its_dir(tmp_path, configured, rolling):
    logs = tmp_path / "logs"
    write_logs(logs, [configured if "YYYY" not in configured else "openclaw-2026-01-01.log",
                      "openclaw-2026-12-06.log"])
    state = tmp_path / "state"
    state.mkdir()
    (state / "openclaw.json").write_text(json.dumps({"logging": {"file": str(logs / configured)}}))
    found = discover(state_dir=str(state), env={"HOME": str(tmp_path)})
    assert found.log_is_rolling is rolling
    if rolling:         # where the gateway writes now: the newest day's file
        assert (found.log_path, found.log_dirs) == (str(logs / "openclaw-2026-12-06.log"),
                                                     [str(logs)])
    else:
        assert found.log_path == str(logs / configured)


def test_a_rolling_configured_log_not_written_yet_is_todays(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    (state / "openclaw.json").write_text(json.dumps(
        {"logging": {"file": str(tmp_path / "openclaw-YYYY-MM-DD.log")}}))
    found = discover(state_dir=str(state), env={"HOME": str(tmp_path)})
    assert found.log_path == str(tmp_path / f"openclaw-{time.strftime('%Y-%m-%d')}.log")


def test_the_next_days_log_is_the_same_profiles(tmp_path):
    line = {"0": '{"subsystem":"gateway"}', "1": "day one", "_meta": {"logLevelName": "INFO"}}
    first = tmp_path / "openclaw-work-2026-11-28.log"
    first.write_text(json.dumps(line) + "\n")
    sources = SourceSet(log_path=str(first), rolling_log_dirs=(str(tmp_path),),
                        rolling_log_family="openclaw-work")
    assert [n.message for n in sources.poll() if hasattr(n, "trace_id")] == ["day one"]
    other = tmp_path / "openclaw-2026-11-29.log"               # the default profile's
    other.write_text(json.dumps({**line, "1": "not ours"}) + "\n")
    os.utime(other, (first.stat().st_mtime + 60,) * 2)
    sources.rescan()
    assert sources.log_path == str(first)
    second = tmp_path / "openclaw-work-2026-11-29.log"
    second.write_text(json.dumps({**line, "1": "day two"}) + "\n")
    os.utime(second, (first.stat().st_mtime + 30,) * 2)
    sources.rescan()
    assert [n.message for n in sources.poll() if hasattr(n, "trace_id")] == ["day two"]
    assert sources.log_path == str(second)
    sources.close()
    assert newest_log_in([str(tmp_path)]) == str(other)


def test_the_board_moves_to_the_next_days_log(tmp_path, monkeypatch):
    """The dashboard, left running overnight, reads the gateway's next day's file (it kept
    reading the day it started on), as ``watch`` does: built as the CLI builds it."""
    from monitor.act.api import DryRunController
    from monitor.config import Config
    from monitor.ui.factory import DashboardOptions, build_app

    logs = tmp_path / "logs"
    write_logs(logs, ["openclaw-2026-11-28.log", "openclaw-work-2026-11-28.log"])
    monkeypatch.setenv("CLAWWATCH_LOG_DIRS", str(logs))
    monkeypatch.setenv("HOME", str(tmp_path))
    app = build_app(DashboardOptions(state_dir=str(tmp_path / "no-state")), config=Config(),
                    controller=DryRunController())
    sources = app.ingest.monitor_factory().sources
    try:
        assert sources.log_path == str(logs / "openclaw-2026-11-28.log")
        write_logs(logs, ["openclaw-2026-11-28.log", "openclaw-work-2026-11-29.log",
                          "openclaw-2026-11-29.log"])
        sources.rescan()
        assert sources.log_path == str(logs / "openclaw-2026-11-29.log")
    finally:
        sources.close()


def test_names_no_gateway_can_have_next_add_no_log_to_follow(tmp_path):
    """Whoever can write the log dir (``/tmp/openclaw``) made every rescan, every 2 s, add
    one more log to follow, and hold its descriptor, by creating a newer file: one dated
    before yesterday or far ahead of today is no gateway's next log. Nor can a file of theirs
    kept the newest stop the gateway's next day's log from being read."""
    line = {"0": '{"subsystem":"gateway"}', "1": "today", "_meta": {"logLevelName": "INFO"}}
    day = 86400
    now = time.time()

    def dated(offset: float):
        return tmp_path / f"openclaw-{time.strftime('%Y-%m-%d', time.localtime(now + offset))}.log"

    today = dated(0)
    today.write_text(json.dumps(line) + "\n")
    sources = SourceSet(log_path=str(today), rolling_log_dirs=(str(tmp_path),))
    sources.poll()

    def followed() -> list[str]:
        return [s.path for s in sources.sources if s.kind == "gateway-log"]

    try:
        for n in range(1, 11):
            for offset in (-(n + 1) * day, (3 + n) * day, 400 * day):
                planted = dated(offset)
                planted.write_text("planted\n")
                os.utime(planted, (now + n,) * 2)
            sources.rescan()
            sources.poll()
        assert followed() == [str(today)]
        newest = dated(2 * day)
        newest.write_text("planted\n")
        os.utime(newest, (now + 100,) * 2)
        sources.rescan()
        sources.poll()
        tomorrow = dated(day)
        tomorrow.write_text(json.dumps({**line, "1": "tomorrow"}) + "\n")
        os.utime(tomorrow, (now + 20,) * 2)
        sources.rescan()
        assert [n.message for n in sources.poll() if hasattr(n, "trace_id")] == ["tomorrow"]
        assert followed() == [str(today), str(newest), str(tomorrow)]
    finally:
        sources.close()

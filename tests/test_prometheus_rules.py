"""deploy/: the alert rules pass ``promtool check rules`` and their unit tests (one for every
rule), name only metrics clawwatch exports, the Alertmanager example routes pages and
warnings apart, and the systemd unit verifies and runs a command line clawwatch accepts."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from monitor.cli import build_parser
from monitor.metrics import MetricsHub
from monitor.metrics_server import MetricsServer
from tests.prom_tools import tool
from tests.test_metrics import catch_up, monitor_of, samples, scrape, world

ROOT = Path(__file__).resolve().parents[1]
RULES = ROOT / "deploy" / "prometheus" / "clawwatch-rules.yml"
RULE_TESTS = ROOT / "deploy" / "prometheus" / "clawwatch-rules.test.yml"
ALERTMANAGER = ROOT / "deploy" / "alertmanager" / "example.yml"
UNIT = ROOT / "deploy" / "systemd" / "clawwatch.service"


#: The command a session alert suggests: the key single-quoted for the shell.
STOP_COMMAND = """`clawwatch stop '{{ $labels.session_key | reReplaceAll "'" "'\\\\''" }}'`"""


def rules() -> list[dict]:
    return [rule for group in yaml.safe_load(RULES.read_text())["groups"]
            for rule in group["rules"]]


def run(*command: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, timeout=60)


def test_promtool_checks_the_rules():
    result = run(tool("promtool"), "check", "rules", str(RULES))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(rules())} rules found" in result.stdout


def test_promtool_unit_tests_pass():
    result = run(tool("promtool"), "test", "rules", RULE_TESTS.name, cwd=RULE_TESTS.parent)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_every_rule_is_unit_tested_firing_and_is_annotated():
    tested = {case["alertname"] for test in yaml.safe_load(RULE_TESTS.read_text())["tests"]
              for case in test.get("alert_rule_test", []) if case.get("exp_alerts")}
    names = [rule["alert"] for rule in rules()]
    assert len(names) == len(set(names))
    assert set(names) == tested
    for rule in rules():
        assert rule["labels"]["severity"] in ("page", "warning"), rule["alert"]
        assert rule["annotations"]["summary"] and rule["annotations"]["description"]
        if "session_key" in rule["expr"] or "clawwatch_session" in rule["expr"]:
            assert STOP_COMMAND in rule["annotations"]["description"], rule["alert"]
    assert {"ClawwatchSessionCritical", "ClawwatchSessionOverBudget", "ClawwatchBurnRateHigh",
            "ClawwatchSourceErrors", "ClawwatchSourceStalled", "ClawwatchExporterDown"} \
        <= set(names)
    down = next(r for r in rules() if r["alert"] == "ClawwatchExporterDown")
    assert down["expr"] == 'up{job="clawwatch"} == 0'


def test_a_suggested_stop_command_is_the_session_key_as_one_shell_word():
    """A session key is data; the descriptions used to paste it bare into the command they
    suggest, so a key holding ``;``, ``$(…)`` or a quote ran a command of its author's when
    the suggestion was pasted into a shell. The unit tests render a key with all three
    (promtool checks the text); here that text is read as the shell would."""
    cases = [alert for test in yaml.safe_load(RULE_TESTS.read_text())["tests"]
             for case in test.get("alert_rule_test", [])
             for alert in case.get("exp_alerts") or []]
    commands = [(alert["exp_labels"]["session_key"], found.group(1)) for alert in cases
                if (found := re.search(r"`(clawwatch stop [^`]*)`",
                                       alert["exp_annotations"]["description"]))]
    assert "agent:main:it's $(id);x" in dict(commands)
    for key, command in commands:
        assert shlex.split(command) == ["clawwatch", "stop", key]


def test_the_rules_name_only_metrics_clawwatch_exports(tmp_path):
    sim = world(tmp_path, [("hammer", "agent:main:a"), ("burner", "agent:main:b")], rounds=25)
    hub = MetricsHub(monitor_of(tmp_path))
    server = MetricsServer(hub, "127.0.0.1:0")
    try:
        catch_up(hub)
        exported = set(samples(scrape(server)))
    finally:
        server.close()
        hub.monitor.sources.close()
        sim.close()
    used = {name for rule in rules() for name in re.findall(r"clawwatch_[a-z_]+", rule["expr"])}
    assert used and used <= exported, used - exported


def test_the_alertmanager_example_is_valid_and_routes_pages_apart():
    amtool = tool("amtool")
    result = run(amtool, "check-config", str(ALERTMANAGER))
    assert result.returncode == 0, result.stdout + result.stderr
    for labels, receiver in ((("severity=page", "alertname=ClawwatchSessionCritical"),
                              "ntfy-pages"),
                             (("severity=warning", "alertname=ClawwatchBurnRateHigh"),
                              "slack-warnings")):
        routed = run(amtool, "config", "routes", "test", f"--config.file={ALERTMANAGER}",
                     *labels)
        assert routed.returncode == 0, routed.stdout + routed.stderr
        assert routed.stdout.strip() == receiver
    text = ALERTMANAGER.read_text()
    assert "example.com" in text and "hooks.slack.com" not in text     # no real hosts


def unit_exec_start() -> str:
    line = next(line for line in UNIT.read_text().splitlines()
                if line.startswith("ExecStart="))
    return line.removeprefix("ExecStart=")


def test_the_service_runs_a_command_line_clawwatch_accepts():
    argv = shlex.split(unit_exec_start())
    assert argv[0].endswith("/clawwatch")
    args = build_parser().parse_args(argv[1:])
    assert args.command == "watch" and args.headless and args.metrics.startswith("127.0.0.1:")
    text = UNIT.read_text()
    for option in ("Restart=on-failure", "NoNewPrivileges=yes", "ProtectSystem=strict",
                   "ReadWritePaths=/var/lib/clawwatch", "StateDirectory=clawwatch"):
        assert option in text
    assert "PrivateTmp=yes" not in text          # the gateway log lives in /tmp/openclaw/


def test_systemd_analyze_verifies_the_service(tmp_path):
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed")
    clawwatch = Path(sys.executable).with_name("clawwatch")
    if not clawwatch.exists():
        pytest.skip(f"{clawwatch} is not installed (pip install -e .)")
    unit = tmp_path / "clawwatch.service"
    unit.write_text(UNIT.read_text().replace("/opt/clawwatch/.venv/bin/clawwatch",
                                             str(clawwatch)))
    result = run(analyze, "verify", str(unit))
    assert result.returncode == 0 and not result.stderr.strip(), result.stderr

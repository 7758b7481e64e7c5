"""Configuration: the documented reference file, layering, per-agent merge, clamps, errors."""

from __future__ import annotations

import dataclasses
import io
import re
import subprocess
import sys
from pathlib import Path

import pytest

from monitor.config import Config, ConfigError, check_config_main, load_config
from monitor.config.sections import DETECTORS

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "config.yaml"


def write(tmp_path: Path, text: str, name: str = "clawwatch.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def leaf_keys(value, prefix: str = "") -> list[tuple[str, bool]]:
    """(dotted key, whether it is a leaf) for every field of the config."""
    keys = []
    for item in dataclasses.fields(value):
        if item.name.startswith("_") or item.name in ("source", "warnings"):
            continue
        child = getattr(value, item.name)
        dotted = f"{prefix}{item.name}"
        keys.append((dotted, not dataclasses.is_dataclass(child)))
        if dataclasses.is_dataclass(child):
            keys.extend(leaf_keys(child, dotted + "."))
    return keys


def test_reference_file_is_exactly_the_defaults():
    config = load_config(str(REFERENCE), env={})
    defaults = Config()
    for section in ("detection", "budgets", "actions", "alerts", "ui", "gateway"):
        assert getattr(config, section) == getattr(defaults, section), section
    assert config.warnings == ()


def test_reference_file_documents_every_key_with_a_comment():
    lines = REFERENCE.read_text().splitlines()
    for dotted, leaf in leaf_keys(Config()):
        name = dotted.rsplit(".", 1)[-1]
        matches = [line for line in lines if re.match(rf"\s*{re.escape(name)}:", line)]
        assert matches, f"{dotted} is not in config.yaml"
        assert not leaf or any("#" in line for line in matches), f"{dotted} has no comment"
    for detector in DETECTORS:
        assert any(re.match(rf"\s+{detector}: true\s+#", line) for line in lines), detector


def test_contract_keys_and_defaults():
    config = Config()
    assert config.detection.enabled is True
    assert (config.detection.history_size, config.detection.warning_threshold,
            config.detection.critical_threshold,
            config.detection.global_circuit_breaker_threshold) == (30, 10, 20, 30)
    assert config.budgets.session_tokens is None
    assert (config.actions.mode, config.actions.on_critical, config.actions.audit_log) == (
        "off", "alert", None)


def test_layers_file_then_environment(tmp_path):
    path = write(tmp_path, "detection:\n  warning_threshold: 7\n  critical_threshold: 40\n")
    env = {"CLAWWATCH_DETECTION__CRITICAL_THRESHOLD": "25",
           "CLAWWATCH_DETECTION__BURN_RATE__WINDOW_SECONDS": "120",
           "CLAWWATCH_BUDGETS__SESSION_TOKENS": "500000",
           "CLAWWATCH_ACTIONS__MODE": "dry-run",
           "CLAWWATCH_CONFIG": "/ignored/because/--config/wins.yaml",
           "OTHER_VAR": "x"}
    config = load_config(path, env=env)
    assert config.source == path
    assert config.detection.warning_threshold == 7
    assert config.detection.critical_threshold == 25
    assert config.detection.burn_rate.window_seconds == 120
    assert config.budgets.session_tokens == 500000
    assert config.actions.mode == "dry-run"


def test_file_discovery_order(tmp_path):
    named = write(tmp_path, "ui: {theme: from-env-var}\n", "named.yaml")
    home = tmp_path / "home"
    (home / ".config" / "clawwatch").mkdir(parents=True)
    (home / ".config" / "clawwatch" / "config.yaml").write_text("ui: {theme: from-home}\n")
    assert load_config(None, env={"CLAWWATCH_CONFIG": named, "HOME": str(home)}
                       ).ui.theme == "from-env-var"
    assert load_config(None, env={"HOME": str(home)}).ui.theme == "from-home"
    empty_home = tmp_path / "nobody"
    empty_home.mkdir()
    config = load_config(None, env={"HOME": str(empty_home)})
    assert config.ui.theme == "dark"
    assert config.source == "(built-in defaults)"
    with pytest.raises(ConfigError) as missing:
        load_config(None, env={"CLAWWATCH_CONFIG": str(tmp_path / "gone.yaml")})
    assert missing.value.errors == [f"{tmp_path / 'gone.yaml'}:(file): no such file"]


def test_per_agent_overrides_merge_field_by_field(tmp_path):
    path = write(tmp_path, """
detection:
  warning_threshold: 8
  detectors: {ping_pong: false, burn_rate: false}
  burn_rate: {window_seconds: 60, min_messages: 5}
budgets: {session_tokens: 1000}
agents:
  ops:
    detection:
      critical_threshold: 12
      detectors: {ping_pong: true}
      burn_rate: {min_messages: 2}
    budgets: {agent_tokens: 9000}
  quiet:
    detection: {enabled: false}
""")
    config = load_config(path, env={})
    ops = config.for_agent("ops")
    assert ops.detection.warning_threshold == 8
    assert ops.detection.critical_threshold == 12
    assert ops.detection.detectors.ping_pong is True
    assert ops.detection.detectors.burn_rate is False
    assert (ops.detection.burn_rate.window_seconds, ops.detection.burn_rate.min_messages) == (
        60, 2)
    assert (ops.budgets.session_tokens, ops.budgets.agent_tokens) == (1000, 9000)
    assert config.for_agent("quiet").detection.enabled is False
    assert config.for_agent("someone-else") is config
    assert config.detection.detectors.ping_pong is False


def test_thresholds_are_clamped_with_a_warning(tmp_path):
    path = write(tmp_path, "detection:\n  warning_threshold: 25\n  critical_threshold: 20\n"
                           "  global_circuit_breaker_threshold: 20\n"
                           "  session_no_progress: {warning_threshold: 9, critical_threshold: 9}\n")
    config = load_config(path, env={})
    det = config.detection
    assert (det.warning_threshold, det.critical_threshold,
            det.global_circuit_breaker_threshold) == (25, 26, 27)
    assert det.session_no_progress.critical_threshold == 10
    assert f"{path}:detection.critical_threshold: 20 is not above warning_threshold (25); " \
           "using 26" in config.warnings
    out = io.StringIO()
    assert check_config_main(path, env={}, out=out) == 0
    assert "warning: " in out.getvalue() and out.getvalue().endswith(f"OK: {path}\n")


def test_every_error_is_reported_as_file_key_message(tmp_path):
    path = write(tmp_path, """
detection:
  warning_threshold: -3
  critical_threshold: "x"
  histroy_size: 30
  detectors: {ping_pong: maybe}
  normalisation: {extra_patterns: ["(unclosed"]}
budgets: {session_tokens: 1.5, reset_time: "25:00"}
actions: {mode: sometimes, triggers: {nope: stop, "ping_pong:critical": explode}}
alerts: {webhooks: [{retries: true}]}
agents:
  main: {detection: {enabled: "no"}, ui: {theme: x}}
colours: {}
""")
    env = {"CLAWWATCH_DETECTION__WARNING_THRESHOLD": "abc"}
    with pytest.raises(ConfigError) as caught:
        load_config(path, env=env)
    errors = caught.value.errors
    expected_keys = [
        "detection.warning_threshold", "detection.critical_threshold", "detection.histroy_size",
        "detection.detectors.ping_pong", "detection.normalisation.extra_patterns[0]",
        "budgets.session_tokens", "budgets.reset_time", "actions.mode", "actions.triggers.nope",
        "actions.triggers.ping_pong:critical", "alerts.webhooks[0].retries",
        "alerts.webhooks[0].url", "agents.main.detection.enabled", "agents.main.ui", "colours",
    ]
    for key in expected_keys:
        assert any(e.startswith(f"{path}:{key}: ") for e in errors), key
    assert "$CLAWWATCH_DETECTION__WARNING_THRESHOLD:detection.warning_threshold: must be an " \
           "integer, got 'abc'" in errors
    assert f"{path}:detection.histroy_size: unknown key (did you mean 'history_size'?)" in errors
    assert f"{path}:detection.warning_threshold: must be >= 1, got -3" in errors
    assert len(errors) == len(expected_keys) + 1
    out = io.StringIO()
    assert check_config_main(path, env=env, out=out) == 2
    assert out.getvalue().splitlines() == errors


#: Variables in clawwatch's namespace that are no setting: never warned about.
NOT_SETTINGS = {"CLAWWATCH_CONFIG": "", "CLAWWATCH_THEMES": "/x",
                "CLAWWATCH_DEMO_GATEWAY_TOKEN": "t", "CLAWWATCH_E2E_HOME": "/x",
                "CLAWWATCH_FUZZ_LONG": "1"}


@pytest.mark.parametrize(("name", "meant"), [
    ("CLAWWATCH_ACTIONS_MODE", "CLAWWATCH_ACTIONS__MODE"),
    ("CLAWWATCH_DETECTON_ENABLED", "CLAWWATCH_DETECTION__ENABLED"),
    ("CLAWWATCH_METRICS_LISTEN", "CLAWWATCH_METRICS__LISTEN"),
])
def test_a_mistyped_setting_variable_is_warned_about_with_the_one_it_likely_meant(name,
                                                                                   meant):
    env = {name: "auto", **NOT_SETTINGS}
    config = load_config(None, env=env)
    assert config.actions.mode == "off"
    (warning,) = config.warnings
    assert warning.startswith(f"${name}:(name): names no setting and is ignored")
    assert warning.endswith(f"(did you mean ${meant}?)")
    out = io.StringIO()
    assert check_config_main(None, env=env, out=out) == 0
    assert out.getvalue().startswith(f"warning: ${name}:")


def test_a_variable_in_a_sections_name_but_no_setting_is_warned_about():
    (warning,) = load_config(None, env={"CLAWWATCH_UI_COLOURS": "x"}).warnings
    assert warning.startswith("$CLAWWATCH_UI_COLOURS:(name): names no setting")
    assert "CLAWWATCH_<SECTION>__<KEY>" in warning


@pytest.mark.parametrize("name", ["CLAWWATCH_DETECTION__", "CLAWWATCH_DETECTION____ENABLED"])
def test_a_setting_variable_with_an_empty_part_is_an_error(name):
    with pytest.raises(ConfigError) as caught:
        load_config(None, env={name: "x"})
    (error,) = caught.value.errors
    assert error.startswith(f"${name}:(name): names no setting")


@pytest.mark.parametrize("url", ["ws://127.0.0.1:99999", "http://gateway:18789", "garbage"])
def test_a_gateway_url_no_client_can_connect_to_is_an_error(tmp_path, url):
    path = write(tmp_path, f"gateway: {{url: '{url}'}}\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path, env={})
    (error,) = caught.value.errors
    assert error.startswith(f"{path}:gateway.url: bad gateway URL '{url}': ")


@pytest.mark.parametrize("url", [
    "not a url at all s3cret", "file:///etc/s3cret", "http+unix://%2Fs3cret.sock/x",
    "http://[::1/s3cret", "http://127.0.0.1:99999/s3cret", "ftp://example.com/s3cret",
    "http:///s3cret", "https://host/s3cret path"])
def test_a_webhook_url_nothing_can_post_to_is_an_error_that_keeps_its_secret(tmp_path, url):
    """It passed the check and then failed on every alert; its path is often the hook's
    secret, so the error does not show it."""
    path = write(tmp_path, f"alerts: {{webhooks: [{{url: '{url}'}}]}}\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path, env={})
    (error,) = caught.value.errors
    assert error.startswith(f"{path}:alerts.webhooks[0].url: ") and "s3cret" not in error
    good = "https://hooks.slack.com/services/T0/B0/s3cret"
    path = write(tmp_path, f"alerts: {{webhooks: [{{url: '{good}'}}]}}\n", "good.yaml")
    assert load_config(path, env={}).alerts.webhooks[0].url == good


def test_unquoted_off_and_invalid_yaml(tmp_path):
    assert load_config(write(tmp_path, "actions:\n  mode: off\n"), env={}).actions.mode == "off"
    broken = write(tmp_path, "detection:\n  enabled: [true\n", "broken.yaml")
    with pytest.raises(ConfigError) as caught:
        load_config(broken, env={})
    (error,) = caught.value.errors
    assert error.startswith(f"{broken}:(yaml): invalid YAML at line ")


def test_config_check_command(tmp_path):
    good = subprocess.run([sys.executable, "-m", "monitor", "config", "check", str(REFERENCE)],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert (good.returncode, good.stdout.strip()) == (0, f"OK: {REFERENCE}")
    bad = write(tmp_path, "detection: {history_size: -1}\n")
    result = subprocess.run([sys.executable, "-m", "monitor", "config", "check", bad],
                            capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert result.returncode == 2
    assert f"{bad}:detection.history_size: must be >= 1, got -1" in result.stdout + result.stderr
    assert "Traceback" not in result.stderr

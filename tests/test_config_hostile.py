"""A config loader that cannot be knocked over (issue 10 item 7).

Hostile config files and ``$CLAWWATCH_*`` values: alias bombs, deep nesting, invalid
UTF-8, duplicate keys, huge or non-finite numbers, FIFOs and devices, oversized files.
Each is refused quickly and cheaply as ``FILE:key: message`` lines (``ConfigError``; exit
code 2 from the CLI), never a traceback, a hang or gigabytes of memory; whatever loads
has every number finite and within its field's bounds.
"""

from __future__ import annotations

import dataclasses
import math
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import typing
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import monitor
from monitor.config import Config, ConfigError, load_config
from monitor.config.sections import SECTIONS

HAMMER = Path(__file__).resolve().parent / "fixtures" / "oc-hammer.jsonl"
PACKAGE_ROOT = Path(monitor.__file__).resolve().parent.parent   # subprocesses run this code


def write(tmp_path: Path, content: str | bytes, name: str = "hostile.yaml") -> str:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return str(path)


def errors_of(path: str, env: dict | None = None) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_config(path, env=env or {})
    return caught.value.errors


def run_clawwatch(*args: str, home: Path, env: dict | None = None, timeout: float = 60
                  ) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("OPENCLAW_", "CLAWWATCH_")) or k == "CLAWWATCH_LOG_DIRS"}
    clean.update(HOME=str(home), TMPDIR=str(home), XDG_STATE_HOME=str(home / "state"),
                 PYTHONPATH=str(PACKAGE_ROOT), **(env or {}))
    return subprocess.run([sys.executable, "-m", "monitor", *args], capture_output=True,
                          text=True, env=clean, timeout=timeout, cwd=PACKAGE_ROOT)


def laughs(levels: int = 9, width: int = 9) -> str:
    """The billion-laughs bomb inside a real field: ``width ** levels`` strings."""
    lines = ["detection:", "  normalisation:", "    volatile_keys:",
             "      - &a0 [" + ", ".join(["lol"] * width) + "]"]
    for level in range(1, levels):
        lines.append(f"      - &a{level} [" + ", ".join([f"*a{level - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------- alias bombs

BOMB_CHILD = textwrap.dedent("""
    import resource, sys, time
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
    from monitor.cli import main
    start = time.monotonic()
    code = main(sys.argv[1:])
    # VmHWM, not ru_maxrss: getrusage keeps the peak of the forking parent (pytest) across
    # exec, while the high-water mark belongs to this process's own memory.
    with open("/proc/self/status") as status:
        used = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    print(f"RESULT {code} {time.monotonic() - start:.3f} {used}", file=sys.stderr)
""")


@pytest.mark.parametrize("command", ["config-check", "replay"])
def test_billion_laughs_is_refused_in_a_blink_and_a_few_mb(tmp_path, command):
    """In a 1 GB address space: exit 2 naming the key, within seconds, RSS under 100 MB."""
    path = write(tmp_path, laughs())
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    shutil.copy(HAMMER, sessions / "s.jsonl")
    argv = ["config", "check", path] if command == "config-check" else \
        ["replay", "--config", path, str(sessions)]
    started = time.monotonic()
    try:
        result = subprocess.run([sys.executable, "-c", BOMB_CHILD, *argv], capture_output=True,
                                text=True, cwd=PACKAGE_ROOT, timeout=30,
                                env={**os.environ, "PYTHONPATH": str(PACKAGE_ROOT),
                                     "HOME": str(tmp_path)})
    except subprocess.TimeoutExpired:
        pytest.fail("the alias bomb was still being expanded after 30 s")
    elapsed = time.monotonic() - started
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    code, seconds, max_rss_kb = result.stderr.split("RESULT ")[1].split()
    assert int(code) == 2
    assert f"{path}:detection.normalisation.volatile_keys[" in result.stdout + result.stderr
    assert "more than 20000 YAML nodes" in result.stdout + result.stderr
    assert float(seconds) < 1.0 and elapsed < 10
    assert int(max_rss_kb) < 100 * 1024


@pytest.mark.parametrize("text, message", [
    # a bomb of mapping merges instead of lists
    ("a0: &a0 {k0: 1, k1: 1, k2: 1, k3: 1, k4: 1, k5: 1, k6: 1, k7: 1, k8: 1, k9: 1}\n"
     + "".join(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]\n" for i in range(1, 9)),
     "more than 20000 YAML nodes"),
    # a 600 KB string repeated by aliases: few nodes, but 2 MB+ of text
    ("ui:\n  theme: &t " + "x" * 600_000 + "\ndetection:\n  normalisation:\n"
     "    volatile_keys: [*t, *t, *t, *t]\n", "characters of values"),
    # many small aliases
    ("x: &x 1\ny: [" + ", ".join(["*x"] * 101) + "]\n", "more than 100 alias references"),
    # an alias inside the node it names: an infinite structure
    ("detection:\n  normalisation:\n    volatile_keys: &loop [a, *loop]\n", "recursive"),
], ids=["merge-bomb", "text-bomb", "many-aliases", "recursive"])
def test_other_alias_bombs_are_refused_fast(tmp_path, text, message):
    path = write(tmp_path, text)
    started = time.monotonic()
    errors = errors_of(path)
    assert time.monotonic() - started < 1.0
    assert len(errors) == 1 and errors[0].startswith(f"{path}:") and message in errors[0]
    assert " at line " in errors[0]


def test_reasonable_anchors_and_merge_keys_still_work(tmp_path):
    """A guard against refusing too much (passes before and after the bounds)."""
    path = write(tmp_path, """
detection:
  session_no_progress: &strict {warning_threshold: 3, critical_threshold: 6}
  turn_failures: *strict
agents:
  a: &quiet {detection: {enabled: false}}
  b: *quiet
  c: {detection: {<<: {history_size: 50, enabled: false}, enabled: true}}
""")
    config = load_config(path, env={})
    assert config.detection.turn_failures.critical_threshold == 6
    assert config.for_agent("b").detection.enabled is False
    assert config.for_agent("c").detection.history_size == 50
    assert config.for_agent("c").detection.enabled is True


# ---------------------------------------------------------------- bytes and structure

@pytest.mark.parametrize("content", [
    b"ui:\n  theme: \"\xff\xfe\"\n",                 # not UTF-8 at all
    b"ui:\n  theme: caf\xc3\n",                       # a truncated sequence
    b"ui:\n  theme: \xed\xa0\x80\n",                  # an encoded surrogate
    b"ui:\n  theme: \xc0\xaf\n",                      # an overlong encoding
    "ui:\n  theme: dark\n".encode("utf-16"),          # another encoding altogether
])
def test_invalid_utf8_is_a_config_error_naming_the_line(tmp_path, content):
    path = write(tmp_path, content)
    (error,) = errors_of(path)
    assert error.startswith(f"{path}:(file): not valid UTF-8: byte 0x")
    assert " at line " in error


def test_a_utf8_bom_is_fine(tmp_path):
    """A guard: strict UTF-8 still allows the byte-order mark."""
    path = write(tmp_path, "\ufeffui:\n  theme: night\n".encode())
    assert load_config(path, env={}).ui.theme == "night"


@pytest.mark.parametrize("text", [
    "detection:\n  normalisation:\n    volatile_keys: " + "[" * 10_000 + "]" * 10_000 + "\n",
    "detection: " + "{a: " * 10_000 + "1" + "}" * 10_000 + "\n",
    "ui:\n  theme:\n    " + "- " * 10_000 + "x\n",
    "".join(" " * level + f"k{level}:\n" for level in range(1100)) + " " * 1100 + "x\n",
], ids=["flow-lists", "flow-maps", "block-lists", "block-maps"])
def test_deep_nesting_is_refused(tmp_path, text):
    path = write(tmp_path, text)
    started = time.monotonic()
    (error,) = errors_of(path)
    assert time.monotonic() - started < 1.0
    assert error.startswith(f"{path}:") and "nested more than 64 levels deep" in error


def test_a_file_over_1_mib_is_refused_unread(tmp_path):
    path = write(tmp_path, "# padding\n" * 110_000 + "ui: {theme: dark}\n")
    (error,) = errors_of(path)
    assert error.startswith(f"{path}:(file): too large (") and "at most 1048576" in error


# ---------------------------------------------------------------------------- numbers

@pytest.mark.parametrize("snippet, key, message", [
    ("detection: {history_size: 99999999999999999999999999}", "detection.history_size",
     "must be <= 10000"),
    ("detection: {history_size: 9223372036854775808}", "detection.history_size",
     "must be <= 10000"),
    ("budgets: {agent_tokens: 9223372036854775807}", "budgets.agent_tokens",
     "must be <= 1000000000000000"),
    ("budgets: {session_tokens: 1000000000000000000000}", "budgets.session_tokens",
     "must be <= 1000000000000000"),
    ("actions: {cooldown_seconds: " + "9" * 400 + "}", "actions.cooldown_seconds",
     "must be <= "),
    ("alerts: {webhooks: [{url: 'http://x', retries: 100000000000000000000}]}",
     "alerts.webhooks[0].retries", "must be <= 100"),
    ("detection: {burn_rate: {window_seconds: 100000000000000}}",
     "detection.burn_rate.window_seconds", "must be <= "),
    ("detection: {hung_process: {critical_seconds: 18446744073709551616}}",
     "detection.hung_process.critical_seconds", "must be <= "),
    ("detection: {history_size: " + "9" * 5000 + "}", "(yaml)", "cannot read"),
], ids=lambda v: v[:40] if isinstance(v, str) else None)
def test_huge_integers_are_out_of_range(tmp_path, snippet, key, message):
    path = write(tmp_path, snippet + "\n")
    errors = errors_of(path)
    assert any(e.startswith(f"{path}:{key}: ") and message in e for e in errors), errors
    assert all(len(e) < 1100 for e in errors)


def test_a_clamp_never_pushes_a_value_past_its_bound(tmp_path):
    """critical is raised above warning: at warning's maximum there is no room (an error,
    where the old clamp made critical_threshold 1000001)."""
    path = write(tmp_path, "detection: {warning_threshold: 1000000}\n"
                           "agents: {x: {detection: {context_bloat: {warning_factor: 1000000,"
                           " critical_factor: 8}}}}\n")
    errors = errors_of(path)
    assert f"{path}:detection.warning_threshold: 1000000 leaves no room for " \
           "critical_threshold above it (at most 1000000)" in errors
    assert f"{path}:agents.x.detection.context_bloat.warning_factor: 1000000.0 leaves no " \
           "room for critical_factor above it (at most 1000000)" in errors


FINITE_FIELDS = [
    ("actions", "cooldown_seconds"), ("actions", "kill_grace_seconds"),
    ("alerts", "bell_repeat_seconds"), ("budgets", "warning_percent"),
    ("budgets", "critical_percent"), ("detection.burn_rate", "eta_warning_minutes"),
    ("detection.burn_rate", "eta_critical_minutes"), ("detection.context_bloat", "warning_factor"),
    ("detection.context_bloat", "critical_factor"), ("detection.context_bloat", "max_efficiency"),
]


def nest(dotted: str, leaf: str, value: str) -> str:
    parts = [*dotted.split("."), leaf]
    return "".join("{" + p + ": " for p in parts) + value + "}" * len(parts)


@pytest.mark.parametrize("value", [".inf", "-.inf", ".nan", ".NaN", "+.inf", "1.0e+999"])
@pytest.mark.parametrize("section, leaf", FINITE_FIELDS)
def test_non_finite_durations_and_thresholds_are_refused(tmp_path, section, leaf, value):
    path = write(tmp_path, nest(section, leaf, value) + "\n")
    (error,) = errors_of(path)
    assert error.startswith(f"{path}:{section}.{leaf}: must be a finite number, got ")


def test_non_finite_webhook_timeout_and_integer_fields(tmp_path):
    path = write(tmp_path, "alerts: {webhooks: [{url: 'http://x', timeout_seconds: .nan}]}\n"
                           "detection: {history_size: .inf}\n")
    errors = errors_of(path)
    assert f"{path}:alerts.webhooks[0].timeout_seconds: must be a finite number, got nan" \
        in errors
    assert f"{path}:detection.history_size: must be an integer, got inf" in errors


@pytest.mark.parametrize("name, values", [
    # YAML 1.1 reads 1e999 and nan as strings (refused as such before, too); .nan, .inf and
    # 1.0e+999 are floats that used to pass
    ("CLAWWATCH_ACTIONS__COOLDOWN_SECONDS", ["1e999", "nan", ".nan", "1.0e+999", ".inf"]),
    ("CLAWWATCH_BUDGETS__WARNING_PERCENT", [".inf", ".NaN", "1e999"]),
    ("CLAWWATCH_DETECTION__CONTEXT_BLOAT__CRITICAL_FACTOR", ["-.inf", "nan", ".nan"]),
    ("CLAWWATCH_AGENTS__MAIN__ACTIONS__KILL_GRACE_SECONDS", [".nan", "1e999", ".inf"]),
    ("CLAWWATCH_DETECTION__HISTORY_SIZE", ["99999999999999999999999999", ".inf"]),
    ("CLAWWATCH_BUDGETS__SESSION_TOKENS", ["1" + "0" * 30, "1e999"]),
], ids=lambda v: v if isinstance(v, str) else None)
def test_environment_numbers_get_the_same_checks(tmp_path, name, values):
    dotted = ".".join(p.lower() for p in name[len("CLAWWATCH_"):].split("__"))
    for value in values:
        errors = errors_of(None, env={name: value, "HOME": str(tmp_path)})
        assert len(errors) == 1 and errors[0].startswith(f"${name}:{dotted}: must be "), \
            (value, errors)


@pytest.mark.parametrize("value, message", [
    ("{" * 10_000 + "}" * 10_000, "nested more than 64 levels deep"),
    ("[&a [" + ", ".join(["x"] * 250) + "], " + ", ".join(["*a"] * 99) + "]",
     "more than 20000 YAML nodes"),
    ("{x: 1, x: 2}", "duplicate key"),
], ids=["deep", "bomb", "duplicate"])
def test_environment_values_are_bounded_like_the_file(tmp_path, value, message):
    name = "CLAWWATCH_DETECTION__NORMALISATION__VOLATILE_KEYS"
    env = {name: value, "HOME": str(tmp_path)}
    started = time.monotonic()
    errors = errors_of(None, env=env)
    assert time.monotonic() - started < 1.0
    assert len(errors) == 1 and errors[0].startswith(
        f"${name}:detection.normalisation.volatile_keys") and message in errors[0], errors


# ----------------------------------------------------------------------- duplicate keys

@pytest.mark.parametrize("text, key, line", [
    ("detection: {history_size: 5}\nui: {theme: x}\ndetection: {enabled: false}\n",
     "detection", 3),
    ("detection:\n  history_size: 5\n  history_size: 7\n", "detection.history_size", 3),
    ("detection:\n  burn_rate:\n    window_seconds: 5\n    'window_seconds': 6\n",
     "detection.burn_rate.window_seconds", 4),
    ("actions: {triggers: {ping_pong: stop, ping_pong: kill}}\n",
     "actions.triggers.ping_pong", 1),
    ("alerts:\n  webhooks:\n    - url: http://a\n      url: http://b\n",
     "alerts.webhooks[0].url", 4),
    ("agents:\n  main: {detection: {enabled: false}}\n  main: {detection: {enabled: true}}\n",
     "agents.main", 3),
], ids=["top-level", "nested", "quoted", "flow", "list-item", "agents"])
def test_duplicate_keys_are_errors_not_last_one_wins(tmp_path, text, key, line):
    path = write(tmp_path, text)
    (error,) = errors_of(path)
    assert error.startswith(f"{path}:{key}: duplicate key at line {line}, ")
    assert "(first at line " in error


# -------------------------------------------------------------------- not-a-file paths

def test_a_fifo_as_config_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "config.yaml"
    os.mkfifo(fifo)
    try:
        result = run_clawwatch("config", "check", str(fifo), home=tmp_path, timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail("config check blocked on a FIFO")
    assert result.returncode == 2
    assert result.stdout.strip() == f"{fifo}:(file): not a regular file (a FIFO); only a " \
                                    "plain file is read"
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("special", ["directory", "/dev/null"])
def test_directories_and_devices_are_not_config_files(tmp_path, special):
    path = str(tmp_path) if special == "directory" else special
    (error,) = errors_of(path)
    assert error.startswith(f"{path}:(file): not a regular file (a ")


# ------------------------------------------------------------------------ the CLI

CLI_CASES = {
    "huge-int": ("detection: {history_size: 99999999999999999999999999}\n",
                 "detection.history_size: must be <= 10000"),
    "inf": ("detection: {context_bloat: {warning_factor: .inf}}\n",
            "detection.context_bloat.warning_factor: must be a finite number"),
    "nan-duration": ("actions: {cooldown_seconds: .nan}\n",
                     "actions.cooldown_seconds: must be a finite number"),
    "float-overflow": ("actions: {cooldown_seconds: 1" + "0" * 400 + "}\n",
                       "actions.cooldown_seconds: must be <= "),
    "duplicate": ("detection:\n  history_size: 5\n  history_size: 7\n",
                  "detection.history_size: duplicate key at line 3"),
    "bad-utf8": (b"ui: {theme: \xff}\n", "(file): not valid UTF-8"),
    "deep": ("ui: {theme: " + "[" * 10_000 + "]" * 10_000 + "}\n", "(yaml): nested more than 64"),
}


@pytest.mark.parametrize("command", ["config-check", "replay"])
@pytest.mark.parametrize("case", sorted(CLI_CASES))
def test_cli_exits_2_with_file_key_message(tmp_path, command, case):
    content, expected = CLI_CASES[case]
    path = write(tmp_path, content)
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    shutil.copy(HAMMER, sessions / "s.jsonl")
    args = ("config", "check", path) if command == "config-check" else \
        ("replay", "--config", path, str(sessions))
    result = run_clawwatch(*args, home=tmp_path)
    assert result.returncode == 2, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    lines = (result.stdout + result.stderr).splitlines()
    assert any(line.startswith(f"{path}:{expected}") for line in lines), lines


# ---------------------------------------------------------------------------- themes

def test_hostile_theme_files_are_skipped_with_an_error(tmp_path):
    themes = tmp_path / "themes"
    themes.mkdir()
    (themes / "bomb.yaml").write_text(laughs())
    (themes / "dup.yaml").write_text("name: a\nname: b\nprimary: '#000000'\n")
    (themes / "bad.yaml").write_bytes(b"name: \xff\n")
    (themes / "deep.yaml").write_text("name: " + "[" * 10_000 + "]" * 10_000 + "\n")
    os.mkfifo(themes / "fifo.yaml")
    code = ("from pathlib import Path; from monitor.ui.themes import load_themes; "
            f"themes, errors = load_themes(Path({str(themes)!r})); "
            "print([t.name for t in themes]); print(*errors, sep='\\n')")
    try:
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                cwd=PACKAGE_ROOT, timeout=30,
                                env={**os.environ, "PYTHONPATH": str(PACKAGE_ROOT)})
    except subprocess.TimeoutExpired:
        pytest.fail("loading themes blocked (a FIFO) or ran away (an alias bomb)")
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr[-2000:]
    names, *errors = result.stdout.splitlines()
    assert names == "['dark']"
    assert len(errors) == 5
    assert any("bomb.yaml: volatile_keys" in e or "bomb.yaml: detection" in e for e in errors)
    assert any("dup.yaml: name: duplicate key" in e for e in errors)
    assert any("bad.yaml: cannot read: not valid UTF-8" in e for e in errors)
    assert any("deep.yaml: " in e and "nested more than 64" in e for e in errors)
    assert any("fifo.yaml: cannot read: not a regular file (a FIFO)" in e for e in errors)


# ------------------------------------------------------------------------ hypothesis

def numeric_fields(value, prefix=""):
    """(dotted key, value, field metadata) for every number in a config section tree."""
    for item in dataclasses.fields(value):
        child = getattr(value, item.name)
        dotted = f"{prefix}{item.name}"
        if dataclasses.is_dataclass(child):
            yield from numeric_fields(child, dotted + ".")
        elif isinstance(child, tuple):
            for index, element in enumerate(child):
                if dataclasses.is_dataclass(element):
                    yield from numeric_fields(element, f"{dotted}[{index}].")
        elif isinstance(child, (int, float)) and not isinstance(child, bool):
            yield dotted, child, item.metadata


def assert_sane(config: Config) -> None:
    for agent in [None, *config.agents]:
        effective = config.for_agent(agent)
        for section in SECTIONS:
            for dotted, value, meta in numeric_fields(getattr(effective, section),
                                                      section + "."):
                assert math.isfinite(value), dotted
                assert "min" in meta and "max" in meta, f"{dotted} has no bounds"
                assert meta["min"] <= value <= meta["max"], (dotted, value)
                assert abs(value) < 2**63, dotted


def load_or_refuse(path: str, env: dict | None = None) -> None:
    started = time.monotonic()
    try:
        config = load_config(path, env=env or {})
    except ConfigError as exc:
        assert exc.errors and all(isinstance(e, str) and "\n" not in e for e in exc.errors)
    else:
        assert_sane(config)
    assert time.monotonic() - started < 2.0


YAMLISH = st.lists(st.sampled_from([
    "\n", "  ", "    ", "- ", ": ", "? ", ", ", "[", "]", "{", "}", "&a ", "&b ", "*a", "*b",
    "<<: ", "!!int ", "!!float ", "!!str ", "!!binary ", "!!set ", "!!omap ", "!!timestamp ",
    "!!python/object:os.system ", "!custom ", "---\n", "...\n", "%YAML 1.1\n", "# c\n", "'",
    '"', "|\n", ">\n", "\\", "\t", "\x00", "\x85", "\ufeff", "\udcff", "detection", "agents",
    "history_size", "warning_threshold", "critical_threshold", "burn_rate", "window_seconds",
    "actions", "cooldown_seconds", "triggers", "webhooks", "url", "alerts", "ui", "theme",
    "budgets", "session_tokens", "main", ".inf", "-.inf", ".nan", "1e999", "1.0e+999",
    "99999999999999999999999", "-1", "0", "1", "30", "0x_", "0o9", "1_000", "2001-13-45",
    "2001-01-01", "true", "off", "null", "~", "=", "x",
]), max_size=60).map("".join)

SCALARS = (st.none() | st.booleans() | st.integers() | st.integers(-2**70, 2**70)
           | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=20))


def field_names() -> list[str]:
    """Every field name of every section (and a few other keys), to aim the structures."""
    names = {"agents", "main", "url", *SECTIONS}

    def walk(cls):
        for name, hint in typing.get_type_hints(cls).items():
            names.add(name)
            for candidate in (hint, *typing.get_args(hint)):
                if dataclasses.is_dataclass(candidate):
                    walk(candidate)
    for cls in SECTIONS.values():
        walk(cls)
    return sorted(names)


KEYS = st.sampled_from(field_names()) | st.text(max_size=8) | st.integers(-3, 3)
TREES = st.recursive(SCALARS, lambda children: st.lists(children, max_size=4)
                     | st.dictionaries(KEYS, children, max_size=5), max_leaves=40)
CONFIGS = st.dictionaries(st.sampled_from([*SECTIONS, "agents", "extra"]),
                          st.dictionaries(KEYS, TREES, max_size=6), max_size=4)

HYPOTHESIS = settings(max_examples=300, deadline=None,
                      suppress_health_check=[HealthCheck.too_slow])


@HYPOTHESIS
@given(st.one_of(YAMLISH, st.text(max_size=200)))
def test_any_text_loads_or_is_a_config_error(text):
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "c.yaml")
        with open(path, "w", encoding="utf-8", errors="surrogatepass") as handle:
            handle.write(text)
        load_or_refuse(path)
    load_or_refuse(None, {"CLAWWATCH_DETECTION__HISTORY_SIZE": text, "HOME": "/nonexistent"})
    load_or_refuse(None, {"CLAWWATCH_DETECTION__BURN_RATE": text, "HOME": "/nonexistent"})


@HYPOTHESIS
@given(st.binary(max_size=300))
def test_any_bytes_load_or_are_a_config_error(data):
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "c.yaml")
        with open(path, "wb") as handle:
            handle.write(data)
        load_or_refuse(path)


@HYPOTHESIS
@given(CONFIGS)
def test_any_structure_loads_or_is_a_config_error(raw):
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "c.yaml")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(yaml.safe_dump(raw, allow_unicode=False))
        load_or_refuse(path)
    env = {"HOME": "/nonexistent"}
    for section, body in raw.items():
        for key, value in body.items():
            env[f"CLAWWATCH_{section}__{key}".upper()] = yaml.safe_dump(
                value, default_flow_style=True).strip()
    if all("\0" not in k and "=" not in k for k in env):
        load_or_refuse(None, env)


@HYPOTHESIS
@given(st.sampled_from(sorted(SECTIONS)), st.data())
def test_any_number_in_any_numeric_field_loads_in_bounds_or_is_refused(section, data):
    """Aim straight at the numeric fields: whatever loads is finite and in bounds."""
    fields = [(dotted, meta) for dotted, _value, meta in
              numeric_fields(SECTIONS[section](), "")]
    if not fields:
        return
    dotted, _meta = data.draw(st.sampled_from(fields))
    value = data.draw(st.integers() | st.integers(-2**80, 2**80)
                      | st.floats(allow_nan=True, allow_infinity=True))
    raw: dict = {}
    node = raw.setdefault(section, {})
    *parents, leaf = dotted.split(".")
    for part in parents:
        node = node.setdefault(part, {})
    node[leaf] = value
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "c.yaml")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(yaml.safe_dump(raw))
        load_or_refuse(path)
    load_or_refuse(None, {f"CLAWWATCH_{section}__{dotted.replace('.', '__')}".upper():
                          yaml.safe_dump(value).split("\n")[0], "HOME": "/nonexistent"})

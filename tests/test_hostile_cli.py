"""The hostile corpus through every command's text output (issue 10, item 1).

State dirs in both storage eras carry the corpus in every field (tests/hostile_world.py);
``replay``, ``watch --headless``, ``stop``, ``config check`` and the setup errors must print
no control character at all (newline and tab aside) and no terminal sequence from data,
while still showing the data (made visible). JSON output stays valid JSON that decodes to
the data exactly, with DEL, C1, bidi and invisible characters escaped.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hostile import HOSTILE_STRINGS, PAYLOAD, raw_controls, terminal_injections
from hostile_world import CRITICAL_NAME, write_hostile_world

from monitor.display import printable

ERAS = ("sqlite", "legacy")
SHOWN = printable(HOSTILE_STRINGS["osc0_title"])          # ␛]0;HOSTILE-title␇
# keys that JSON output must give back exactly (redaction may mask parts of others)
EXACT = ("osc0_title", "bidi_override", "c1_csi", "backspace_cr", "csi_clear", "nul",
         "markup_close", "zero_width", "line_separator", "variation_selectors",
         "invisible_format", "emoji_presentation")


def clawwatch(*args: str, home: Path, timeout: float = 90, encoding: str = "utf-8"
              ) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENCLAW_", "CLAWWATCH_")) or k == "CLAWWATCH_LOG_DIRS"}
    env.update(HOME=str(home), TMPDIR=str(home), XDG_STATE_HOME=str(home / "xdg"),
               PYTHONIOENCODING=encoding)
    result = subprocess.run([sys.executable, "-m", "monitor", *args], capture_output=True,
                            env=env, timeout=timeout)
    result.stdout = result.stdout.decode(encoding, "surrogateescape")
    result.stderr = result.stderr.decode(encoding, "surrogateescape")
    return result


def assert_clean(text: str) -> None:
    assert "Traceback" not in text, text[-3000:]
    assert terminal_injections(text) == []
    assert raw_controls(text) == []


@pytest.fixture(scope="module", params=ERAS)
def world(request, tmp_path_factory):
    built = write_hostile_world(tmp_path_factory.mktemp(f"hostile-{request.param}"),
                                request.param)
    yield built
    built.close()


@pytest.fixture
def home(tmp_path):
    return tmp_path


def test_replay_table_prints_data_visibly_and_no_control(world, home):
    result = clawwatch("replay", "--state-dir", str(world.state_dir), "--log",
                       str(world.log_path), home=home)
    assert result.returncode == 0, result.stderr[-3000:]
    assert_clean(result.stdout + result.stderr)
    assert SHOWN in result.stdout and PAYLOAD in result.stdout
    # one line per source and per session: no newline or separator from data split a line
    sessions = [line for line in result.stdout.splitlines() if "calls=" in line]
    assert len(sessions) == len(HOSTILE_STRINGS)


@pytest.mark.parametrize("encoding", ["latin-1", "ascii"])
def test_text_output_on_a_terminal_without_utf8_escapes_what_it_cannot_encode(
        world, home, encoding):
    for command in (("replay",), ("watch", "--headless", "--seconds", "1", "--from-start")):
        result = clawwatch(*command, "--state-dir", str(world.state_dir), "--log",
                           str(world.log_path), home=home, encoding=encoding)
        assert result.returncode == 0, result.stderr[-3000:]
        assert_clean(result.stdout + result.stderr)
        assert "\\u241b]0;HOSTILE-title" in result.stdout


def test_replay_json_is_valid_escaped_and_exact(world, home):
    result = clawwatch("replay", "--json", "--state-dir", str(world.state_dir), "--log",
                       str(world.log_path), home=home)
    assert result.returncode == 0, result.stderr[-3000:]
    assert_clean(result.stdout + result.stderr)
    document = json.loads(result.stdout)
    keys = {session["key"] for session in document["sessions"]}
    assert {world.keys[name] for name in EXACT} <= keys    # the data itself, not a display form


def test_watch_headless_lines_hold_no_control(world, home):
    result = clawwatch("watch", "--headless", "--from-start", "--no-checkpoint",
                       "--seconds", "3", "--poll", "0.2", "--state-dir", str(world.state_dir),
                       "--log", str(world.log_path), home=home)
    assert result.returncode == 0, result.stderr[-3000:]
    assert_clean(result.stdout + result.stderr)
    assert SHOWN in result.stdout
    lines = result.stdout.splitlines()
    assert any("CRITICAL" in line and printable(HOSTILE_STRINGS[CRITICAL_NAME]) in line
               for line in lines)


def test_watch_headless_json_lines_are_escaped(world, home):
    result = clawwatch("watch", "--headless", "--json", "--from-start", "--no-checkpoint",
                       "--seconds", "3", "--poll", "0.2", "--state-dir", str(world.state_dir),
                       "--log", str(world.log_path), home=home)
    assert result.returncode == 0, result.stderr[-3000:]
    assert_clean(result.stdout + result.stderr)
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert {r.get("key") for r in records} >= {world.keys[name] for name in EXACT}


@pytest.mark.parametrize("name", ["osc0_title", "bidi_override", "c1_csi", "backspace_cr",
                                  "csi_clear", "markup_close", "variation_selectors",
                                  "invisible_format"])
def test_stop_errors_show_the_key_visibly(name, home):
    key = f"agent:main:{HOSTILE_STRINGS[name]}"
    result = clawwatch("stop", key, "--gateway", "ws://127.0.0.1:9", "--timeout", "0.2",
                       home=home)
    assert result.returncode in (1, 2)
    assert_clean(result.stdout + result.stderr)
    assert printable(key) in result.stderr


def test_stop_json_error_is_escaped(home):
    key = f"agent:main:{HOSTILE_STRINGS['bidi_override']}{HOSTILE_STRINGS['c1_csi']}"
    result = clawwatch("stop", key, "--json", "--gateway", "ws://127.0.0.1:9", "--timeout",
                       "0.2", home=home)
    assert result.returncode == 1
    assert_clean(result.stdout + result.stderr)
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert records and records[0]["key"] == key


def test_config_check_prints_no_control(home):
    name = "cfg" + HOSTILE_STRINGS["osc0_title"] + HOSTILE_STRINGS["bidi_override"] + ".yaml"
    path = home / name
    path.write_text("ui:\n  theme: dark\n")
    result = clawwatch("config", "check", str(path), home=home)
    assert result.returncode == 0, result.stdout + result.stderr
    assert_clean(result.stdout + result.stderr)
    assert printable(str(path)) in result.stdout
    bad = home / ("bad" + HOSTILE_STRINGS["csi_clear"] + ".yaml")
    bad.write_text("detection:\n  \"k\\e]0;HOSTILE\\a\": 1\n  nonsense: [1\n")
    result = clawwatch("config", "check", str(bad), home=home)
    assert result.returncode == 2
    assert_clean(result.stdout + result.stderr)


@pytest.mark.parametrize("args", [
    ("replay", "/nowhere/" + HOSTILE_STRINGS["osc0_title"]),
    ("replay", "--state-dir", "/nowhere/" + HOSTILE_STRINGS["osc52_clipboard"]),
    ("watch", "--headless", "--seconds", "1", "--state-dir",
     "/nowhere/" + HOSTILE_STRINGS["csi_clear"] + HOSTILE_STRINGS["bidi_override"]),
    ("--state-dir", "/nowhere/" + HOSTILE_STRINGS["c1_csi"]),
])
def test_setup_errors_echo_paths_visibly(args, home):
    result = clawwatch(*args, home=home)
    assert result.returncode == 2
    assert_clean(result.stdout + result.stderr)
    assert PAYLOAD in result.stderr

"""Paths clawwatch takes from OpenClaw's files and its own config are hostile too.

A ``logging.file`` in openclaw.json, an ``actions.audit_log`` in config.yaml, the state
dir's ``agents`` entry: any of them can hold a NUL, a lone surrogate (JSON's ``"\\ud800"``),
name nothing, or name something that is not what it should be. Each is said, as an error
naming the setting or the path, and everything else is read as usual: never a traceback,
never silence. The command-line cases run ``python -m monitor`` as a child process.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest
from small_state import make_state

REPO = Path(__file__).resolve().parent.parent


def child_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENCLAW_", "CLAWWATCH_")) or k == "CLAWWATCH_LOG_DIRS"}
    env.update(HOME=str(home), TMPDIR=str(home), XDG_STATE_HOME=str(home / "xdg-state"),
               XDG_CONFIG_HOME=str(home / "xdg-config"), PYTHONUNBUFFERED="1")
    env.update(extra)
    return env


def clawwatch(*args: str, home: Path, cwd: Path = REPO, timeout: float = 60, **env: str
              ) -> subprocess.CompletedProcess:
    """``python -m monitor ARGS`` run to its end, with this checkout's ``monitor``."""
    return subprocess.run([sys.executable, "-m", "monitor", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=str(cwd),
                          env=child_env(home, PYTHONPATH=str(REPO), **env))


def set_logging_file(state: Path, value: str) -> None:
    """openclaw.json with ``logging.file`` set to ``value`` (written as ASCII JSON, so a NUL
    or a lone surrogate is its ``\\u`` escape, as OpenClaw would write it)."""
    (state / "openclaw.json").write_text(json.dumps({"logging": {"file": value}}))


def replay_document(state: Path, home: Path, **env: str) -> tuple[dict, str]:
    result = clawwatch("replay", "--json", "--jobs", "1", "--no-cache", "--state-dir",
                       str(state), home=home, **env)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    return json.loads(result.stdout), result.stderr


def gateway_logs(document: dict) -> list[str]:
    return [source["path"] for source in document["sources"] if source["kind"] == "gateway-log"]


# ------------------------------------------------------------------------- logging.file


@pytest.mark.parametrize("name", ["/tmp/gw\x00.log", "/tmp/gw\ud800.log"],
                         ids=["nul", "lone-surrogate"])
def test_a_logging_file_no_file_can_have_is_an_error_and_the_rest_is_read(tmp_path, name):
    state, _ = make_state(tmp_path)
    set_logging_file(state, name)
    watch = clawwatch("watch", "--headless", "--seconds", "1", "--no-checkpoint",
                      "--state-dir", str(state), home=tmp_path)
    assert watch.returncode == 0, watch.stderr
    assert "Traceback" not in watch.stderr
    document, stderr = replay_document(state, tmp_path)
    for said in (watch.stderr, stderr):
        assert f"clawwatch: error: logging.file in {state / 'openclaw.json'}" in said
        assert "no file can have this name" in said
    assert document["sessions"] and "/x.log" not in gateway_logs(document)


@pytest.mark.parametrize("home_variable", ["HOME", "OPENCLAW_HOME"])
def test_a_logging_file_under_tilde_is_read_from_openclaws_home(tmp_path, home_variable):
    state, log = make_state(tmp_path)
    home = tmp_path / "home"
    (home / "logs").mkdir(parents=True)
    log.rename(home / "logs" / "gw.log")
    set_logging_file(state, "~/logs/gw.log")
    document, stderr = replay_document(state, tmp_path, **{home_variable: str(home)})
    assert gateway_logs(document) == [str(home / "logs" / "gw.log")]
    assert "logging.file" not in stderr


@pytest.mark.parametrize("value, said", [
    ("logs/gw.log", "opened from the gateway's working directory"),
    ("~/nowhere/gw.log", "which is not there"),
    ("", "is empty: it names no file"),
])
def test_a_logging_file_that_names_nothing_there_is_said(tmp_path, value, said):
    state, _ = make_state(tmp_path)
    set_logging_file(state, value)
    document, stderr = replay_document(state, tmp_path)
    assert said in stderr and "no gateway log is read" in stderr
    assert document["sessions"] and "/x.log" not in gateway_logs(document)
    watch = clawwatch("watch", "--headless", "--seconds", "1", "--no-checkpoint",
                      "--state-dir", str(state), home=tmp_path)
    assert watch.returncode == 0 and said in watch.stderr, watch.stderr
    if value:
        assert "it is read once it appears" in watch.stderr


def test_a_relative_logging_file_is_read_from_the_working_directory(tmp_path):
    state, log = make_state(tmp_path)
    set_logging_file(state, log.name)
    result = clawwatch("replay", "--json", "--jobs", "1", "--no-cache", "--state-dir",
                       str(state), home=tmp_path, cwd=log.parent)
    assert result.returncode == 0, result.stderr
    assert gateway_logs(json.loads(result.stdout)) == [str(log)]


def test_a_follower_of_a_name_no_file_can_have_says_so_once(tmp_path):
    from monitor.sources.gateway_log import GatewayLogSource

    source = GatewayLogSource(str(tmp_path / "gw\x00.log"), include_rotated=True)
    first, second = source.poll(), source.poll()
    assert [record.message for record in first] == [
        "no file can have this name (it holds a NUL or a lone surrogate); not read"]
    assert second == [] and not source.follower.changed()


# ------------------------------------------------------------------------ actions.audit_log


def test_config_check_refuses_an_audit_log_holding_a_nul(tmp_path):
    """YAML's ``"\\0"`` is a NUL (a lone surrogate, ``"\\ud800"``, YAML refuses itself)."""
    config = tmp_path / "config.yaml"
    config.write_text(f'actions:\n  mode: dry-run\n  audit_log: "{tmp_path}/audit\\0.jsonl"\n'
                      'agents:\n  ops:\n    actions:\n      audit_log: "a\\0b"\n')
    result = clawwatch("config", "check", str(config), home=tmp_path)
    said = result.stdout + result.stderr
    assert result.returncode == 2 and "Traceback" not in said, said
    for key in ("actions.audit_log", "agents.ops.actions.audit_log"):
        assert f"{config}:{key}: no file can have this name" in said
    state, _ = make_state(tmp_path)
    watch = clawwatch("watch", "--headless", "--seconds", "1", "--act", "dry-run", "--config",
                      str(config), "--state-dir", str(state), home=tmp_path)
    assert watch.returncode == 2 and "Traceback" not in watch.stderr, watch.stderr
    assert f"{config}:actions.audit_log: no file can have this name" in watch.stderr


@pytest.mark.parametrize("path", ["/tmp/audit\x00.jsonl", "~a\x00b/audit.jsonl",
                                  "/tmp/audit\ud800.jsonl"])
def test_an_audit_log_no_file_can_have_is_an_error_not_a_crash(path):
    from monitor.act.audit import AuditLog

    audit = AuditLog(path)
    assert audit.append({"event": "attempt", "key": "agent:main:x"}) is False
    assert "no file can have this name" in audit.last_error
    assert audit.read() == []


# ---------------------------------------------------------------- files read whole, bounded


def test_an_oversized_openclaw_json_is_refused_unread_and_said(tmp_path):
    from monitor.discovery import MAX_OPENCLAW_CONFIG_BYTES

    state, log = make_state(tmp_path)
    with open(state / "openclaw.json", "wb") as handle:
        handle.truncate(1 << 30)                # sparse: 1 GiB of NULs that costs no disk
    assert MAX_OPENCLAW_CONFIG_BYTES < 1 << 30
    result = clawwatch("replay", "--json", "--jobs", "1", "--no-cache", "--state-dir",
                       str(state), "--log", str(log), home=tmp_path,
                       timeout=20)
    assert result.returncode == 0, result.stderr
    assert (f"clawwatch: warning: {state / 'openclaw.json'} not read: too large "
            f"(1073741824 bytes; at most {MAX_OPENCLAW_CONFIG_BYTES} are read)") in result.stderr
    assert json.loads(result.stdout)["sessions"]


def test_an_openclaw_json_in_json5_is_read_as_openclaw_reads_it(tmp_path):
    """OpenClaw's config is JSON5 (its docs' examples have comments, unquoted keys and
    trailing commas): the log it names is read, and a damaged one is said."""
    state, log = make_state(tmp_path)
    (state / "openclaw.json").write_text(
        "// written by hand, as the docs show\n"
        f"{{ logging: {{ file: '{log}', /* the gateway's */ }}, gateway: {{ port: 18790, }}, }}\n")
    document, stderr = replay_document(state, tmp_path)
    assert "not read" not in stderr
    assert gateway_logs(document) == [str(log)]
    (state / "openclaw.json").write_text("{ logging: { file: '/x.log' } ")
    document, stderr = replay_document(state, tmp_path)
    assert f"{state / 'openclaw.json'} not read: not JSON5" in stderr
    assert document["sessions"] and "/x.log" not in gateway_logs(document)


def test_read_bounded_refuses_a_file_past_its_bound_without_reading_it(tmp_path):
    from monitor.sources.regular import TooLarge, read_bounded

    sparse = tmp_path / "sparse"
    with open(sparse, "wb") as handle:
        handle.truncate(1 << 34)
    with pytest.raises(TooLarge, match=r"too large \(17179869184 bytes; at most 1024 are"):
        read_bounded(str(sparse), 1024)
    small = tmp_path / "small"
    small.write_bytes(b"x" * 1024)
    assert read_bounded(str(small), 1024) == b"x" * 1024


def test_the_kill_evidence_scan_reads_sessions_json_within_the_readers_bound(tmp_path,
                                                                            monkeypatch):
    """A kill reads each agent's index whole, as the reader does, so under the same bound: a
    sparse index past it is refused from its size, never read into memory."""
    from monitor.act import exec_calls
    from monitor.sources.legacy_index import MAX_INDEX_BYTES

    assert exec_calls.MAX_INDEX_BYTES == MAX_INDEX_BYTES
    sessions = tmp_path / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    call = {"type": "message", "timestamp": "2026-01-01T00:00:00Z", "message": {
        "role": "assistant", "content": [{"type": "toolCall", "id": "c1", "name": "exec",
                                          "arguments": {"command": "sleep 99"}}]}}
    (sessions / "x.jsonl").write_text(json.dumps(call) + "\n")
    (sessions / "sessions.json").write_text(json.dumps(
        {"agent:main:x": {"sessionId": "x", "updatedAt": 1_900_000_000_000}}))
    [found] = exec_calls.recent_exec_calls(str(tmp_path), now=1_900_000_000)
    assert found.command == "sleep 99"
    monkeypatch.setattr(exec_calls, "MAX_INDEX_BYTES", 1 << 20)
    with open(sessions / "sessions.json", "wb") as handle:
        handle.truncate(8 << 20)
    tracemalloc.start()
    try:
        calls = exec_calls.recent_exec_calls(str(tmp_path), now=1_900_000_000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert calls == [] and peak < 1 << 20


# ---------------------------------------------------------------------- the agents dir


def agents_replaced(state: Path, kind: str) -> Path:
    """``state/agents`` made a regular file or a FIFO (never opened: a FIFO would block)."""
    agents = state / "agents"
    shutil.rmtree(agents)
    if kind == "file":
        agents.write_text("not a directory\n")
    else:
        os.mkfifo(agents)
    return agents


@pytest.mark.parametrize("kind, what", [("file", "a regular file"), ("fifo", "a FIFO")])
def test_an_agents_dir_that_is_not_one_is_an_error_not_an_empty_install(tmp_path, kind, what):
    state, log = make_state(tmp_path)
    agents = agents_replaced(state, kind)
    said = f"clawwatch: error: {agents}: not a directory ({what}); the sessions OpenClaw keeps"
    replay = clawwatch("replay", "--json", "--jobs", "1", "--no-cache", "--state-dir",
                       str(state), "--log", str(log), home=tmp_path, timeout=30)
    assert replay.returncode == 0 and said in replay.stderr, replay.stderr
    assert [s["kind"] for s in json.loads(replay.stdout)["sources"]] == ["gateway-log"]
    watch = clawwatch("watch", "--headless", "--seconds", "1", "--no-checkpoint",
                      "--state-dir", str(state), "--log", str(log), home=tmp_path, timeout=30)
    assert watch.returncode == 0 and said in watch.stderr, watch.stderr


def test_a_replay_with_nothing_but_an_unreadable_agents_dir_exits_2(tmp_path):
    state, _ = make_state(tmp_path)
    agents = agents_replaced(state, "file")
    set_logging_file(state, str(tmp_path / "no-log-yet.log"))     # no default log is read
    result = clawwatch("replay", "--jobs", "1", "--no-cache", "--state-dir", str(state),
                       home=tmp_path, timeout=30)
    assert result.returncode == 2, result.stderr
    assert f"{agents}: not a directory (a regular file)" in result.stderr
    assert "nothing readable was given" in result.stderr


def test_an_agents_dir_that_cannot_be_listed_is_said(tmp_path):
    from monitor.discovery import agents_dir_problem

    state, _ = make_state(tmp_path)
    assert agents_dir_problem(str(state)) is None
    if os.geteuid() != 0:                                     # root lists any directory
        (state / "agents").chmod(0)
        try:
            assert agents_dir_problem(str(state)) == (
                f"{state / 'agents'}: cannot list it: Permission denied")
        finally:
            (state / "agents").chmod(0o755)
    shutil.rmtree(state / "agents")
    assert agents_dir_problem(str(state)) is None        # no agent yet: nothing to say


def test_the_default_log_dirs_can_be_named_and_no_other_is_looked_in(tmp_path):
    """``$CLAWWATCH_LOG_DIRS`` replaces ``/tmp/openclaw`` and ``$TMPDIR/openclaw-<uid>``:
    the newest ``openclaw-*.log`` of those dirs is the log (every test names an empty one,
    so a gateway running on this machine is never read)."""
    from monitor.discovery import discover

    first, second = tmp_path / "a", tmp_path / "b"
    for directory, day in ((first, "01"), (second, "02")):
        directory.mkdir()
        log = directory / f"openclaw-2026-12-{day}.log"
        log.write_text("")
        os.utime(log, (int(day), int(day)))
    (second / "openclaw-2026-12-03.1.log").write_text("")      # a rotation is not the log
    env = {"CLAWWATCH_LOG_DIRS": f"{first}{os.pathsep}{second}", "HOME": str(tmp_path)}
    found = discover(state_dir=str(tmp_path / "no-state"), env=env)
    assert found.log_path == str(second / "openclaw-2026-12-02.log")
    assert discover(state_dir=str(tmp_path / "no-state"),
                    env={**env, "CLAWWATCH_LOG_DIRS": ""}).log_path is None

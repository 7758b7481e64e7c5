"""Claude Code and Codex CLI sessions through the real command line (issue 14).

The transcripts are the source tests' fixtures (``tests/fixtures/claude_code``,
``tests/fixtures/codex``); the numbers are the ones ``test_source_claude_code.py`` and
``test_source_codex.py`` assert of the same files.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from contextlib import redirect_stdout
from pathlib import Path

from monitor import cli, replay_shards

FIXTURES = Path(__file__).parent / "fixtures"
CLAUDE = FIXTURES / "claude_code"                   # a config dir holding projects/
CODEX = FIXTURES / "codex" / "sessions"
CLAUDE_LOOP = "c00b08a2-3350-4e1a-8ea4-8c22db0e06f5"
CLAUDE_LEGACY = "3f1e9a2c-5b7d-4e8f-9a0b-1c2d3e4f5a6b"
CLAUDE_TOUR = "e1c79469-f88b-490f-ac15-e033cd9fd569"
CODEX_LOOP = "01a22fb7-c36d-7723-86b7-4a2c25a78eef"
CODEX_OLD = "0199495a-7c1e-7d32-b0f4-3a9e6c2d8b17"
CODEX_SUB = "019e2a3b-1c2d-7e3f-8a4b-5c6d7e8f9a0b"


def clean_env(home: Path, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items()
           if (not k.startswith(("OPENCLAW_", "CLAWWATCH_", "CLAUDE_", "CODEX_"))
               or k == "CLAWWATCH_LOG_DIRS") and k != "XDG_CONFIG_HOME"}
    env.update(HOME=str(home), TMPDIR=str(home), XDG_STATE_HOME=str(home / "state"), **extra)
    return env


def run_clawwatch(*args: str, home: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "monitor", *args], capture_output=True,
                          text=True, env=clean_env(home, **env), timeout=120)


def replay_json(*args: str, home: Path, **env: str) -> dict:
    result = run_clawwatch("replay", *args, "--json", home=home, **env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def by_key(document: dict) -> dict[str, dict]:
    return {session["key"]: session for session in document["sessions"]}


def test_replay_of_claude_code_and_codex_dirs_gives_their_sessions(tmp_path):
    document = replay_json("--claude-dir", str(CLAUDE), "--codex-dir", str(CODEX),
                           home=tmp_path)
    sessions = by_key(document)
    assert set(sessions) == {
        *(f"claude-code:{sid}" for sid in (CLAUDE_LOOP, CLAUDE_LEGACY, CLAUDE_TOUR)),
        *(f"codex:{sid}" for sid in (CODEX_LOOP, CODEX_OLD, CODEX_SUB,
                                     "01a22fbd-84ea-79f2-9e89-f7723ca107bd"))}
    for key, session in sessions.items():
        assert session["source"] == key.split(":")[0]
        assert session["session_id"] == key.split(":", 1)[1]

    loop = sessions[f"claude-code:{CLAUDE_LOOP}"]
    assert (loop["tool_calls"], loop["tools"]) == (12, {"Bash": 12})
    assert loop["tokens"]["total"] == 167482
    assert {f["detector"] for f in loop["findings"]} >= {"generic_repeat"}
    assert {f["tool"] for f in loop["findings"]} == {"Bash"}     # the CLI's own tool name
    assert sessions[f"claude-code:{CLAUDE_LEGACY}"]["tokens"]["total"] == 81022
    assert sessions[f"claude-code:{CLAUDE_LEGACY}"]["tools"] == {
        "Bash": 3, "Task": 1, "Grep": 1, "Edit": 1, "Write": 1}
    tour = sessions[f"claude-code:{CLAUDE_TOUR}"]
    assert tour["tokens"]["total"] == 132607
    assert (tour["tools"]["Bash"], tour["tools"]["Read"], tour["tools"]["Edit"],
            tour["tools"]["Agent"]) == (3, 1, 1, 1)

    codex_loop = sessions[f"codex:{CODEX_LOOP}"]
    assert (codex_loop["tool_calls"], codex_loop["tools"]) == (12, {"exec_command": 12})
    assert codex_loop["tokens"]["total"] == 143608
    assert codex_loop["tokens"]["output"] == 299
    assert {f["detector"] for f in codex_loop["findings"]} >= {"generic_repeat"}
    old = sessions[f"codex:{CODEX_OLD}"]
    assert old["tokens"]["total"] == 64050
    assert old["tools"] == {"shell": 2, "apply_patch": 1, "shell_command": 1,
                            "local_shell": 1, "web_search": 1}
    assert sessions[f"codex:{CODEX_SUB}"]["tokens"] == {"input": 100, "output": 80,
                                                       "total": 680}
    assert {s["source"] for s in document["sources"]} == {"claude-code", "codex"}


def test_claude_code_and_codex_are_discovered_from_their_env_with_no_flags(tmp_path):
    result = run_clawwatch("replay", "--json", home=tmp_path,
                           CLAUDE_CONFIG_DIR=f"{tmp_path / 'missing'},{CLAUDE}",
                           CODEX_HOME=str(CODEX.parent))
    assert result.returncode == 0, result.stderr
    assert "no OpenClaw found; reading Claude Code" in result.stderr
    sources = {s["source"] for s in json.loads(result.stdout)["sessions"]}
    assert sources == {"claude-code", "codex"}


def test_the_default_dirs_under_home_are_discovered(tmp_path):
    shutil.copytree(CLAUDE / "projects", tmp_path / ".claude" / "projects")
    shutil.copytree(CODEX, tmp_path / ".codex" / "sessions")
    keys = by_key(replay_json(home=tmp_path))
    assert f"claude-code:{CLAUDE_LOOP}" in keys and f"codex:{CODEX_LOOP}" in keys


def test_a_codex_home_given_as_codex_dir_is_read_through_its_sessions_dir(tmp_path):
    """``--codex-dir ~/.codex`` (the home, as CODEX_HOME names it) reads what
    ``--codex-dir ~/.codex/sessions`` reads, as ``--claude-dir`` takes a config dir."""
    from_home = replay_json("--codex-dir", str(CODEX.parent), "--source", "codex",
                            home=tmp_path)
    from_sessions = replay_json("--codex-dir", str(CODEX), "--source", "codex", home=tmp_path)
    assert from_home == from_sessions
    assert f"codex:{CODEX_LOOP}" in by_key(from_home)


def test_source_codex_reads_only_codex(tmp_path):
    document = replay_json("--source", "codex", home=tmp_path,
                           CLAUDE_CONFIG_DIR=str(CLAUDE), CODEX_HOME=str(CODEX.parent))
    assert {s["source"] for s in document["sessions"]} == {"codex"}
    document = replay_json("--source", "codex", "--claude-dir", str(CLAUDE), "--codex-dir",
                           str(CODEX), home=tmp_path)
    assert {s["source"] for s in document["sessions"]} == {"codex"}


def test_an_unknown_source_and_nothing_to_read_are_setup_errors(tmp_path):
    result = run_clawwatch("replay", "--source", "cursor", home=tmp_path)
    assert result.returncode == 2 and "cursor" in result.stderr
    result = run_clawwatch("replay", "--source", "claude-code", home=tmp_path)
    assert result.returncode == 2 and "--claude-dir" in result.stderr


def test_a_claude_code_or_codex_transcript_given_as_a_path_is_read_as_theirs(tmp_path):
    claude_file = CLAUDE / "projects" / "-tmp-cap-work" / f"{CLAUDE_LOOP}.jsonl"
    codex_file = next(CODEX.rglob(f"*{CODEX_LOOP}.jsonl"))
    keys = by_key(replay_json(str(claude_file), str(codex_file), home=tmp_path))
    assert set(keys) == {f"claude-code:{CLAUDE_LOOP}", f"codex:{CODEX_LOOP}"}
    assert keys[f"claude-code:{CLAUDE_LOOP}"]["tokens"]["total"] == 167482


def replay_documents(home: Path, monkeypatch, *args: str) -> list[dict]:
    """``replay ARGS --json`` read in this process with ``--jobs 1`` and with ``--jobs 2``
    (small dirs split anyway), seeing no agent's dirs but those in ``args``."""
    monkeypatch.setattr(replay_shards, "BYTES_PER_JOB", 1)
    for name, value in clean_env(home).items():
        monkeypatch.setenv(name, value)
    for name in [n for n in os.environ if n.startswith(("CLAUDE_", "CODEX_", "OPENCLAW_"))]:
        monkeypatch.delenv(name)
    documents = []
    for jobs in ("1", "2"):
        out = io.StringIO()
        with redirect_stdout(out):
            assert cli.main(["replay", *args, "--json", "--jobs", jobs]) == 0
        documents.append(json.loads(out.getvalue()))
    return documents


def test_jobs_2_gives_the_jobs_1_document(tmp_path, monkeypatch):
    documents = replay_documents(tmp_path, monkeypatch, "--claude-dir", str(CLAUDE),
                                 "--codex-dir", str(CODEX))
    assert documents[0] == documents[1]
    assert len(documents[0]["sessions"]) == 7
    via_cli = replay_json("--claude-dir", str(CLAUDE), "--codex-dir", str(CODEX),
                          "--jobs", "2", home=tmp_path)
    assert via_cli == documents[0]


def test_watch_finds_a_claude_code_loop_with_no_openclaw_there(tmp_path):
    projects = tmp_path / "claude" / "projects"
    shutil.copytree(CLAUDE / "projects" / "-tmp-cap-work", projects / "-tmp-cap-work")
    result = run_clawwatch("watch", "--headless", "--json", "--from-start", "--seconds", "3",
                           "--act", "off", home=tmp_path,
                           CLAUDE_CONFIG_DIR=str(tmp_path / "claude"))
    assert result.returncode == 0, result.stderr
    assert "no OpenClaw found; watching Claude Code" in result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    findings = [r for r in records if r["type"] == "finding"]
    assert any(f["detector"] == "generic_repeat" and f["key"] == f"claude-code:{CLAUDE_LOOP}"
               and f["tool"] == "Bash" for f in findings), findings


def test_an_openclaw_replay_marks_every_session_openclaw(tmp_path):
    sid = "91499aae-e513-490f-9a02-9292f17a62df"         # oc-hammer.jsonl's session
    sessions = tmp_path / "oc" / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / "sessions.json").write_text(json.dumps(
        {"agent:main:hammer": {"sessionId": sid, "status": "running"}}))
    shutil.copy(FIXTURES / "oc-hammer.jsonl", sessions / f"{sid}.jsonl")
    document = replay_json("--state-dir", str(tmp_path / "oc"), home=tmp_path)
    assert "agent:main:hammer" in by_key(document)
    assert {s["source"] for s in document["sessions"]} == {"openclaw"}
    mixed = by_key(replay_json("--state-dir", str(tmp_path / "oc"), "--codex-dir", str(CODEX),
                               home=tmp_path))
    assert mixed["agent:main:hammer"]["source"] == "openclaw"
    assert mixed[f"codex:{CODEX_LOOP}"]["source"] == "codex"


def test_a_huge_tool_name_of_claude_code_or_codex_is_kept_redacted_and_cut(tmp_path):
    huge = "Bash ghp_" + "F" * 36 + " " + "n" * 1_000_000
    claude = tmp_path / "claude"
    codex = tmp_path / "codex"
    shutil.copytree(CLAUDE, claude)
    shutil.copytree(CODEX, codex)
    for path, name in ((next(claude.rglob(f"{CLAUDE_LOOP}.jsonl")), "Bash"),
                       (next(codex.rglob(f"*{CODEX_LOOP}.jsonl")), "exec_command")):
        path.write_text(path.read_text().replace(f'"name":"{name}"', f'"name":"{huge}"'))
    sessions = by_key(replay_json("--claude-dir", str(claude), "--codex-dir", str(codex),
                                  home=tmp_path))
    for key in (f"claude-code:{CLAUDE_LOOP}", f"codex:{CODEX_LOOP}"):
        [(name, count)] = sessions[key]["tools"].items()
        assert count == 12 and len(name) <= 1000
        assert name.startswith("Bash «redacted» nnn")

"""Actions on ``claude-code:<id>`` / ``codex:<id>`` keys: routed to the CLI process path.

The processes are the real fake CLIs of tests/test_cli_agents_process.py (native ``claude`` /
``codex`` executables with a looping tool in its own process group, marked with the
session id); their transcripts live under ``<tmp>/home/<source>/projects`` (Claude Code) and
``<tmp>/home/codex/sessions`` (Codex), which the controller is given as its source dirs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import psutil
import pytest
from test_cli_agents_process import (
    LOOP_TOOL,
    SESSION_VARS,
    Fake,
    FakeClis,
    alive,
    group_pids,
    wait_for,
)

from monitor.act.api import ActionResult
from monitor.act.audit import AuditedController, AuditLog
from monitor.act.cli_agents import CliProcess, Lookup
from monitor.act.cli_controller import (
    CliAgentController,
    RoutingController,
    _ambiguous_candidates,
    default_claude_dirs,
    default_codex_dirs,
    is_cli_key,
    locate_transcript,
    routed,
)
from monitor.act.cli_processes import live_with_env
from monitor.discovery import claude_dirs
from monitor.redaction import redact_text

pytestmark = pytest.mark.timeout(60)
REPO = Path(__file__).resolve().parents[1]
SECRET = "sk-ant-api03-" + "q" * 40


def untouched(fake: Fake) -> bool:
    """No signal reached the CLI, and it and its tool group still run (the group's ``sleep``
    is a new process every second, so the group is checked, not the pids first seen)."""
    return (fake.received() == [] and alive(fake.pid) and alive(fake.tool)
            and len(group_pids(fake.tool)) >= 1)


def tools_gone(fake: Fake) -> bool:
    return not group_pids(fake.tool) and not any(alive(pid) for pid in fake.tool_members)


def controller(root: Path, **options) -> CliAgentController:
    return CliAgentController(claude_dirs=[str(root / "home/claude-code/projects")],
                              codex_dirs=[str(root / "home/codex/sessions")],
                              confirm_seconds=0.3, kill_grace=2.0, **options)


def with_cwd(fake):
    """Write the session's cwd into its transcript, as the real CLIs do (Claude Code: each
    entry's ``cwd``; Codex: ``session_meta.payload.cwd``); the fakes write none."""
    line = {"type": "session_meta", "payload": {"cwd": fake.session.cwd}} \
        if fake.session.source == "codex" else {"type": "user", "cwd": fake.session.cwd}
    with open(fake.session.transcript, "a") as handle:
        handle.write(json.dumps(line) + "\n")
    return fake


class Recorder:
    """A stand-in for the gateway controller that records what reached it."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self.closed = False

    def stop(self, key, *, method="abort", trigger=None):
        self.calls.append(("stop", key))
        return ActionResult(key, method, True, "gateway stop", trigger)

    def kill(self, key, *, trigger=None, **options):
        self.calls.append(("kill", key))
        return ActionResult(key, "kill", True, "gateway kill", trigger)

    def kill_candidates(self, key):
        self.calls.append(("kill_candidates", key))
        return []

    def gateway_process(self):
        return "the gateway"

    def close(self):
        self.closed = True


# ------------------------------------------------------------------------------ routing

def test_openclaw_keys_go_to_the_gateway_and_cli_keys_to_the_process_path(tmp_path):
    gateway, cli = Recorder(), Recorder()
    router = RoutingController(gateway, cli)
    for key in ("agent:main:main", "agent:main:telegram:dm:1", "claude-code", "codex:",
                "claude-codex:x"):
        router.stop(key)
        router.kill(key)
        router.kill_candidates(key)
    assert cli.calls == []
    assert len(gateway.calls) == 15
    sid = str(uuid.uuid4())
    router.stop(f"claude-code:{sid}", method="abort", trigger="generic_repeat")
    router.kill(f"codex:{sid}", trigger="generic_repeat")
    router.kill_candidates(f"codex:{sid}")
    assert cli.calls == [("stop", f"claude-code:{sid}"), ("kill", f"codex:{sid}"),
                         ("kill_candidates", f"codex:{sid}")]
    assert len(gateway.calls) == 15
    assert router.gateway_process() == "the gateway", "other attributes are the gateway's"
    router.close()
    assert gateway.closed and cli.closed
    assert is_cli_key(f"codex:{sid}") and not is_cli_key("agent:main:main")


def test_routed_wraps_once_and_takes_the_discovered_dirs(tmp_path):
    class Found:
        def __init__(self) -> None:
            self.claude_dirs = [str(tmp_path / "c")]
            self.codex_dirs = [str(tmp_path / "x")]

    router = routed(Recorder(), discovered=Found())
    assert isinstance(router, RoutingController)
    assert routed(router) is router
    assert router.cli.claude_dirs == [str(tmp_path / "c")]
    assert router.cli.codex_dirs == [str(tmp_path / "x")]


def test_default_dirs_follow_the_environment(tmp_path):
    env = {"HOME": str(tmp_path)}
    assert default_claude_dirs(env) == [str(tmp_path / ".claude/projects"),
                                        str(tmp_path / ".config/claude/projects")]
    assert default_codex_dirs(env) == [str(tmp_path / ".codex/sessions")]
    env = {"HOME": "/nowhere", "CLAUDE_CONFIG_DIR": f"{tmp_path}/a,{tmp_path}/b",
           "CODEX_HOME": str(tmp_path / "cx")}
    (tmp_path / "a/projects").mkdir(parents=True)
    assert default_claude_dirs(env) == [str(tmp_path / "a/projects"), str(tmp_path / "b")]
    assert default_codex_dirs(env) == [str(tmp_path / "cx/sessions")]


def test_stop_searches_the_claude_dirs_that_watch_reads(tmp_path):
    """``$XDG_CONFIG_HOME/claude/projects``, which ``watch`` and ``replay`` read as ccusage
    does, is searched by ``stop`` too: a session they show is found, not "no transcript"."""
    env = {"HOME": str(tmp_path / "user"), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    (tmp_path / "xdg/claude/projects").mkdir(parents=True)
    assert default_claude_dirs(env) == [str(tmp_path / "user/.claude/projects"),
                                        str(tmp_path / "xdg/claude/projects")]
    assert claude_dirs(env, []) == [str(tmp_path / "xdg/claude/projects")]


def test_the_transcript_is_located_once_or_refused(tmp_path):
    sid = str(uuid.uuid4())
    projects = tmp_path / "projects"
    (projects / "-p1").mkdir(parents=True)
    (projects / "-p1" / f"{sid}.jsonl").write_text("{}\n")
    path, _ = locate_transcript("claude-code", sid, [str(projects)])
    assert path == os.path.realpath(projects / "-p1" / f"{sid}.jsonl")
    assert locate_transcript("claude-code", sid, [str(tmp_path)])[0] == path, "a config dir"
    (projects / "-p2").mkdir()
    (projects / "-p2" / f"{sid}.jsonl").write_text("{}\n")
    path, why = locate_transcript("claude-code", sid, [str(projects)])
    assert path is None and why.startswith("ambiguous: 2 transcripts")
    for bad in ("*", "../x", "a/b", ".."):
        assert locate_transcript("claude-code", bad, [str(projects)])[0] is None
    rollout = tmp_path / "sessions/2026/12/01" / f"rollout-2026-12-01T00-00-00-{sid}.jsonl"
    rollout.parent.mkdir(parents=True)
    rollout.write_text("{}\n")
    assert locate_transcript("codex", sid, [str(tmp_path / "sessions")])[0] == str(rollout)
    assert "no transcript" in locate_transcript("codex", str(uuid.uuid4()),
                                                [str(tmp_path / "sessions")])[1]


@pytest.mark.timeout(20)
def test_a_codex_dir_with_symlink_loops_or_a_deep_tree_is_searched_in_bounds(tmp_path):
    """Two symlinks to ``.`` made the search for a rollout list 2**40 paths (``clawwatch stop
    codex:…`` never ended); symlinked dirs are not entered, as the sources do not, and a
    tree deeper than ``<home>/sessions/YYYY/MM/DD`` is not searched to its bottom."""
    sid = str(uuid.uuid4())
    home = tmp_path / "codex-home"
    rollout = home / "sessions/2026/12/01" / f"rollout-2026-12-01T00-00-00-{sid}.jsonl"
    rollout.parent.mkdir(parents=True)
    rollout.write_text("{}\n")
    for name in ("a", "b"):
        (home / "sessions" / name).symlink_to(".")
        (rollout.parent / name).symlink_to("..")
    deep = [str(home / "sessions/2026")]
    for _ in range(1200):
        deep.append(os.path.join(deep[-1], "d"))
        os.mkdir(deep[-1])
    try:
        assert locate_transcript("codex", sid, [str(home / "sessions")]) == (str(rollout),
                                                                             str(rollout))
        assert locate_transcript("codex", sid, [str(home)])[0] == str(rollout), "a Codex home"
        path, why = locate_transcript("codex", str(uuid.uuid4()), [str(home)])
        assert path is None and why.startswith("no transcript")
    finally:
        for folder in reversed(deep[1:]):   # too deep for a recursive clean-up
            os.rmdir(folder)


# ----------------------------------------------------------------------- stop and kill

def test_stop_sends_sigint_to_the_right_cli_and_is_audited(clis, tmp_path):
    target = with_cwd(clis.start("claude-code"))
    other = with_cwd(clis.start("claude-code", cwd="projB"))
    codex = with_cwd(clis.start("codex", hold=True, args=("exec", "loop")))
    audit = AuditLog(str(tmp_path / "audit.jsonl"))
    audited = AuditedController(routed(Recorder(), claude_dirs=controller(tmp_path).claude_dirs,
                                       codex_dirs=controller(tmp_path).codex_dirs), audit)
    key = f"claude-code:{target.session.session_id}"
    result = audited.stop(key, trigger="generic_repeat")
    assert result.ok, result.detail
    assert result.pids == (target.pid,)
    assert "sent SIGINT" in result.detail and "environment names session" in result.detail
    wait_for(lambda: target.received() == ["SIGINT"], "SIGINT")
    assert alive(target.tool), "stop leaves the tools to the CLI"
    assert untouched(other) and untouched(codex)
    attempt, done = audit.read()
    assert attempt["event"] == "attempt" and attempt["key"] == key
    assert done["event"] == "result" and done["ok"] is True and done["pids"] == [target.pid]
    assert done["trigger"] == "generic_repeat" and done["action"] == "abort"


def test_stop_a_codex_exec_run_that_exits(clis, tmp_path):
    fake = with_cwd(clis.start("codex", hold=True, args=("exec", "loop"), exit_on_sigint=True))
    result = controller(tmp_path).stop(f"codex:{fake.session.session_id}")
    assert result.ok and result.pids == (fake.pid,), result.detail
    assert "it exited" in result.detail
    assert fake.received() == ["SIGINT"]


def test_kill_ends_the_tool_groups_interrupts_the_cli_and_leaves_a_lookalike(clis, tmp_path):
    target = with_cwd(clis.start("claude-code",
                                 tool=f"export ANTHROPIC_API_KEY={SECRET}; {LOOP_TOOL}"))
    other = with_cwd(clis.start("claude-code", cwd="projB"))
    audit = AuditLog(str(tmp_path / "audit.jsonl"))
    ctl = controller(tmp_path)
    key = f"claude-code:{target.session.session_id}"
    (candidate,) = ctl.kill_candidates(key)
    assert candidate.pid == target.tool and candidate.session_key == key
    result = AuditedController(ctl, audit).kill(key, trigger="generic_repeat")
    assert result.ok, result.detail
    assert "1 tool group(s) killed" in result.detail
    assert tools_gone(target)
    assert target.tool in result.pids
    wait_for(lambda: target.received() == ["SIGINT"], "the CLI to be interrupted")
    assert alive(target.pid), "without include_cli the CLI is interrupted, not killed"
    assert untouched(other)
    text = Path(audit.path).read_text()
    assert SECRET not in text and SECRET not in result.detail
    assert json.loads(text.splitlines()[-1])["ok"] is True

    again = with_cwd(clis.start("claude-code", cwd="projC"))
    result = ctl.kill(f"claude-code:{again.session.session_id}", include_cli=True)
    assert result.ok, result.detail
    assert "ended the claude-code CLI" in result.detail
    wait_for(lambda: not alive(again.pid), "the CLI to end")
    assert again.received() == ["SIGTERM"]
    assert tools_gone(again)
    assert untouched(other)


@pytest.mark.parametrize("source", ["claude-code", "codex"])
def test_kill_ends_a_background_job_a_tool_left_behind(clis, tmp_path, source):
    """A tool that starts a loop in a session of its own and exits (``(setsid loop &)``)
    leaves it out of every tool group and out of the CLI's tree; its environment still
    names the session, and the kill ends it. Another session's job is left alone."""
    job = "(setsid sh -c 'while :; do sleep 1; done' </dev/null >/dev/null 2>&1 &); "
    target = with_cwd(clis.start(source, hold=True, tool=job + LOOP_TOOL))
    other = with_cwd(clis.start(source, hold=True, cwd="projB", tool=job + LOOP_TOOL))
    var = SESSION_VARS[source]

    def jobs(fake: Fake) -> list[int]:
        return [proc.pid for proc in live_with_env(var, fake.session.session_id)
                if proc.pid not in (fake.pid, fake.tool)
                and proc.pid not in group_pids(fake.tool) and proc.ppid() != fake.tool]

    orphan = wait_for(lambda: [pid for pid in jobs(target)
                               if psutil.Process(pid).cmdline()[:2] == ["sh", "-c"]],
                      "the background job")
    spared = wait_for(lambda: jobs(other), "the other session's background job")
    target.started += [psutil.Process(pid) for pid in orphan]
    other.started += [psutil.Process(pid) for pid in spared]
    ctl = controller(tmp_path)
    listed = ctl.kill_candidates(f"{source}:{target.session.session_id}")
    assert set(orphan) <= {info.pid for info in listed}
    assert not {info.pid for info in listed} & set(spared)
    result = ctl.kill(f"{source}:{target.session.session_id}")
    assert result.ok, result.detail
    assert "orphaned tool process(es) ended" in result.detail
    assert not any(alive(pid) for pid in orphan)
    assert all(alive(pid) for pid in spared if psutil.Process(pid).cmdline()[:1] == ["sh"])
    assert untouched(other)


def test_ambiguous_evidence_refuses_and_touches_nothing(clis, tmp_path):
    first = with_cwd(clis.start("claude-code", mark=False))
    second = with_cwd(clis.start("claude-code", mark=False))
    ctl = controller(tmp_path)
    key = f"claude-code:{first.session.session_id}"
    for result in (ctl.stop(key), ctl.kill(key), ctl.kill(key, include_cli=True)):
        assert not result.ok and result.pids == ()
        assert result.detail.startswith("refused: ambiguous") and "nothing was signalled" \
            in result.detail
        assert {info.pid for info in result.ambiguous} == {first.pid, second.pid}
        assert all(info.ambiguous and info.session_key is None for info in result.ambiguous)
    assert {info.pid for info in ctl.kill_candidates(key)} == {first.pid, second.pid}
    missing = ctl.stop(f"claude-code:{uuid.uuid4()}")
    assert not missing.ok and "no transcript" in missing.detail
    assert untouched(first) and untouched(second)


def test_a_cwd_named_ambiguous_does_not_make_an_unproven_cli_a_kill_candidate(clis, tmp_path):
    """The only CLI in the cwd, started after the transcript's first entry, is unproven, not
    one of several rivals: the kill dialog lists nothing, whatever the cwd's name says."""
    fake = clis.start("claude-code", cwd="ambiguous-project", mark=False, entry=False)
    with open(fake.session.transcript, "a") as handle:
        handle.write(json.dumps({"type": "user", "cwd": fake.session.cwd,
                                 "timestamp": "2026-01-01T00:00:00Z"}) + "\n")
    ctl = controller(tmp_path)
    key = f"claude-code:{fake.session.session_id}"
    _, lookup = ctl.lookup(key)
    assert lookup.process is None and "started" in lookup.reason and not lookup.ambiguous
    assert ctl.kill_candidates(key) == []
    assert untouched(fake)


def test_an_ambiguous_candidates_command_is_redacted_before_it_is_cut():
    # the candidate shows the command's first 200 characters: the token is cut 12 into it
    token = "ghp_Zq9xR2mK7vB4nL1pW8sT3yU6iO0aE5dF"
    argv = ("claude", "-p", "." * (188 - len("claude -p ")) + token)
    lookup = Lookup(None, "ambiguous: 2 candidates",
                    (CliProcess(4242, 1.0, argv, "/work", ties=("cwd",)),))
    (info,) = _ambiguous_candidates(lookup)
    assert info.command.startswith("claude -p ...") and token[:12] not in redact_text(
        info.command)


def test_a_transcript_found_twice_is_refused(clis, tmp_path):
    fake = with_cwd(clis.start("claude-code"))
    copy = tmp_path / "home/claude-code/projects/-elsewhere" / Path(
        fake.session.transcript).name
    copy.parent.mkdir(parents=True)
    copy.write_text(Path(fake.session.transcript).read_text())
    result = controller(tmp_path).stop(f"claude-code:{fake.session.session_id}")
    assert not result.ok and "ambiguous: 2 transcripts" in result.detail
    assert untouched(fake)


# ------------------------------------------------------------------------ clawwatch stop

def _clawwatch_stop(tmp_path: Path, fake_home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(fake_home / "claude-code"),
           "CODEX_HOME": str(fake_home / "codex"), "HOME": str(tmp_path / "user"),
           "XDG_STATE_HOME": str(tmp_path / "state"),
           "XDG_CONFIG_HOME": str(tmp_path / "config")}
    env.pop("OPENCLAW_GATEWAY_URL", None)
    return subprocess.run([sys.executable, "-m", "monitor", "stop", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=30)


def test_clawwatch_stop_finds_a_session_under_xdg_config_home(clis: FakeClis, tmp_path):
    """A Claude Code run with ``CLAUDE_CONFIG_DIR=$XDG_CONFIG_HOME/claude`` (as its maintainers
    advise for XDG), stopped from a shell without that variable: ``watch`` shows the session
    (it reads ``$XDG_CONFIG_HOME/claude/projects``), so ``stop`` finds it there as well."""
    xdg = tmp_path / "xdg"
    session_id = str(uuid.uuid4())
    transcript = clis.transcript("claude-code", tmp_path / "projA", session_id, xdg / "claude")
    target = with_cwd(clis.start("claude-code", session_id=session_id, transcript=transcript,
                                 config_dir=str(xdg / "claude"), exit_on_sigint=True))
    key = f"claude-code:{session_id}"
    env = {**os.environ, "HOME": str(tmp_path / "user"), "XDG_CONFIG_HOME": str(xdg),
           "XDG_STATE_HOME": str(tmp_path / "state"), "CLAWWATCH_LOG_DIRS": "/nonexistent-cw"}
    for name in ("CLAUDE_CONFIG_DIR", "OPENCLAW_GATEWAY_URL"):
        env.pop(name, None)
    done = subprocess.run([sys.executable, "-m", "monitor", "stop", key], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith(f"clawwatch stop {key}: done: sent SIGINT")
    assert target.received() == ["SIGINT"]


def test_clawwatch_stop_claude_code_key_as_a_subprocess(clis: FakeClis, tmp_path):
    target = with_cwd(clis.start("claude-code", exit_on_sigint=True))
    other = with_cwd(clis.start("claude-code", cwd="projB"))
    key = f"claude-code:{target.session.session_id}"
    done = _clawwatch_stop(tmp_path, tmp_path / "home", key)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"clawwatch stop {key}: done: sent SIGINT")
    assert target.received() == ["SIGINT"]
    assert untouched(other)
    audit = [json.loads(line) for line in
             (tmp_path / "state/clawwatch/audit.jsonl").read_text().splitlines()]
    assert [(entry["event"], entry["key"]) for entry in audit] == [("attempt", key),
                                                                  ("result", key)]
    assert audit[-1]["ok"] is True and audit[-1]["pids"] == [target.pid]

    killed = with_cwd(clis.start("codex", cwd="projC", hold=True, args=("exec", "loop")))
    done = _clawwatch_stop(tmp_path, tmp_path / "home",
                           f"codex:{killed.session.session_id}", "--kill", "--json")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout.splitlines()[0])
    assert record["type"] == "action" and record["action"] == "kill" and record["ok"]
    assert tools_gone(killed)
    wait_for(lambda: killed.received() == ["SIGINT"], "SIGINT after the tools")
    assert untouched(other)


def test_clawwatch_stop_refuses_ambiguous_evidence_with_exit_1(clis: FakeClis, tmp_path):
    first = with_cwd(clis.start("claude-code", mark=False))
    second = with_cwd(clis.start("claude-code", mark=False))
    done = _clawwatch_stop(tmp_path, tmp_path / "home",
                           f"claude-code:{first.session.session_id}")
    assert done.returncode == 1
    assert "FAILED: refused: ambiguous" in done.stderr
    assert untouched(first) and untouched(second)


@pytest.mark.parametrize("cwd", ["/tmp/a\0b", "/tmp/a\ud800b"])
def test_clawwatch_stop_on_a_transcript_whose_cwd_is_no_path_says_so(tmp_path, cwd):
    """A cwd recorded with a NUL (``\\u0000`` in the JSON) or a lone surrogate is no path:
    the stop is refused with a clear reason, never a traceback."""
    sid = str(uuid.uuid4())
    path = tmp_path / "home/claude-code/projects/-x" / f"{sid}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"type": "user", "sessionId": sid, "cwd": cwd,
                                "timestamp": "2026-12-07T08:00:00Z"}) + "\n")
    done = _clawwatch_stop(tmp_path, tmp_path / "home", f"claude-code:{sid}")
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert "FAILED: refused: the session's cwd is unknown" in done.stderr

"""Finding, stopping and killing the Claude Code / Codex CLI of a session, with real processes.

Each fake CLI is a real process shaped like the real ones (see monitor/act/cli_agents.py):
either "native" (an executable file named ``claude``/``codex``, so its process name is the
CLI's, as with the real native binaries) or "script" (an interpreter running
``…/node_modules/@anthropic-ai/claude-code/cli.js`` or ``…/@openai/codex/bin/codex.js``). It
writes (and, like Codex, optionally holds open) its transcript, spawns a looping ``sleep``
tool in its own session and process group with the CLI's session variable in its
environment, records every SIGINT/SIGTERM it receives, and idles. Look-alikes run in other
cwds, or in the same cwd for the ambiguity rules, and must never be touched.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import psutil
import pytest

from monitor.act import cli_agent_signals as sig
from monitor.act.cli_agents import (
    CLOCK_SLACK,
    CliSession,
    claude_project_folder,
    find_cli,
    session_cwd,
    writes_elsewhere,
)

pytestmark = pytest.mark.timeout(60)

FAKE_CLI = r"""
import json, os, signal, subprocess, sys, time
from datetime import datetime, timezone

cfg = json.loads(os.environ["FAKE_CLI_CONFIG"])
log = open(cfg["signals"], "a")


def record(signum, frame):
    log.write(signal.Signals(signum).name + "\n")
    log.flush()
    if (signum == signal.SIGTERM and not cfg.get("ignore_sigterm")) \
            or cfg.get("exit_on_sigint"):
        os._exit(128 + signum)


signal.signal(signal.SIGINT, record)
signal.signal(signal.SIGTERM, record)
env = {key: value for key, value in os.environ.items() if key != "FAKE_CLI_CONFIG"}
ready = {"pid": os.getpid(), "tool": None}
if cfg.get("launch"):   # a node-style launcher: the CLI runs as its child, same arguments
    child = subprocess.Popen([cfg["launch"], *sys.argv[1:]],
                             env=dict(env, FAKE_CLI_CONFIG=json.dumps(cfg["child"])))
else:
    os.makedirs(os.path.dirname(cfg["transcript"]), exist_ok=True)
    transcript = open(cfg["transcript"], "a")
    if cfg.get("entry"):
        transcript.write(json.dumps({"type": "user", "sessionId": cfg["session"],
                                     "timestamp": datetime.now(timezone.utc).isoformat()}))
        transcript.write("\n")
        transcript.flush()
    if not cfg.get("hold"):
        transcript.close()
    tool = subprocess.Popen(["/bin/sh", "-c", cfg["tool"]], start_new_session=True,
                            env=dict(env, **cfg.get("tool_env", {})))
    ready["tool"] = tool.pid
with open(cfg["ready"] + ".tmp", "w") as out:
    json.dump(ready, out)
os.replace(cfg["ready"] + ".tmp", cfg["ready"])
while True:            # reap children (a killed tool must not linger as a zombie)
    try:
        os.waitpid(-1, 0)
    except ChildProcessError:
        signal.pause()
        continue
    if cfg.get("respawn"):   # a loop: the next call as soon as the last one ended
        respawned = subprocess.Popen(["/bin/sh", "-c", cfg["tool"]], start_new_session=True,
                                     env=dict(env, **cfg.get("tool_env", {})))
        with open(cfg["ready"] + "-respawned", "a") as out:
            out.write(f"{respawned.pid}\n")
"""

SESSION_VARS = {"claude-code": "CLAUDE_CODE_SESSION_ID", "codex": "CODEX_SESSION_ID"}
LOOP_TOOL = "while true; do sleep 1; done"


def wait_for(predicate, what: str, timeout: float = 10.0):
    """Poll ``predicate`` until it returns something truthy, failing after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def alive(pid: int | None) -> bool:
    try:
        return pid is not None and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def group_pids(pgid: int) -> set[int]:
    found = set()
    for proc in psutil.process_iter():
        try:
            if os.getpgid(proc.pid) == pgid and alive(proc.pid):
                found.add(proc.pid)
        except OSError:
            continue
    return found


@dataclass
class Fake:
    popen: subprocess.Popen
    session: CliSession
    signals: Path
    pid: int
    tool: int | None
    launcher: int | None = None
    tool_members: set[int] = field(default_factory=set)
    started: list[psutil.Process] = field(default_factory=list)   # for the clean-up

    @property
    def target(self) -> tuple[int, float]:
        return (self.pid, psutil.Process(self.pid).create_time())

    def received(self) -> list[str]:
        return self.signals.read_text().split() if self.signals.exists() else []


class FakeClis:
    """Starts fake CLI processes under ``tmp_path`` and ends them all afterwards."""

    def __init__(self, tmp_path: Path) -> None:
        self.root = tmp_path
        self.fakes: list[Fake] = []

    def _entry(self, source: str, style: str, name: str) -> list[str]:
        if style == "native":
            path = self.root / name / "bin" / ("claude" if source == "claude-code" else "codex")
        elif source == "claude-code":
            path = self.root / name / "node_modules/@anthropic-ai/claude-code/cli.js"
        else:
            path = self.root / name / "node_modules/@openai/codex/bin/codex.js"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"#!{sys.executable}\n{FAKE_CLI}")
        path.chmod(0o755)
        return [str(path)] if style == "native" else [sys.executable, str(path)]

    def transcript(self, source: str, cwd: Path, session_id: str, home: Path) -> Path:
        if source == "claude-code":
            encoded = re.sub("[^a-zA-Z0-9]", "-", str(cwd))   # as Claude Code names it
            return home / "projects" / encoded / f"{session_id}.jsonl"
        return home / "sessions/2026/12/01" / f"rollout-2026-12-01T03-47-42-{session_id}.jsonl"

    def start(self, source: str, *, cwd: str = "projA", style: str = "native",
              session_id: str | None = None, args: tuple[str, ...] = ("-p", "loop"),
              hold: bool = False, mark: bool = True, entry: bool = True,
              home: str = "home", tool: str = LOOP_TOOL, launcher: bool = False,
              transcript: Path | None = None, exit_on_sigint: bool = False,
              ignore_sigterm: bool = False, respawn: bool = False,
              config_dir: str | None = None) -> Fake:
        session_id = session_id or str(uuid.uuid4())
        work = self.root / cwd
        work.mkdir(exist_ok=True)
        config_home = self.root / home / source
        path = transcript or self.transcript(source, work, session_id, config_home)
        tag = uuid.uuid4().hex[:8]
        cfg = {"signals": str(self.root / f"signals-{tag}"),
               "ready": str(self.root / f"ready-{tag}"), "transcript": str(path),
               "session": session_id, "hold": hold, "entry": entry, "tool": tool,
               "tool_env": {SESSION_VARS[source]: session_id} if mark else {},
               "exit_on_sigint": exit_on_sigint, "ignore_sigterm": ignore_sigterm,
               "respawn": respawn}
        argv = self._entry(source, style, f"pkg-{tag}") + list(args)
        if launcher:   # node codex.js → the native binary, as Codex runs under node < 23
            native = self._entry(source, "native", f"pkg-{tag}-native")
            cfg = {"launch": native[0], "signals": cfg["signals"] + "-launcher",
                   "ready": cfg["ready"] + "-launcher", "child": cfg}
            argv = self._entry(source, "script", f"pkg-{tag}") + list(args)
        env = {**os.environ, "FAKE_CLI_CONFIG": json.dumps(cfg),
               "CLAUDE_CONFIG_DIR" if source == "claude-code" else "CODEX_HOME":
                   config_dir or str(config_home)}
        popen = subprocess.Popen(argv, cwd=work, env=env, start_new_session=True)
        ready = self._ready(cfg["ready"])
        launcher_pid = None
        if launcher:
            launcher_pid, cfg = ready["pid"], cfg["child"]
            ready = self._ready(cfg["ready"])
        fake = Fake(popen, CliSession(source, session_id, str(path), str(work)),
                    Path(cfg["signals"]), ready["pid"], ready["tool"], launcher_pid)
        fake.started = [psutil.Process(pid) for pid in (fake.tool, fake.pid, launcher_pid)
                        if pid]
        if fake.tool:
            fake.tool_members = wait_for(lambda: len(group_pids(fake.tool)) >= 2 and
                                         group_pids(fake.tool), "the tool's sleep child")
        self.fakes.append(fake)
        return fake

    @staticmethod
    def _ready(path: str) -> dict:
        """What a fake wrote once it was set up (polled for)."""
        ready = Path(path)
        return wait_for(lambda: ready.exists() and json.loads(ready.read_text()),
                        "the fake CLI to start")

    def close(self) -> None:
        for fake in self.fakes:
            for proc in fake.started:   # each group, while its process is still the one started
                try:
                    if proc.is_running():
                        os.killpg(os.getpgid(proc.pid), signal.SIGKILL)
                except (OSError, psutil.Error):
                    pass
            fake.popen.wait(5)


def untouched(fake: Fake) -> bool:
    return (fake.received() == [] and alive(fake.pid)
            and all(alive(pid) for pid in fake.tool_members))


# ------------------------------------------------------------------------------ finding

@pytest.mark.parametrize("style", ["native", "script"])
def test_claude_cli_is_found_by_its_tool_environment_not_the_lookalike(clis, style):
    target = clis.start("claude-code", style=style)
    other = clis.start("claude-code", style=style, cwd="projB")
    found = find_cli(target.session)
    assert found.process is not None, found.reason
    assert found.target == target.target
    assert "environment names session" in found.reason
    assert [proc.pid for proc in found.candidates] == [target.pid]
    assert find_cli(other.session).target == other.target


def test_codex_cli_is_found_by_the_rollout_it_holds_open(clis):
    target = clis.start("codex", hold=True, mark=False, args=("exec", "loop"))
    clis.start("codex", hold=True, cwd="projB", args=("exec", "loop"))
    found = find_cli(target.session)
    assert found.target == target.target, found.reason
    assert f"holds the transcript {os.path.realpath(target.session.transcript)} open" \
        in found.reason


def test_codex_cwd_comes_from_session_meta(clis, tmp_path):
    target = clis.start("codex", hold=True, mark=False, entry=False)
    Path(target.session.transcript).write_text(json.dumps(
        {"timestamp": "2026-12-01T03:47:42.531Z", "type": "session_meta",
         "payload": {"id": target.session.session_id, "cwd": str(tmp_path / "projA")}}) + "\n")
    session = CliSession("codex", target.session.session_id, target.session.transcript)
    assert session_cwd(session) == os.path.realpath(tmp_path / "projA")
    assert find_cli(session).target == target.target


def test_codex_run_with_cd_works_in_that_dir_not_its_own_cwd(clis, tmp_path):
    """``codex exec -C DIR`` records DIR as the session's cwd but keeps its own cwd."""
    (tmp_path / "projC").mkdir()
    fake = clis.start("codex", hold=True, args=("exec", "-C", "../projC", "loop"))
    session = CliSession("codex", fake.session.session_id, fake.session.transcript,
                         str(tmp_path / "projC"))
    found = find_cli(session)
    assert found.target == fake.target, found.reason
    assert sig.stop_cli(session, found.target).ok
    wait_for(lambda: fake.received() == ["SIGINT"], "SIGINT")
    claude_like = CliSession("claude-code", session.session_id, session.transcript, session.cwd)
    assert find_cli(claude_like).process is None


@pytest.mark.parametrize("given", ["-C{dir}", "-C={dir}", "--cd={dir}"])
def test_codex_given_its_dir_in_one_argument_works_there(clis, tmp_path, given):
    """``codex exec -C/path`` (verified with Codex 0.171.0) works in that dir, as ``-C /path``
    does: the session recorded there is that CLI's."""
    (tmp_path / "projD").mkdir()
    fake = clis.start("codex", hold=True,
                      args=("exec", given.format(dir=tmp_path / "projD"), "loop"))
    session = CliSession("codex", fake.session.session_id, fake.session.transcript,
                         str(tmp_path / "projD"))
    found = find_cli(session)
    assert found.target == fake.target, found.reason


def test_two_untied_processes_in_one_cwd_are_ambiguous(clis):
    first = clis.start("claude-code", mark=False)
    second = clis.start("claude-code", mark=False)
    found = find_cli(first.session)
    assert found.process is None and found.target is None
    assert "ambiguous" in found.reason and str(second.pid) in found.reason
    assert sig.kill_tools(first.session, (0, 0.0))[0].ok is False
    assert untouched(first) and untouched(second)


def test_a_program_given_a_file_named_like_the_cli_is_not_the_cli(clis):
    """``man claude``, ``ssh claude``, ``less codex`` in the session's cwd are not CLIs: only a
    JavaScript runtime runs the launcher by that name (``node …/bin/codex``)."""
    fake = clis.start("claude-code", mark=False)
    viewer = clis.root / "viewer"
    viewer.symlink_to(sys.executable)
    (Path(fake.session.cwd) / "claude").write_text("import time\ntime.sleep(60)\n")
    config = os.path.dirname(os.path.dirname(os.path.dirname(fake.session.transcript)))
    lookalike = subprocess.Popen([str(viewer), "claude"], cwd=fake.session.cwd,
                                 env={**os.environ, "CLAUDE_CONFIG_DIR": config})
    try:
        wait_for(lambda: psutil.Process(lookalike.pid).cmdline()[1:] == ["claude"],
                 "the look-alike to run")
        found = find_cli(fake.session)
        assert found.target == fake.target, found.reason
        assert [proc.pid for proc in found.candidates] == [fake.pid]
    finally:
        lookalike.kill()
        lookalike.wait()


def test_two_tied_processes_are_ambiguous(clis):
    first = clis.start("claude-code")
    sid = first.session.session_id
    second = clis.start("claude-code", session_id=sid, args=("--resume", sid))
    found = find_cli(first.session)
    assert found.process is None and "ambiguous: 2" in found.reason
    assert f"pid {second.pid}: argv names session" in found.reason


def test_argv_naming_the_session_settles_it_and_another_session_is_left_out(clis):
    sid = str(uuid.uuid4())
    resumed = clis.start("claude-code", session_id=sid, args=("--resume", sid), mark=False)
    clis.start("claude-code", mark=False)   # untied, same cwd
    other_id = str(uuid.uuid4())
    clis.start("claude-code", mark=False, args=(f"--session-id={other_id}",))
    found = find_cli(resumed.session)
    assert found.target == resumed.target, found.reason
    assert f"argv names session {sid}" in found.reason
    assert other_id not in " ".join(" ".join(proc.argv) for proc in found.candidates)


@pytest.mark.parametrize(("source", "fork"), [
    ("claude-code", ("-p", "--resume", "{parent}", "--fork-session", "loop")),
    ("codex", ("exec", "fork", "{parent}", "loop")),
])
def test_a_fork_writes_its_own_session_not_the_one_its_argv_names(clis, source, fork):
    """``claude --resume A --fork-session`` and ``codex exec fork A`` write a new session:
    they are its writer (its tool and rollout say so), not session A's."""
    parent = clis.start(source, hold=True, cwd="projP")
    parent_session = parent.session
    args = tuple(arg.format(parent=parent_session.session_id) for arg in fork)
    clis.close()
    forked = clis.start(source, hold=True, cwd="projP", args=args)
    found = find_cli(forked.session)
    assert found.target == forked.target, found.reason
    assert "argv names" not in found.reason
    found = find_cli(parent_session)
    assert found.process is None
    assert f"forks session {parent_session.session_id} into a new one" in found.reason
    assert untouched(forked)


def test_the_only_process_counts_when_it_started_before_the_first_entry(clis):
    fake = clis.start("claude-code", mark=False)
    found = find_cli(fake.session)
    assert found.target == fake.target, found.reason
    assert "started before the transcript's first entry" in found.reason


def test_a_transcript_outside_its_cwds_folder_does_not_claim_the_cli_running_there(clis):
    """A Claude Code transcript names its cwd in its own entries: one crafted in another
    project's folder, claiming a cwd where a CLI runs, is not that CLI's, however its
    timestamps look (that CLI writes its own sessions in its cwd's folder)."""
    victim = clis.start("claude-code", mark=False)
    crafted = str(uuid.uuid4())
    projects = Path(victim.session.transcript).parent.parent
    path = projects / "-elsewhere" / f"{crafted}.jsonl"
    path.parent.mkdir()
    path.write_text(json.dumps({"type": "user", "sessionId": crafted, "cwd": victim.session.cwd,
                                "timestamp": datetime.now(UTC).isoformat()}) + "\n")
    found = find_cli(CliSession("claude-code", crafted, str(path)))
    assert found.process is None
    assert "not in the folder Claude Code keeps that cwd's sessions in" in found.reason
    assert untouched(victim)


@pytest.mark.parametrize("claim", ["symlink", "proc"])
def test_a_transcript_claiming_a_cwd_through_a_link_does_not_claim_the_cli_there(clis, claim):
    """A cwd claimed as a symlink to a project, or as ``/proc/<pid>/cwd``, resolves to that
    project; the transcript sits in the folder named after the claim, not after the project
    (Claude Code names it after the resolved cwd), so it is not that project's CLI's."""
    victim = clis.start("claude-code", mark=False)
    link = clis.root / "link"
    link.symlink_to(victim.session.cwd)
    cwd = str(link) if claim == "symlink" else f"/proc/{victim.pid}/cwd"
    crafted = str(uuid.uuid4())
    projects = Path(victim.session.transcript).parent.parent
    path = projects / claude_project_folder(cwd) / f"{crafted}.jsonl"
    path.parent.mkdir()
    path.write_text(json.dumps({"type": "user", "sessionId": crafted, "cwd": cwd,
                                "timestamp": datetime.now(UTC).isoformat()}) + "\n")
    found = find_cli(CliSession("claude-code", crafted, str(path)))
    assert found.process is None, found.reason
    assert "not in the folder Claude Code keeps that cwd's sessions in" in found.reason
    assert untouched(victim)


def test_the_only_cli_may_name_its_project_folder_in_its_environment(clis):
    """``CLAUDE_CODE_PROJECT_DIR_NAME`` (with ``CLAUDE_CONFIG_DIR``) makes Claude Code keep
    a cwd's sessions in the folder it names."""
    sid = str(uuid.uuid4())
    path = clis.root / "home/claude-code/projects/my_folder" / f"{sid}.jsonl"
    os.environ["CLAUDE_CODE_PROJECT_DIR_NAME"] = "my_folder"
    try:
        fake = clis.start("claude-code", mark=False, session_id=sid, transcript=path)
    finally:
        del os.environ["CLAUDE_CODE_PROJECT_DIR_NAME"]
    found = find_cli(fake.session)
    assert found.target == fake.target, found.reason
    assert "started before the transcript's first entry" in found.reason


def test_claude_project_folders_are_named_as_claude_code_names_them():
    """Verified with Claude Code 2.1.332: every UTF-16 code unit but an ASCII letter or
    digit is a ``-``; a name past 200 characters is cut (and given a hash)."""
    assert claude_project_folder("/tmp/cliagents-scratch/lab1/project") == \
        "-tmp-cliagents-scratch-lab1-project"
    assert claude_project_folder("/home/u/my_proj.v2/é🙂") == "-home-u-my-proj-v2----"
    assert claude_project_folder("/" + "a" * 300) == "-" + "a" * 199


def test_the_only_process_does_not_count_when_the_session_is_older(clis, tmp_path):
    path = tmp_path / "home/claude-code/projects/-old/old-session.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"type": "user", "timestamp": "2026-01-01T00:00:00Z"}) + "\n")
    fake = clis.start("claude-code", mark=False, entry=False, transcript=path)
    found = find_cli(fake.session)
    assert found.process is None
    assert "started" in found.reason and "after the transcript's first entry" in found.reason
    assert untouched(fake)


def test_a_process_whose_config_dir_does_not_hold_the_transcript_is_left_out(clis, tmp_path):
    fake = clis.start("codex", hold=True)
    moved = tmp_path / "other-home" / Path(fake.session.transcript).name
    moved.parent.mkdir()
    moved.write_text(Path(fake.session.transcript).read_text())
    session = CliSession("codex", fake.session.session_id, str(moved), fake.session.cwd)
    found = find_cli(session)
    assert found.process is None
    assert "CODEX_HOME keeps sessions in" in found.reason


def test_a_claude_processes_own_xdg_config_home_holds_its_sessions(tmp_path):
    """Without ``CLAUDE_CONFIG_DIR`` a Claude Code process may write ``~/.claude`` or (as
    1.0.30 did) ``$XDG_CONFIG_HOME/claude``: the process's own XDG dir, not a fixed one."""
    env = {"HOME": str(tmp_path / "user"), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    name = "projects/-work/0d7e4f38-5b1a-4c2e-9f3d-2a6b8c1e4f70.jsonl"
    assert writes_elsewhere(env, "claude-code", str(tmp_path / "xdg/claude" / name)) is None
    assert writes_elsewhere(env, "claude-code", str(tmp_path / "user/.claude" / name)) is None
    elsewhere = writes_elsewhere(env, "claude-code", str(tmp_path / "user/.config/claude" / name))
    assert elsewhere and "HOME keeps sessions in" in elsewhere


@pytest.mark.parametrize("source", ["claude-code", "codex"])
def test_a_relative_config_dir_is_below_the_clis_cwd(clis, source):
    """``CLAUDE_CONFIG_DIR=cfg`` (or ``CODEX_HOME=cfg``) keeps the sessions in ``cfg`` below
    the CLI's cwd (verified with Claude Code 2.1.332), not below clawwatch's."""
    sid = str(uuid.uuid4())
    work = clis.root / "projR"
    path = clis.transcript(source, work, sid, work / "cfg")
    fake = clis.start(source, cwd="projR", session_id=sid, transcript=path, config_dir="cfg",
                      hold=True)
    found = find_cli(fake.session)
    assert found.target == fake.target, found.reason
    elsewhere = clis.root / "projS" / path.relative_to(work)
    elsewhere.parent.mkdir(parents=True)
    elsewhere.write_text(path.read_text())
    moved = CliSession(source, sid, str(elsewhere), fake.session.cwd)
    assert "keeps sessions in" in find_cli(moved).reason


def test_a_launcher_is_left_out_for_the_cli_it_runs(clis):
    fake = clis.start("codex", hold=True, launcher=True, args=("exec", "loop"))
    assert fake.launcher is not None
    assert psutil.Process(fake.pid).ppid() == fake.launcher
    found = find_cli(fake.session)
    assert found.target == fake.target, found.reason
    assert [proc.pid for proc in found.candidates] == [fake.pid]


# ----------------------------------------------------------------------- stop and kill

def test_stop_sends_sigint_to_the_cli_only(clis):
    target = clis.start("claude-code")
    other = clis.start("claude-code", cwd="projB")
    found = find_cli(target.session)
    outcome = sig.stop_cli(target.session, found.target)
    assert outcome.ok and outcome.signalled == [target.pid], outcome.detail
    wait_for(lambda: target.received() == ["SIGINT"], "the fake to record SIGINT")
    assert all(alive(pid) for pid in target.tool_members), "stop must not touch the tools"
    assert untouched(other)


def test_stop_ends_a_print_run_and_wait_exit_sees_it(clis):
    fake = clis.start("codex", hold=True, args=("exec", "loop"), exit_on_sigint=True)
    target = find_cli(fake.session).target
    outcome = sig.stop_cli(fake.session, target)
    assert outcome.ok, outcome.detail
    assert sig.wait_exit(target, 5), "a `codex exec` run exits on SIGINT"
    assert fake.received() == ["SIGINT"]
    again = sig.stop_cli(fake.session, target)
    assert not again.ok and "gone" in again.detail


def test_kill_ends_the_tool_group_and_nothing_else(clis):
    target = clis.start("claude-code")
    other = clis.start("claude-code", cwd="projB")
    found = find_cli(target.session)
    (group,) = sig.tool_groups(target.session, found.target)
    assert group.pid == target.tool and group.marked
    assert set(group.member_pids) == target.tool_members
    started = time.monotonic()
    (outcome,) = sig.kill_tools(target.session, found.target, grace=3.0)
    assert outcome.ok, outcome.detail
    assert time.monotonic() - started < 3.0, "SIGTERM should have been enough"
    assert set(outcome.signalled) >= target.tool_members
    assert not any(alive(pid) for pid in target.tool_members)
    assert alive(target.pid) and target.received() == [], "the CLI was not asked to die"
    assert untouched(other)
    outcomes = sig.kill_tools(target.session, found.target, include_cli=True)
    assert [o.ok for o in outcomes] == [True], outcomes
    assert sig.wait_exit(found.target, 5)
    assert target.received() == ["SIGTERM"]
    assert untouched(other)


def test_a_tool_group_member_gets_one_sigterm(clis, sigterms):
    """The group's SIGTERM reaches its members; a second one may run a shell's TERM trap
    twice."""
    target = clis.start("claude-code")
    found = find_cli(target.session)
    (outcome,) = sig.kill_tools(target.session, found.target, grace=3.0)
    assert outcome.ok, outcome.detail
    assert sigterms == [("group", target.tool)]
    assert not any(alive(pid) for pid in target.tool_members)


def test_a_tool_group_that_ends_between_listing_and_kill_is_an_ok_outcome(clis):
    fake = clis.start("claude-code")
    found = find_cli(fake.session)
    (group,) = sig.tool_groups(fake.session, found.target)
    cli = psutil.Process(fake.pid)
    cli.suspend()          # as the controller freezes it: the ended tool stays a zombie
    try:
        os.killpg(group.pid, signal.SIGKILL)
        wait_for(lambda: not group_pids(group.pid), "the tool group to end")
        outcome = sig.kill_group(cli, group, fake.session, grace=0.5)
    finally:
        cli.resume()
    assert outcome.ok and outcome.signalled == [], outcome
    assert "ended by itself" in outcome.detail
    assert alive(fake.pid) and fake.received() == []


def test_a_tool_group_whose_leader_ended_but_a_member_lives_is_not_called_ended(clis):
    fake = clis.start("claude-code", tool="sleep 300; true")
    found = find_cli(fake.session)
    (group,) = sig.tool_groups(fake.session, found.target)
    try:
        os.kill(group.pid, signal.SIGKILL)             # the shell only: its sleep lives on
        wait_for(lambda: not alive(group.pid), "the tool's shell to end")
        outcome = sig.kill_group(psutil.Process(fake.pid), group, fake.session, grace=0.5)
        assert not outcome.ok and "ended" not in outcome.detail, outcome
        assert group_pids(group.pid), "a member was signalled without the leader's evidence"
    finally:
        os.killpg(group.pid, signal.SIGKILL)


def test_kill_escalates_to_sigkill_when_the_tool_ignores_sigterm(clis):
    fake = clis.start("codex", hold=True, tool="trap '' TERM; " + LOOP_TOOL)
    target = find_cli(fake.session).target
    started = time.monotonic()
    (outcome,) = sig.kill_tools(fake.session, target, grace=0.5)
    assert outcome.ok, outcome.detail
    assert 0.5 <= time.monotonic() - started < 5
    assert not any(alive(pid) for pid in fake.tool_members)
    assert alive(fake.pid)


def test_a_cli_that_ignores_sigterm_and_starts_tools_leaves_none_when_killed(clis):
    """The CLI is resumed for its SIGTERM; one that ignores it and goes on calling tools
    until its SIGKILL must not leave the tools it started meanwhile running (orphaned by its
    end, and out of every group that was listed)."""
    fake = clis.start("claude-code", ignore_sigterm=True, respawn=True)
    found = find_cli(fake.session)
    outcomes = sig.kill_tools(fake.session, found.target, grace=1.0, include_cli=True)
    assert all(outcome.ok for outcome in outcomes), outcomes
    assert "SIGTERM" in fake.received()
    assert not alive(fake.pid)
    started = [int(pid) for path in clis.root.glob("ready-*-respawned")
               for pid in path.read_text().split()]
    assert started, "the CLI started another tool while it ignored SIGTERM"
    fake.started += [psutil.Process(pid) for pid in started if alive(pid)]
    survivors = [pid for leader in started for pid in group_pids(leader)]
    assert survivors == [], f"tools outlived the kill: {survivors}"


def test_a_tool_marked_for_another_session_is_not_killed(clis):
    fake = clis.start("claude-code")
    other_session = CliSession("claude-code", str(uuid.uuid4()), fake.session.transcript,
                               fake.session.cwd)
    target = fake.target
    assert sig.tool_groups(other_session, target) == []
    assert sig.kill_tools(other_session, target) == []
    assert untouched(fake)


def test_a_reused_pid_is_refused(clis):
    fake = clis.start("claude-code")
    pid, created = find_cli(fake.session).target
    outcome = sig.stop_cli(fake.session, (pid, created - 10))
    assert not outcome.ok and "reused" in outcome.detail
    (outcome,) = sig.kill_tools(fake.session, (pid, created - 10), include_cli=True)
    assert not outcome.ok and "reused" in outcome.detail
    assert untouched(fake)


def test_a_process_in_another_cwd_or_of_another_kind_is_refused(clis):
    fake = clis.start("claude-code")
    other = clis.start("claude-code", cwd="projB")
    outcome = sig.stop_cli(fake.session, other.target)
    assert not outcome.ok and "cwd" in outcome.detail
    codex_session = CliSession("codex", fake.session.session_id, fake.session.transcript,
                               fake.session.cwd)
    outcome = sig.stop_cli(codex_session, fake.target)
    assert not outcome.ok and "not a codex process" in outcome.detail
    for pid in (1, os.getpid()):
        outcome = sig.stop_cli(fake.session, (pid, psutil.Process(pid).create_time()))
        assert not outcome.ok and "protected" in outcome.detail
    assert untouched(fake) and untouched(other)


def a_later_session_beside(fake: Fake) -> CliSession:
    """A session whose transcript sits beside ``fake``'s, begun after it started, and whose
    own CLI has already exited."""
    wait_for(lambda: time.time() - psutil.Process(fake.pid).create_time() > CLOCK_SLACK + 0.5,
             "the first CLI to be older than the clock slack")
    later = str(uuid.uuid4())
    path = Path(fake.session.transcript).parent / f"{later}.jsonl"
    path.write_text(json.dumps({"type": "user", "sessionId": later, "cwd": fake.session.cwd,
                                "timestamp": datetime.now(UTC).isoformat()}) + "\n")
    return CliSession("claude-code", later, str(path), fake.session.cwd)


def test_a_cli_holding_another_sessions_transcript_is_not_that_sessions_writer(clis):
    running = clis.start("claude-code", hold=True)
    found = find_cli(a_later_session_beside(running))
    assert found.process is None
    assert f"pid {running.pid} holds another session's transcript open" in found.reason
    assert running.received() == [] and alive(running.pid)


def test_a_cli_whose_tool_names_another_session_is_not_that_sessions_writer(clis):
    running = clis.start("claude-code")
    found = find_cli(a_later_session_beside(running))
    assert found.process is None
    assert f"names another session ({running.session.session_id})" in found.reason


def test_the_only_cli_is_no_writer_when_another_transcript_beside_was_written_since(clis):
    running = clis.start("claude-code", mark=False)
    later = a_later_session_beside(running)
    Path(running.session.transcript).touch()
    found = find_cli(later)
    assert found.process is None
    assert "another session's transcript beside this one" in found.reason
    assert running.session.transcript in found.reason
    assert running.received() == [] and alive(running.pid)


def test_a_tool_command_cut_for_display_masks_a_secret_the_cut_halves(clis):
    """A tool's command is cut to ``COMMAND_CHARS`` for the kill's detail; a token that
    starts just before the cut is masked whole, not shown as the start the cut left
    (``ghp_`` and 7 characters is too short for its rule)."""
    token = "ghp_Zq9xR2mK7vB4nL1pW8sT3yU6iO0aE5dF"
    pad = sig.COMMAND_CHARS - 11 - len("/bin/sh -c : ") - 1
    fake = clis.start("claude-code", tool=f": {'x' * pad} {token}; {LOOP_TOOL}")
    found = find_cli(fake.session)
    (group,) = sig.tool_groups(fake.session, found.target)
    assert group.command.startswith("/bin/sh -c : xxx")
    assert len(group.command) <= sig.COMMAND_CHARS
    (outcome,) = sig.kill_tools(fake.session, found.target, grace=3.0)
    assert outcome.ok, outcome.detail
    assert token[:8] not in group.command + outcome.detail

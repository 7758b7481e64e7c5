"""Finding and killing exec processes, with real processes in a gateway-shaped tree.

``FakeGatewayTree`` starts a process titled ``openclaw-gateway`` whose "spawn broker"
child runs each command the way OpenClaw 2026.9.6 does: ``bash --noprofile --norc -c
"<snapshot>; export PATH…\\neval '…; unset OPENCLAW_PREPEND_PATH; <command>'"`` as a
process-group leader with ``OPENCLAW_SHELL=exec``. Look-alikes outside that tree must
never be touched.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from monitor.act import processes as pt
from monitor.act.processes import ExecShell
from monitor.redaction import redact_text

pytestmark = pytest.mark.timeout(60)
# A GitHub token: masked by its shape only with 16 characters after ``ghp_``.
GITHUB_PAT = "ghp_Zq9xR2mK7vB4nL1pW8sT3yU6iO0aE5dF"

BROKER = r"""
import json, os, subprocess, sys, time
shells = []
for command in json.loads(sys.argv[1]):
    script = ("if [ -r '/nonexistent/snapshot.sh' ]; then . '/nonexistent/snapshot.sh'; fi\n"
              "export PATH='/usr/bin:/bin'\n"
              "eval " + command)
    env = dict(os.environ, OPENCLAW_SHELL="exec")
    shells.append(subprocess.Popen(["/bin/bash", "--noprofile", "--norc", "-c", script],
                                   start_new_session=True, env=env))
print(json.dumps([shell.pid for shell in shells]), flush=True)
while True:
    try:
        os.waitpid(-1, 0)
    except ChildProcessError:
        time.sleep(0.1)
"""

GATEWAY = r"""
import subprocess, sys, time
broker = subprocess.Popen([sys.argv[3], "-c", sys.argv[1], sys.argv[2]])
while True:
    time.sleep(1)
"""


def eval_argument(command: str) -> str:
    """The single-quoted eval body OpenClaw writes (PATH fix-up, then the command)."""
    body = ('export PATH="${OPENCLAW_PREPEND_PATH}${PATH:+:$PATH}"; '
            f"unset OPENCLAW_PREPEND_PATH; {command}")
    return shlex.quote(body)


class FakeGatewayTree:
    def __init__(self, commands: list[str], state_dir: str) -> None:
        argv = ["openclaw-gateway", "-c", GATEWAY, BROKER,
                json.dumps([eval_argument(c) for c in commands]), sys.executable]
        self.gateway = subprocess.Popen(argv, executable=sys.executable, stdout=subprocess.PIPE,
                                        text=True, start_new_session=True,
                                        env={**os.environ, "OPENCLAW_STATE_DIR": state_dir})
        self.shell_pids = json.loads(self.gateway.stdout.readline())
        self.proc = psutil.Process(self.gateway.pid)
        deadline = time.monotonic() + 10
        while len(pt.exec_shells(self.proc)) < len(commands) or not all(
                len(shell.member_pids) > 1 for shell in pt.exec_shells(self.proc)):
            assert time.monotonic() < deadline, "fake exec shells did not start"
            time.sleep(0.05)

    def close(self) -> None:
        for proc in [self.proc, *self.proc.children(recursive=True)]:
            try:
                os.killpg(os.getpgid(proc.pid), signal.SIGKILL)
            except (OSError, psutil.Error):
                pass
        self.gateway.wait(5)


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def test_exec_command_is_recovered_from_the_real_shell_argv():
    argv = ["/bin/bash", "--noprofile", "--norc", "-c",
            "if [ -r 'x' ]; then . 'x'; fi\nexport PATH='/bin'\neval "
            + eval_argument("echo 'it''s' \"$HOME\"; sleep 1")]
    assert pt.exec_command(argv) == "echo 'it''s' \"$HOME\"; sleep 1"
    assert pt.exec_command(["sleep", "600"]) == "sleep 600"


def test_exec_command_is_recovered_from_a_shell_without_a_snapshot():
    """No snapshot, no ``eval``: the PATH fix-up leads the script itself."""
    body = shlex.split(eval_argument("echo b; sleep 310"))[0]
    assert pt.exec_command(["/bin/bash", "-c", body]) == "echo b; sleep 310"
    sandboxed = 'export PATH="${OPENCLAW_PREPEND_PATH}:$PATH"; unset OPENCLAW_PREPEND_PATH; ls'
    assert pt.exec_command(["/bin/sh", "-c", sandboxed]) == "ls"
    mentions = "echo 'unset OPENCLAW_PREPEND_PATH; ' && ls"
    assert pt.exec_command(["/bin/bash", "-c", mentions]) == mentions


@pytest.mark.parametrize("command", [
    'cd /tmp\neval "$(ssh-agent -s)"\nsleep 300', "sleep 301\neval 'sleep 300'",
    "eval 'sleep 300'", "echo a\neval ", "x\neval 'export PATH=\"${OPENCLAW_PREPEND_PATH}'"])
def test_an_eval_line_of_the_command_is_the_command_not_the_wrapper(command):
    """The wrapper's ``eval`` comes first; an ``eval`` line of the command itself (a common
    ``eval "$(ssh-agent -s)"``, or one written to read as another session's command) is part
    of the command, in both of the forms OpenClaw runs it in."""
    snapshot = ("if [ -r 'x' ]; then . 'x'; fi\nexport PATH='/bin'\neval "
                + eval_argument(command))
    assert pt.exec_command(["/bin/bash", "--noprofile", "--norc", "-c", snapshot]) == command
    bare = shlex.split(eval_argument(command))[0]
    assert pt.exec_command(["/bin/bash", "-c", bare]) == command


def test_exec_shells_lists_the_tree_and_not_the_lookalike(tree_factory, lookalike, tmp_path):
    tree = tree_factory("sleep 300 & sleep 301; wait")
    shells = pt.exec_shells(tree.proc)
    assert [shell.pid for shell in shells] == tree.shell_pids
    shell = shells[0]
    assert shell.command == "sleep 300 & sleep 301; wait"
    assert len(shell.member_pids) == 3 and shell.pid in shell.member_pids
    assert lookalike.pid not in {pid for s in shells for pid in s.member_pids}
    found = pt.find_gateway(state_dir=str(tmp_path / "state"))
    assert found is not None and found.pid == tree.proc.pid


def test_a_process_titled_like_the_gateway_inside_its_tree_is_not_taken_for_it(
        tree_factory, tmp_path):
    """An agent's command can name a process ``openclaw-gateway`` (``exec -a``); it runs in
    the gateway's tree with the gateway's environment, so neither the title nor the state
    dir tells them apart. A gateway-titled process below another one is not a gateway."""
    tree = tree_factory("(exec -a openclaw-gateway sleep 340) & sleep 341; wait")
    deadline = time.monotonic() + 10
    while not [proc for proc in tree.proc.children(recursive=True)
               if proc.cmdline()[:1] == ["openclaw-gateway"]]:
        assert time.monotonic() < deadline, "the subshell did not exec its impostor"
        time.sleep(0.05)                    # the subshell forks before it execs
    found = pt.find_gateway(state_dir=str(tmp_path / "state"))
    assert found is not None and found.pid == tree.proc.pid


def test_kill_ends_the_whole_group_and_nothing_else(tree_factory, lookalike):
    tree = tree_factory("sleep 300 & (sleep 303 &); sleep 301; wait", "sleep 305")
    target, bystander = pt.exec_shells(tree.proc)
    expected = ["sleep 300", "sleep 301", "sleep 303"]
    deadline = time.monotonic() + 10
    while True:  # the subshell forks before it execs `sleep 303`
        group = set(pt.group_snapshot(target.pid))
        commands = sorted(" ".join(proc.cmdline()) for proc in group if proc.pid != target.pid)
        if commands == expected or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert commands == expected, "the orphan is a member too"
    started = time.monotonic()
    outcome = pt.kill_shell(target.pid, target.create_time, tree.proc, grace=3.0)
    assert outcome.ok, outcome.detail
    assert time.monotonic() - started < 3.0, "SIGTERM should have been enough"
    assert set(outcome.signalled) >= {proc.pid for proc in group}
    assert not any(alive(proc.pid) for proc in group)
    assert all(alive(pid) for pid in bystander.member_pids), "another exec group was hit"
    assert alive(lookalike.pid) and all(alive(c.pid) for c in lookalike.children())
    assert alive(tree.proc.pid) and tree.proc.children(), "gateway or broker was hit"


def test_kill_escalates_to_sigkill_when_sigterm_is_ignored(tree_factory):
    tree = tree_factory("trap '' TERM; sleep 300; true")
    (shell,) = pt.exec_shells(tree.proc)
    started = time.monotonic()
    outcome = pt.kill_shell(shell.pid, shell.create_time, tree.proc, grace=0.5)
    assert outcome.ok, outcome.detail
    assert "then SIGKILL" in outcome.detail
    assert 0.5 <= time.monotonic() - started < 5
    assert not any(alive(pid) for pid in shell.member_pids)


def test_a_member_started_as_the_group_dies_is_killed_too(tree_factory):
    """A shell loop may fork its next command as the SIGTERM arrives (the seed case's
    ``until curl …; do …; sleep 1; done``): that member was never signalled, yet the kill
    must end it, not report it alive. Here the shell forks it from its TERM trap."""
    tree = tree_factory("trap 'sleep 307 & exit' TERM; sleep 300 & wait")
    (shell,) = pt.exec_shells(tree.proc)
    outcome = pt.kill_shell(shell.pid, shell.create_time, tree.proc, grace=1.0)
    assert outcome.ok, outcome.detail
    assert "then SIGKILL" in outcome.detail
    late = set(outcome.signalled) - set(shell.member_pids)
    assert late and not any(alive(pid) for pid in late), "a member forked late is alive"


def test_each_process_gets_one_sigterm(tree_factory, sigterms):
    """The group's signal reaches its members; signalling one again may run a shell's TERM
    trap twice (10 of 300 such kills forked the trap's command twice). A descendant that left
    the group is still signalled by itself."""
    tree = tree_factory("setsid sleep 309 & sleep 300 & wait")
    deadline = time.monotonic() + 10
    while len(away := [pid for pid in pt.exec_shells(tree.proc)[0].member_pids
                       if os.getpgid(pid) != tree.shell_pids[0]]) != 1:
        assert time.monotonic() < deadline, "setsid did not leave the group"
        time.sleep(0.05)
    (shell,) = pt.exec_shells(tree.proc)
    outcome = pt.kill_shell(shell.pid, shell.create_time, tree.proc, grace=3.0)
    assert outcome.ok, outcome.detail
    assert sigterms.count(("group", shell.pid)) == 1
    assert [entry for entry in sigterms if entry[0] == "pid"] == [("pid", away[0])]


def test_a_late_group_member_without_the_exec_mark_is_not_signalled(tree_factory):
    """Once the leader is gone its group id proves nothing by itself: a late member is
    killed only with the mark the exec shell's children inherit."""
    tree = tree_factory(  # the trap waits for env to have dropped the mark and exec'd sleep
        "trap 'env -u OPENCLAW_SHELL sleep 308 & sleep 0.3; exit' TERM; sleep 300 & wait")
    (shell,) = pt.exec_shells(tree.proc)
    outcome = pt.kill_shell(shell.pid, shell.create_time, tree.proc, grace=1.0)
    unmarked = [proc for proc in psutil.process_iter(["cmdline"])
                if proc.info["cmdline"] == ["sleep", "308"]]
    try:
        assert not outcome.ok and "still alive" in outcome.detail, outcome.detail
        assert unmarked and all(alive(proc.pid) for proc in unmarked)
        assert not {proc.pid for proc in unmarked} & set(outcome.signalled)
    finally:
        for proc in unmarked:
            proc.kill()


def test_lookalike_outside_the_tree_is_refused(tree_factory, lookalike):
    tree = tree_factory("sleep 300")
    outcome = pt.kill_shell(lookalike.pid, lookalike.create_time(), tree.proc)
    assert not outcome.ok and "not in the gateway's process tree" in outcome.detail
    assert outcome.signalled == []
    assert alive(lookalike.pid)


def test_a_reused_pid_is_refused(tree_factory):
    tree = tree_factory("sleep 300")
    (shell,) = pt.exec_shells(tree.proc)
    outcome = pt.kill_shell(shell.pid, shell.create_time - 10, tree.proc)
    assert not outcome.ok and "reused" in outcome.detail
    assert all(alive(pid) for pid in shell.member_pids)


def test_protected_processes_are_refused(tree_factory):
    tree = tree_factory("sleep 300")
    for pid in (1, os.getpid(), tree.proc.pid):
        create_time = psutil.Process(pid).create_time()
        outcome = pt.kill_shell(pid, create_time, tree.proc)
        assert not outcome.ok and "protected" in outcome.detail, pid
    broker = tree.proc.children()[0]
    outcome = pt.kill_shell(broker.pid, broker.create_time(), tree.proc)
    assert not outcome.ok and alive(broker.pid)


def test_a_non_leader_member_is_refused(tree_factory):
    tree = tree_factory("sleep 300; true")
    (shell,) = pt.exec_shells(tree.proc)
    child = next(pid for pid in shell.member_pids if pid != shell.pid)
    outcome = pt.kill_shell(child, psutil.Process(child).create_time(), tree.proc)
    assert not outcome.ok and "process group" in outcome.detail
    assert alive(child)


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to start another user's process")
def test_another_users_process_is_refused(tree_factory):
    tree = tree_factory("sleep 300")
    broker = tree.proc.children()[0]
    other = subprocess.Popen(["sleep", "306"], user=65534, start_new_session=True)
    try:
        outcome = pt.kill_shell(other.pid, psutil.Process(other.pid).create_time(), tree.proc)
        assert not outcome.ok and "another user" in outcome.detail
        assert alive(other.pid) and alive(broker.pid)
    finally:
        other.kill()
        other.wait(5)


def test_kill_stragglers_skips_processes_that_are_gone(tree_factory):
    tree = tree_factory("sleep 300; true")
    (shell,) = pt.exec_shells(tree.proc)
    snapshot = pt.group_snapshot(shell.pid)
    assert pt.kill_shell(shell.pid, shell.create_time, tree.proc).ok
    assert pt.kill_stragglers(snapshot, grace=0.2) == []


def record_exec_calls(era: str, state: Path, calls: list[tuple[str, ExecShell]]) -> None:
    """Write, for each ``(session key, shell)``, the session's exec call of the shell's
    command 0.2 s before the shell started, as OpenClaw's transcripts of ``era`` hold it."""
    from datetime import UTC, datetime

    from monitor.demo.sim.legacy_writer import LegacyWriter
    from monitor.demo.sim.sqlite_writer import SqliteAgentWriter

    def entry(key: str, shell: ExecShell) -> dict:
        return {"type": "message", "message": {
            "role": "assistant", "content": [{"type": "toolCall", "id": f"call-{key}",
                                              "name": "exec",
                                              "arguments": {"command": shell.command}}]}}

    if era == "sqlite":
        db = state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
        with SqliteAgentWriter(db) as writer:
            for key, shell in calls:
                writer.upsert_session(key, f"sid-{key}", {}, "running")
                writer.append_event(f"sid-{key}", entry(key, shell),
                                    created_at=int((shell.create_time - 0.2) * 1000))
        return
    writer = LegacyWriter(state / "agents" / "main" / "sessions")
    for n, (key, shell) in enumerate(calls):
        at = datetime.fromtimestamp(shell.create_time - 0.2, UTC)
        writer.upsert_session(key, {"sessionId": f"sid-{n}",
                                    "updatedAt": int(shell.create_time * 1000)})
        writer.append_event(f"sid-{n}", {**entry(key, shell), "timestamp": at.isoformat()})
    writer.close()


@pytest.mark.parametrize("era", ["sqlite", "legacy"])
def test_kill_candidates_are_the_sessions_own_shells_with_evidence(tree_factory, tmp_path, era):
    from monitor.act.controller import GatewayActionController
    from monitor.discovery import Discovered

    tree = tree_factory("sleep 307; true", "sleep 308; true")
    first, second = pt.exec_shells(tree.proc)
    record_exec_calls(era, tmp_path / "state",
                      [("agent:main:one", first), ("agent:main:two", second)])
    found = Discovered(str(tmp_path / "state"), None, {}, None, [], None)
    controller = GatewayActionController(found, None, gateway_pid=tree.proc.pid, env={})
    (candidate,) = controller.kill_candidates("agent:main:one")
    assert (candidate.pid, candidate.command, candidate.session_key) == (
        first.pid, "sleep 307; true", "agent:main:one")
    assert candidate.create_time == first.create_time
    assert "call-agent:main:one" in candidate.evidence
    assert controller.kill_candidates("agent:main:none") == []
    assert all(alive(pid) for pid in first.member_pids), "listing must not signal anything"


def test_hung_process_findings_for_a_quiet_exec_only(tree_factory, tmp_path):
    from monitor.act.controller import GatewayActionController
    from monitor.act.hung import HungProcessWatcher
    from monitor.config import load_config
    from monitor.demo.sim.sqlite_writer import SqliteAgentWriter
    from monitor.detect.engine import DetectionEngine
    from monitor.discovery import Discovered

    # the finding shows the command's first 120 characters: the token is cut 12 into it
    head = "until false; do sleep 1; done # "
    quiet_command = head + "." * (108 - len(head)) + GITHUB_PAT
    tree = tree_factory(quiet_command, "while true; do echo tick >/dev/null; sleep 0.05; done")
    quiet, busy = pt.exec_shells(tree.proc)
    db = tmp_path / "state" / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    with SqliteAgentWriter(db) as writer:
        for key, shell in (("agent:main:stuck", quiet), ("agent:main:busy", busy)):
            writer.upsert_session(key, f"sid-{key}", {}, "running")
            writer.append_event(f"sid-{key}", {"type": "message", "message": {
                "role": "assistant", "content": [{"type": "toolCall", "id": f"call-{key}",
                                                  "name": "exec",
                                                  "arguments": {"command": shell.command}}]}},
                                created_at=int(shell.create_time * 1000))
    config_path = tmp_path / "clawwatch.yaml"
    config_path.write_text("detection:\n"
                           "  hung_process: {warning_seconds: 2, critical_seconds: 4}\n")
    config = load_config(str(config_path), env={})
    engine = DetectionEngine(config)
    controller = GatewayActionController(Discovered(str(tmp_path / "state"), None, {}, None, [],
                                                    None), config, gateway_pid=tree.proc.pid,
                                         env={})
    offset = [0.0]
    watcher = HungProcessWatcher(controller, engine, config, interval=0,
                                 clock=lambda: time.time() + offset[0],
                                 session_id_of=lambda key: f"sid-{key}")
    assert watcher.scan() == []
    for expected in ("warning", "critical"):
        time.sleep(0.3)                          # the busy shell writes in real time
        offset[0] += 2.2
        findings = watcher.scan()
        assert [(f.session_key, f.detector, f.level, f.tool) for f in findings] == [
            ("agent:main:stuck", "hung_process", expected, "exec")], findings
        assert findings[0].session_id == "sid-agent:main:stuck"
        assert str(quiet.pid) in findings[0].message and "until false" in findings[0].message
        assert GITHUB_PAT[:12] not in redact_text(findings[0].message)
        assert findings[0].count >= 2
    time.sleep(0.3)
    offset[0] += 10
    assert watcher.scan() == [], "each level is reported once per process"


def update_frame(key: str, shell: pt.ExecShell, tail: str) -> dict:
    """An ``agent`` tool-update event as the gateway sends it for a running exec."""
    return {"type": "event", "event": "agent", "payload": {
        "runId": f"run-{key}", "sessionKey": key, "stream": "tool", "data": {
            "phase": "update", "name": "exec", "toolCallId": f"call-{key}",
            "partialResult": {"details": {"status": "running", "pid": shell.pid,
                                          "sessionId": "tidy-pine",
                                          "startedAt": int(shell.create_time * 1000),
                                          "tail": tail}}}}}


def test_repeating_the_same_output_is_hung_but_new_lines_are_progress(tree_factory, tmp_path):
    from monitor.act.controller import GatewayActionController
    from monitor.act.hung import HungProcessWatcher
    from monitor.config import load_config
    from monitor.detect.engine import DetectionEngine
    from monitor.discovery import Discovered

    tree = tree_factory('until false; do echo "Waiting..." >/dev/null; sleep 0.05; done',
                        'while true; do echo "step $RANDOM" >/dev/null; sleep 0.05; done')
    seed, build = pt.exec_shells(tree.proc)
    config_path = tmp_path / "clawwatch.yaml"
    config_path.write_text("detection:\n"
                           "  hung_process: {warning_seconds: 2, critical_seconds: 60}\n")
    config = load_config(str(config_path), env={})
    controller = GatewayActionController(Discovered(str(tmp_path / "none"), None, {}, None, [],
                                                    None), config, gateway_pid=tree.proc.pid,
                                         env={})
    for n in range(1, 6):
        controller.tracker.feed(update_frame("agent:main:seed", seed, "Waiting...\n" * n))
        controller.tracker.feed(update_frame(
            "agent:main:build", build, "".join(f"compiling unit-{chr(97 + i)}.c\n"
                                               for i in range(n))))
    assert controller.tracker.owner(seed.pid).repetitive
    assert not controller.tracker.owner(build.pid).repetitive
    offset = [0.0]
    watcher = HungProcessWatcher(controller, DetectionEngine(config), config, interval=0,
                                 clock=lambda: time.time() + offset[0])
    assert watcher.scan() == []
    time.sleep(0.3)                              # both keep writing in real time
    offset[0] += 2.5
    findings = watcher.scan()
    assert [(f.session_key, f.level) for f in findings] == [("agent:main:seed", "warning")]
    assert "repeated the same output" in findings[0].message


def test_a_shell_that_ends_between_the_check_and_the_kill_is_gone_not_a_failure(monkeypatch):
    """The abort ends a run's shells while clawwatch goes to kill them: a leader that is
    gone by the time its children are listed is reported as gone, which a kill accepts."""
    proc = subprocess.Popen(["sleep", "30"])
    leader = psutil.Process(proc.pid)
    proc.kill()
    proc.wait(5)
    monkeypatch.setattr(pt, "check_killable", lambda pid, create_time, gateway: leader)
    outcome = pt.kill_shell(proc.pid, leader.create_time(), psutil.Process())
    assert not outcome.ok and outcome.gone and outcome.detail.endswith("is gone")

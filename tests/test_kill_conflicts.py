"""``stop --kill`` kills only on evidence that agrees, with real processes in a gateway tree.

Each test starts a gateway-shaped tree (``FakeGatewayTree``: ``openclaw-gateway`` → broker →
one exec-marked ``bash -c …`` group per command), writes what OpenClaw's agent DB would hold
for the sessions (exec calls, tool results naming pids), and runs the kill. A shell is
killed only when every piece of evidence naming it names the session being stopped; a pid
in a transcript counts only for a process started inside that call's window; nothing
outside the gateway's tree is ever touched, whatever the records say.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import time
from pathlib import Path

import pytest
from test_act_gateway import TOKEN, FakeGateway
from test_act_processes import GITHUB_PAT, FakeGatewayTree, alive

from monitor.act import controller as ctl
from monitor.act import evidence as ev
from monitor.act import processes as pt
from monitor.act.cli_stop import stop_main
from monitor.act.controller import GatewayActionController
from monitor.act.runs import RunTracker
from monitor.demo.sim.sqlite_writer import SqliteAgentWriter
from monitor.discovery import Discovered

pytestmark = pytest.mark.timeout(90)

A_KEY, B_KEY = "agent:main:a", "agent:main:b"


@pytest.fixture
def state(tmp_path) -> Path:
    return tmp_path / "state"


@pytest.fixture
def gateway():
    server = FakeGateway("ok")
    yield server
    server.close()


@pytest.fixture(autouse=True)
def short_attribution_wait(monkeypatch):
    monkeypatch.setattr(ctl, "ATTRIBUTION_WAIT_SECONDS", 0.3)


class Transcripts:
    """The agent DB the way the gateway writes it: per session an exec call (assistant
    ``toolCall``) and, optionally, its result naming a pid (``details.pid``)."""

    def __init__(self, state: Path) -> None:
        self.writer = SqliteAgentWriter(state / "agents" / "main" / "agent" /
                                        "openclaw-agent.sqlite")
        self.sessions: set[str] = set()

    def _session(self, key: str) -> str:
        sid = f"sid-{key}"
        if key not in self.sessions:
            self.writer.upsert_session(key, sid, {"sessionId": sid}, "running")
            self.sessions.add(key)
        return sid

    def call(self, key: str, call_id: str, command: str, at: float) -> None:
        self.raw(key, {"type": "message", "message": {
            "role": "assistant", "content": [{"type": "toolCall", "id": call_id,
                                              "name": "exec",
                                              "arguments": {"command": command}}]}}, at)

    def result(self, key: str, call_id: str, pid, at: float) -> None:
        self.raw(key, {"type": "message", "message": {
            "role": "toolResult", "toolCallId": call_id, "toolName": "exec",
            "content": [{"type": "text", "text": f"Command still running (pid {pid})"}],
            "details": {"status": "running", "pid": pid, "sessionId": f"proc-{call_id}"}}},
                 at)

    def raw(self, key: str, event: dict, at: float) -> None:
        self.writer.append_event(self._session(key), event, created_at=int(at * 1000))

    def close(self) -> None:
        self.writer.close()


def group_pids(shell: pt.ExecShell) -> list[int]:
    return [proc.pid for proc in pt.group_snapshot(shell.pid)]


def stop_kill(key: str, tree: FakeGatewayTree, gateway: FakeGateway, tmp_path,
              *, as_json: bool = True) -> tuple[int, str, str, list[dict]]:
    """``clawwatch stop KEY --kill`` (``--json``); returns (exit code, stdout, stderr, the
    audit log's entries)."""
    args = argparse.Namespace(session_key=key, kill=True, method=None,
                              state_dir=str(tmp_path / "state"), profile=None, log=None,
                              gateway=gateway.url, config=None, json=as_json, timeout=1.0)
    env = {"HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "xdg"),
           "OPENCLAW_GATEWAY_TOKEN": TOKEN, "PATH": "/usr/bin:/bin",
           "OPENCLAW_GATEWAY_PID": str(tree.proc.pid)}
    out, err = io.StringIO(), io.StringIO()
    code = stop_main(args, out=out, err=err, env=env)
    audit_path = tmp_path / "xdg" / "clawwatch" / "audit.jsonl"
    audit = [json.loads(line) for line in audit_path.read_text().splitlines()] \
        if audit_path.exists() else []
    return code, out.getvalue(), err.getvalue(), audit


def controller_for(tree: FakeGatewayTree, gateway: FakeGateway, state: Path,
                   tracker: RunTracker | None = None) -> GatewayActionController:
    return GatewayActionController(Discovered(str(state), None, {}, None, [], gateway.url,
                                              TOKEN), None,
                                   gateway_pid=tree.proc.pid, env={}, url=gateway.url,
                                   client=None, tracker=tracker, kill_grace=1.0,
                                   rpc_timeout=1.0)


# ---------------------------------------------------------------------------- tests

def test_a_pid_named_by_b_for_as_shell_is_ambiguous_and_stop_b_kill_leaves_it(
        tree_factory, gateway, state, tmp_path):
    """The issue's case: shell A is a's by its command text, and a tool result of session b
    names A's pid. ``stop b --kill`` kills B only; A is reported as ambiguous (with both
    reasons) in the kill candidates, the JSON record, the text output and the audit log.
    A's command shows there in its first 60 characters, a token cut 12 into it masked."""
    head = "sleep 311; true # "
    tree = tree_factory(head + "." * (48 - len(head)) + GITHUB_PAT, "sleep 312; true")
    shell_a, shell_b = pt.exec_shells(tree.proc)
    a_members, b_members = group_pids(shell_a), group_pids(shell_b)
    db = Transcripts(state)
    db.call(A_KEY, "call-a", shell_a.command, shell_a.create_time - 0.2)
    db.call(B_KEY, "call-b", shell_b.command, shell_b.create_time - 0.2)
    db.call(B_KEY, "call-b-bg", "sleep 600", shell_a.create_time - 0.1)
    db.result(B_KEY, "call-b-bg", shell_a.pid, shell_a.create_time + 0.5)
    db.close()

    code, out, err, audit = stop_kill(B_KEY, tree, gateway, tmp_path)

    assert all(alive(pid) for pid in a_members), f"A was killed: {out} {err}"
    assert not any(alive(pid) for pid in b_members), (out, err)
    assert code == 0, err
    record = json.loads(out.splitlines()[0])
    assert record["ok"] is True and set(b_members) <= set(record["pids"])
    assert not set(a_members) & set(record["pids"])
    (conflict,) = record["ambiguous"]
    assert conflict["pid"] == shell_a.pid and conflict["ambiguous"] is True
    assert conflict["create_time"] == shell_a.create_time
    reasons = " | ".join(conflict["reasons"])
    assert "transcript pid names agent:main:b" in reasons and "call-b-bg" in reasons
    assert "command text names agent:main:a" in reasons and "call-a" in reasons
    assert f"pid {shell_a.pid}" in record["detail"] and "evidence conflicts" in record["detail"]
    assert GITHUB_PAT[:12] not in out + json.dumps(audit)
    result = audit[-1]
    assert result["event"] == "result" and result["ambiguous"][0]["pid"] == shell_a.pid
    assert not set(a_members) & set(result["pids"])

    # the dashboard's kill dialog list: A is there, flagged, for either session
    controller = controller_for(tree, gateway, state)
    try:
        (candidate,) = controller.kill_candidates(A_KEY)
        assert candidate.pid == shell_a.pid and candidate.ambiguous
        assert candidate.session_key is None and len(candidate.reasons) == 2
        (candidate,) = controller.kill_candidates(B_KEY)     # B is gone
        assert candidate.pid == shell_a.pid and candidate.ambiguous
    finally:
        controller.close()

    # text output says the same, and a second kill still leaves A alone
    code, out, err, _ = stop_kill(A_KEY, tree, gateway, tmp_path, as_json=False)
    assert code == 0, err
    assert f"left alone, the evidence conflicts: pid {shell_a.pid}" in out
    assert GITHUB_PAT[:12] not in out
    assert all(alive(pid) for pid in a_members)


def test_huge_ids_in_the_records_are_cut_in_the_reasons_of_a_conflict(
        tree_factory, gateway, state, tmp_path):
    """A transcript is any JSON: a call id and a process session of 200,000 characters (an
    escape sequence in front) reach the reasons of a conflicting shell cut and shown safely,
    so the text line and the JSON record of ``stop --kill`` stay small."""
    tree = tree_factory("sleep 321; true", "sleep 322; true")
    shell_a, shell_b = pt.exec_shells(tree.proc)
    huge = "\x1b]0;x\x07" + "y" * 200_000
    db = Transcripts(state)
    db.call(A_KEY, "call-a" + huge, shell_a.command, shell_a.create_time - 0.2)
    db.call(B_KEY, "call-b", shell_b.command, shell_b.create_time - 0.2)
    db.call(B_KEY, "call-b-bg" + huge, "sleep 600", shell_a.create_time - 0.1)
    db.raw(B_KEY, {"type": "message", "message": {
        "role": "toolResult", "toolCallId": "call-b-bg" + huge, "toolName": "exec",
        "details": {"status": "running", "pid": shell_a.pid, "sessionId": "proc" + huge}}},
           shell_a.create_time + 0.5)
    db.close()

    code, out, err, audit = stop_kill(B_KEY, tree, gateway, tmp_path, as_json=False)
    assert code == 0, err
    assert f"left alone, the evidence conflicts: pid {shell_a.pid}" in out
    assert len(out) < 2000 and "\x1b" not in out
    assert len(json.dumps(audit)) < 5000
    assert alive(shell_a.pid)
    code, out, err, audit = stop_kill(A_KEY, tree, gateway, tmp_path)
    (conflict,) = json.loads(out.splitlines()[0])["ambiguous"]
    assert conflict["pid"] == shell_a.pid and len(conflict["reasons"]) == 2
    assert len(out) < 3000 and len(json.dumps(audit[-1])) < 3000


def test_a_huge_command_of_a_conflicting_shell_is_cut_in_the_json_record(
        tree_factory, gateway, state, tmp_path):
    """A conflicting shell's command of 100,000 characters (an argv holds megabytes) is
    listed in ``stop --kill --json`` and the audit log cut to 1,000 characters."""
    tree = tree_factory("sleep 331; true # " + "z" * 100_000, "sleep 332; true")
    shell_a, _ = pt.exec_shells(tree.proc)
    db = Transcripts(state)
    db.call(A_KEY, "call-a", shell_a.command, shell_a.create_time - 0.2)
    db.call(B_KEY, "call-b-bg", "sleep 600", shell_a.create_time - 0.1)
    db.result(B_KEY, "call-b-bg", shell_a.pid, shell_a.create_time + 0.5)
    db.close()

    code, out, err, audit = stop_kill(B_KEY, tree, gateway, tmp_path)
    assert code == 0, err
    (conflict,) = json.loads(out.splitlines()[0])["ambiguous"]
    assert conflict["pid"] == shell_a.pid and conflict["command"].startswith("sleep 331")
    assert len(conflict["command"]) <= 1000
    assert len(out) < 5000 and len(json.dumps(audit)) < 5000
    assert alive(shell_a.pid)


def test_a_closer_identical_call_of_another_session_does_not_take_a_shell(
        tree_factory, gateway, state, tmp_path):
    """Both sessions ran the same command: a's call was recorded 3 s before its shell (a
    second call of an assistant message waits for the first), b's just before its own, which
    is just after a's started. Nothing tells the shells apart but timing, which does not
    prove it: ``stop b --kill`` kills neither and says both are ambiguous."""
    tree = tree_factory("sleep 313; true", "sleep 313; true")
    shell_a, shell_b = pt.exec_shells(tree.proc)
    members = group_pids(shell_a) + group_pids(shell_b)
    db = Transcripts(state)
    db.call(A_KEY, "call-a", shell_a.command, shell_a.create_time - 3.0)
    db.call(B_KEY, "call-b", shell_b.command, shell_b.create_time - 0.1)
    db.close()

    _, out, err, _ = stop_kill(B_KEY, tree, gateway, tmp_path)

    assert all(alive(pid) for pid in members), f"a shell was killed: {out} {err}"
    record = json.loads(out.splitlines()[0])
    assert {conflict["pid"] for conflict in record["ambiguous"]} == {shell_a.pid, shell_b.pid}
    assert all("tied with another session's identical call" in " ".join(conflict["reasons"])
               for conflict in record["ambiguous"])


def test_a_pid_named_for_a_process_started_before_the_call_is_not_the_sessions(
        tree_factory, gateway, state, tmp_path):
    """b's result names A's pid, but A had already been running for 8 s when b made that
    call: the call cannot have started it, so it is not evidence and A survives."""
    tree = tree_factory("sleep 313; true")
    (shell_a,) = pt.exec_shells(tree.proc)
    members = group_pids(shell_a)
    db = Transcripts(state)
    db.call(B_KEY, "call-late", "sleep 600", shell_a.create_time + 8)
    db.result(B_KEY, "call-late", shell_a.pid, shell_a.create_time + 9)
    db.close()

    _, out, err, _ = stop_kill(B_KEY, tree, gateway, tmp_path)
    assert all(alive(pid) for pid in members), f"A was killed: {out} {err}"
    record = json.loads(out.splitlines()[0])
    assert record["pids"] == [] and "not proven to be this session's" in record["detail"]
    controller = controller_for(tree, gateway, state)
    try:
        assert controller.kill_candidates(B_KEY) == []
    finally:
        controller.close()


def test_a_reused_pid_named_in_a_transcript_is_not_killed(tree_factory, gateway, state,
                                                          tmp_path):
    """b's result named pid P 95 s before the process now holding P started: that was an
    earlier process (it exited and the pid was handed out again). The create time of the
    current holder is after the result, so it is not b's."""
    tree = tree_factory("sleep 314; true")
    (shell_a,) = pt.exec_shells(tree.proc)
    members = group_pids(shell_a)
    db = Transcripts(state)
    db.call(B_KEY, "call-old", "sleep 600", shell_a.create_time - 100)
    db.result(B_KEY, "call-old", shell_a.pid, shell_a.create_time - 95)
    db.close()

    _, out, err, _ = stop_kill(B_KEY, tree, gateway, tmp_path)
    assert all(alive(pid) for pid in members), f"the pid's new holder was killed: {out} {err}"
    assert json.loads(out.splitlines()[0])["pids"] == []


def test_a_reused_pid_named_by_a_gateway_tool_event_is_not_killed(tree_factory, gateway,
                                                                 state):
    """The gateway reported pid P for b's exec (no ``startedAt``) 90 s before the process now
    holding P started: an older process. It is not b's and is not killed."""
    tree = tree_factory("sleep 315; true")
    (shell_a,) = pt.exec_shells(tree.proc)
    members = group_pids(shell_a)
    tracker = RunTracker(clock=lambda: shell_a.create_time - 90)
    tracker.feed({"type": "event", "event": "agent", "payload": {
        "runId": "run-b", "sessionKey": B_KEY, "stream": "tool", "data": {
            "phase": "update", "name": "exec", "toolCallId": "call-b",
            "partialResult": {"details": {"status": "running", "pid": shell_a.pid,
                                          "tail": "x"}}}}})
    controller = controller_for(tree, gateway, state, tracker)
    try:
        result = controller.kill(B_KEY)
        assert all(alive(pid) for pid in members), f"the pid's new holder was killed: {result}"
        assert result.pids == ()
        assert controller.kill_candidates(B_KEY) == []
    finally:
        controller.close()


def test_pids_outside_the_tree_and_malformed_records_are_ignored(tree_factory, gateway, state,
                                                                 lookalike):
    """b's records name the look-alike outside the tree, PID 1, the gateway, its broker,
    this process, and pids that are huge, negative, strings, floats, booleans, in rows
    that are themselves malformed. None of it crashes the kill or touches anything but
    b's own shell B (proven by its command text)."""
    tree = tree_factory("sleep 316; true", "sleep 317; true")
    shell_a, shell_b = pt.exec_shells(tree.proc)
    a_members, b_members = group_pids(shell_a), group_pids(shell_b)
    broker = tree.proc.children()[0]
    outsiders = [lookalike, *lookalike.children(), tree.proc, broker]
    now = time.time()
    db = Transcripts(state)
    db.call(A_KEY, "call-a", shell_a.command, shell_a.create_time - 0.2)
    db.call(B_KEY, "call-b", shell_b.command, shell_b.create_time - 0.2)
    bad_pids = [lookalike.pid, 1, 0, tree.proc.pid, broker.pid, os.getpid(), os.getppid(),
                2 ** 64, 10 ** 40, -shell_a.pid, -7, str(shell_a.pid), float(shell_a.pid),
                True, None, [shell_a.pid], {"pid": shell_a.pid}]
    for n, pid in enumerate(bad_pids):
        db.call(B_KEY, f"call-bad-{n}", "sleep 600", now - 1)
        db.result(B_KEY, f"call-bad-{n}", pid, now)
    for n, message in enumerate([
            {"role": "toolResult", "toolCallId": ["call-bad-0"], "details": {"pid": 5}},
            {"role": "toolResult", "toolCallId": {"id": "x"}, "details": {"pid": 5}},
            {"role": "toolResult", "toolCallId": "call-bad-0", "details": [shell_a.pid]},
            {"role": "assistant", "content": 5},
            {"role": "assistant", "content": "exec"},
            {"role": "assistant", "content": [{"type": "toolCall", "name": "exec",
                                               "id": "call-x", "arguments": ["ls"]}]},
            "not a message", None, 12]):
        db.raw(B_KEY, {"type": "message", "message": message}, now + n / 100)
    db.close()
    tracker = RunTracker()
    for n, pid in enumerate([lookalike.pid, tree.proc.pid, broker.pid, os.getpid(), 2 ** 64]):
        tracker.feed({"type": "event", "event": "agent", "payload": {
            "runId": "run-b", "sessionKey": B_KEY, "stream": "tool", "data": {
                "phase": "update", "name": "exec", "toolCallId": f"call-t{n}",
                "partialResult": {"details": {"status": "running", "pid": pid}}}}})

    controller = controller_for(tree, gateway, state, tracker)
    try:
        candidates = controller.kill_candidates(B_KEY)
        assert [(c.pid, c.ambiguous) for c in candidates] == [(shell_b.pid, False)]
        result = controller.kill(B_KEY)
    finally:
        controller.close()
    assert all(alive(proc.pid) for proc in outsiders), "something outside b's shell was hit"
    assert all(alive(pid) for pid in a_members), "a's shell was hit"
    assert not any(alive(pid) for pid in b_members), result
    assert result.ok, result
    assert set(result.pids) == set(b_members) and result.ambiguous == ()


def test_many_conflicting_shells_and_claims_keep_the_kill_line_and_its_records_short(
        tree_factory, gateway, state, tmp_path):
    """A state dir can name a shell by any number of sessions' identical calls: 7 shells,
    each called by 40 sessions (b among them) in its window. Every shell is left alone;
    the text line lists 5 of them and counts the rest, each with its first reasons and a
    count of the others, and the JSON record and the audit log keep a bounded number of
    reasons per shell, never all 280."""
    tree = tree_factory(*(f"sleep {330 + n}; true" for n in range(7)))
    shells = pt.exec_shells(tree.proc)
    db = Transcripts(state)
    for number, shell in enumerate(shells):
        for other in range(39):
            db.call(f"agent:main:s{other}", f"call-{number}-{other}", shell.command,
                    shell.create_time - 0.2)
        db.call(B_KEY, f"call-b-{number}", shell.command, shell.create_time - 0.2)
    db.close()

    code, out, err, _ = stop_kill(B_KEY, tree, gateway, tmp_path, as_json=False)
    assert code == 0, err
    assert all(alive(shell.pid) for shell in shells)
    assert "7 exec shell(s) left alone, the evidence conflicts: " in out
    assert "and 2 more shells" in out and out.count("more pieces of evidence") == 5
    assert len(out) < 6000, len(out)

    code, out, err, audit = stop_kill(B_KEY, tree, gateway, tmp_path)
    record = json.loads(out.splitlines()[0])
    assert sorted(c["pid"] for c in record["ambiguous"]) == sorted(s.pid for s in shells)
    for conflict in record["ambiguous"]:
        assert len(conflict["reasons"]) == ev.SHOWN_REASONS + 1
        assert conflict["reasons"][-1] == \
            f"and {40 - ev.SHOWN_REASONS} more pieces of evidence"
    assert len(json.dumps(audit[-1])) < 40_000

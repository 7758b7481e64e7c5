"""Hostile files never hang, spin or flood.

A FIFO, a device (``/dev/zero``), a socket or a directory where clawwatch expects a file
(a transcript, ``sessions.json``, a ``sessionFile`` target, the gateway log, the agent
SQLite DB or its ``-wal``; directly or through a symlink) is refused with one error naming
the path and what it is, and the good sessions beside it are read as usual; so is a file
whose size says 0 while it holds data (``/proc/self/status``), which would otherwise be read
again from its start on every poll and never let ``replay`` end. Every command
ends within 2 s of SIGTERM / SIGINT (``q`` for the dashboard), also during a long first
catch-up. 100,000 quiet transcripts cost next to nothing at rest and give one notice line,
not 100,000.

The command-line cases run ``python -m monitor`` as a child process with real signals (the
dashboard in a pseudo-terminal); they synchronise on what the child prints or opens, not on
sleeps.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import signal
import socket
import sqlite3
import stat
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

import psutil
import pytest
from chaos_writer import AGENT_DDL, assistant_tool_call, dumps, session_header

from monitor.events import SourceError, ToolCall
from monitor.sources import legacy
from monitor.sources.gateway_log import GatewayLogSource
from monitor.sources.legacy import LegacySessionsSource
from monitor.sources.regular import NotRegularFile, open_regular, read_regular
from monitor.sources.sqlite_agent import SqliteAgentSource
from monitor.sources.tail import FileFollower
from monitor.sources.wake import Waker

REPO = Path(__file__).resolve().parent.parent
EXIT_SECONDS = 2.0
#: The count in an aggregated notice ("... : 84693 files (e.g. a.jsonl, ...)").
AGGREGATED_COUNT = re.compile(r"(\d+) files \(e\.g\.")
GOOD_CALLS = {"aaaaaaaa-0000-4000-8000-000000000001": 3,
              "aaaaaaaa-0000-4000-8000-000000000002": 5}


# ----------------------------------------------------------------------------- building


def write_transcript(path: Path, sid: str, calls: int) -> None:
    lines = [dumps(session_header(sid))]
    lines += [dumps(assistant_tool_call(f"{sid}-c{n}", n)) for n in range(calls)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_index(sessions: Path, entries: dict[str, dict]) -> None:
    (sessions / "sessions.json").write_text(json.dumps(entries), encoding="utf-8")


def good_agent(state: Path) -> Path:
    """``agents/main``: two sessions with a known number of tool calls."""
    sessions = state / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    for sid, calls in GOOD_CALLS.items():
        write_transcript(sessions / f"{sid}.jsonl", sid, calls)
    write_index(sessions, {f"agent:main:{sid[-1]}": {"sessionId": sid,
                                                      "updatedAt": 1_700_000_000_000}
                           for sid in GOOD_CALLS})
    return sessions


def bad_sessions(state: Path) -> Path:
    sessions = state / "agents" / "bad" / "sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    return sessions


def hostile(case: str, state: Path, tmp: Path) -> tuple[str, str, list[str]]:
    """Set up ``case`` under ``state``; returns (the refused path, what it is, extra argv)."""
    if case == "fifo-transcript":
        path = bad_sessions(state) / "bbbbbbbb-0000-4000-8000-000000000000.jsonl"
        os.mkfifo(path)
        return str(path), "FIFO", []
    if case == "fifo-sessions-json":
        path = bad_sessions(state) / "sessions.json"
        os.mkfifo(path)
        return str(path), "FIFO", []
    if case == "fifo-session-file":
        target = tmp / "elsewhere.jsonl"
        os.mkfifo(target)
        write_index(bad_sessions(state), {"agent:bad:x": {"sessionId": "x",
                                                          "sessionFile": str(target)}})
        return str(target), "FIFO", []
    if case == "dev-zero-session-file":
        write_index(bad_sessions(state), {"agent:bad:z": {"sessionId": "z",
                                                          "sessionFile": "/dev/zero"}})
        return "/dev/zero", "character device", []
    if case == "symlink-to-dev-zero":
        path = bad_sessions(state) / "zero.jsonl"
        os.symlink("/dev/zero", path)
        return str(path), "character device", []
    if case == "fifo-gateway-log":        # named by logging.file (--log FIFO is bad setup)
        path = tmp / "openclaw-2026-01-01.log"
        os.mkfifo(path)
        (state / "openclaw.json").write_text(json.dumps({"logging": {"file": str(path)}}))
        return str(path), "FIFO", []
    if case == "fifo-agent-sqlite":
        agent = state / "agents" / "bad" / "agent"
        agent.mkdir(parents=True)
        path = agent / "openclaw-agent.sqlite"
        os.mkfifo(path)
        return str(path), "FIFO", []
    if case == "fifo-agent-sqlite-wal":
        agent = state / "agents" / "bad" / "agent"
        agent.mkdir(parents=True)
        path = agent / "openclaw-agent.sqlite"
        conn = sqlite3.connect(path)
        conn.executescript(AGENT_DDL)
        conn.close()
        os.mkfifo(str(path) + "-wal")
        return str(path) + "-wal", "FIFO", []
    raise AssertionError(case)


CASES = ["fifo-transcript", "fifo-sessions-json", "fifo-session-file", "dev-zero-session-file",
         "symlink-to-dev-zero", "fifo-gateway-log", "fifo-agent-sqlite",
         "fifo-agent-sqlite-wal"]


def child_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENCLAW_", "CLAWWATCH_")) or k == "CLAWWATCH_LOG_DIRS"}
    env.update(HOME=str(home), TMPDIR=str(home), XDG_STATE_HOME=str(home / "xdg-state"),
               XDG_CONFIG_HOME=str(home / "xdg-config"), PYTHONUNBUFFERED="1")
    return env


def clawwatch(*args: str) -> list[str]:
    return [sys.executable, "-m", "monitor", *args]


# ----------------------------------------------------------------------------- the helper


def test_open_regular_refuses_fifos_devices_sockets_and_directories(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    sock_path = tmp_path / "sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock_path))
    link = tmp_path / "link"
    os.symlink("/dev/zero", link)
    regular = tmp_path / "file"
    regular.write_bytes(b"data")
    try:
        for path, what in ((fifo, "a FIFO"), ("/dev/zero", "a character device"),
                           (link, "a character device"), (tmp_path, "a directory")):
            with pytest.raises(NotRegularFile) as refused:
                open_regular(str(path))
            assert refused.value.what == what and str(path) in str(refused.value)
        with pytest.raises(OSError):        # a socket cannot even be opened
            open_regular(str(sock_path))
        assert read_regular(str(regular)) == b"data"
    finally:
        server.close()


def test_follower_refuses_a_fifo_once_and_reads_the_regular_file_that_replaces_it(tmp_path):
    path = tmp_path / "t.jsonl"
    os.mkfifo(path)
    follower = FileFollower(str(path))
    for _ in range(5):
        assert follower.poll() == []
    [notice] = follower.take_notices()
    assert notice.error and "not a regular file (a FIFO)" in notice.message
    assert follower.open_descriptors == 0 and not follower.changed()
    os.unlink(path)
    path.write_bytes(b"one\n")
    assert follower.changed()
    assert [line.data for line in follower.poll()] == [b"one"]
    follower.close()


# ----------------------------------------------------------------------------- replay


def replay_json(state: Path, home: Path, *extra: str) -> dict:
    """The document of ``replay --json`` of ``state``, which must end with exit 0."""
    result = subprocess.run(clawwatch("replay", "--state-dir", str(state), "--json", *extra),
                            capture_output=True, text=True, timeout=30, cwd=str(REPO),
                            env=child_env(home))
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout)


def good_sessions_read(document: dict) -> dict:
    """The source of ``agents/main`` in a replay ``document``, once its good sessions are
    found read in full."""
    tool_calls = {s["session_id"]: s["tool_calls"] for s in document["sessions"]}
    assert {sid: tool_calls.get(sid) for sid in GOOD_CALLS} == GOOD_CALLS
    [main] = [s for s in document["sources"]
              if s["kind"] == "jsonl" and "/agents/main/" in s["path"]]
    assert main["events"] == sum(GOOD_CALLS.values()) * 2 + 2
    return main


@pytest.mark.parametrize("case", CASES)
def test_replay_refuses_a_hostile_file_and_reads_the_good_sessions(tmp_path, case):
    state = tmp_path / "state"
    good_agent(state)
    refused, what, extra = hostile(case, state, tmp_path)
    started = time.monotonic()
    document = replay_json(state, tmp_path, *extra)
    assert time.monotonic() - started < 20
    main = good_sessions_read(document)
    assert main["errors"] == 0
    samples = [e for s in document["sources"] for e in s["error_samples"]]
    named = [e for e in samples if refused in e["path"] + " " + e["message"]]
    assert len(named) == 1, samples
    assert f"not a regular file (a {what})" in named[0]["message"]


# ------------------------------------------------------------------- watch --headless


class Child:
    """A ``watch --headless --json`` child whose stdout lines are collected by a thread."""

    def __init__(self, argv: list[str], home: Path) -> None:
        self.lines: list[str] = []
        self.changed = threading.Condition()
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     cwd=str(REPO), env=child_env(home), text=True)
        self.stderr: list[str] = []
        threading.Thread(target=self._read, args=(self.proc.stdout, self.lines),
                         daemon=True).start()
        threading.Thread(target=self._read, args=(self.proc.stderr, self.stderr),
                         daemon=True).start()

    def _read(self, stream, into: list[str]) -> None:
        for line in stream:
            with self.changed:
                into.append(line)
                self.changed.notify_all()

    def wait_for(self, predicate, seconds: float, what: str) -> None:
        with self.changed:
            ok = self.changed.wait_for(lambda: predicate(self.lines) or
                                       self.proc.poll() is not None, seconds)
        assert ok and self.proc.poll() is None, (
            f"{what}: not seen within {seconds}s; stdout {self.lines[-5:]}, "
            f"stderr {''.join(self.stderr)[-2000:]}")

    def stop_within(self, signum: int, seconds: float = EXIT_SECONDS) -> float:
        started = time.monotonic()
        self.proc.send_signal(signum)
        try:
            code = self.proc.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"still running {seconds}s after signal {signum}") from None
        took = time.monotonic() - started
        assert code == 0, (code, "".join(self.stderr)[-2000:])
        return took

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def refusal_records(lines: list[str]) -> list[dict]:
    records = [json.loads(line) for line in lines if line.startswith("{")]
    return [r for r in records if "not a regular file" in r.get("message", "")]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_watch_headless_exits_within_2s_of_a_signal_beside_hostile_files(tmp_path, signum):
    state = tmp_path / "state"
    good_agent(state)
    refused = [hostile(case, state, tmp_path)[0] for case in
               ("fifo-transcript", "dev-zero-session-file")]
    fifo_db = state / "agents" / "db" / "agent" / "openclaw-agent.sqlite"
    fifo_db.parent.mkdir(parents=True)
    os.mkfifo(fifo_db)
    log = tmp_path / "gw.log"
    os.mkfifo(log)
    refused += [str(fifo_db), str(log)]
    child = Child(clawwatch("watch", "--headless", "--json", "--no-checkpoint", "--state-dir",
                           str(state), "--log", str(log)), tmp_path)
    try:
        child.wait_for(lambda lines: all(any(p in r["path"] + r["message"]
                                             for r in refusal_records(lines))
                                         for p in refused), 30, "a refusal of each file")
        before = psutil.Process(child.proc.pid).cpu_times()
        time.sleep(1.0)
        after = psutil.Process(child.proc.pid).cpu_times()
        assert (after.user + after.system) - (before.user + before.system) < 0.3, \
            "spinning on a hostile file"
        assert child.stop_within(signum) < EXIT_SECONDS
    finally:
        child.kill()
    assert len(refusal_records(child.lines)) == len(refused), "one refusal per path"


def test_a_fifo_made_the_journal_of_an_open_database_holds_nothing(tmp_path):
    """SQLite opens a rollback database's ``-journal`` at every read to see whether it is
    hot: a FIFO put there once the database was open held ``watch`` in that open for ever,
    past SIGTERM. It is refused as at an open, and the database read again once it goes."""
    state = tmp_path / "state"
    db = state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    db.parent.mkdir(parents=True)
    conn = sqlite3.connect(db, isolation_level=None)
    conn.executescript(AGENT_DDL)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.execute("INSERT INTO session_nodes (session_key, current_session_id, entry_json, "
                 "entry_valid, updated_at, status) VALUES ('agent:main:a', 's1', '{}', 1, 1, "
                 "'running')")
    conn.close()
    child = Child(clawwatch("watch", "--headless", "--json", "--no-checkpoint", "--state-dir",
                           str(state), "--log", str(tmp_path / "no.log")), tmp_path)
    journal = Path(str(db) + "-journal")
    try:
        child.wait_for(lambda lines: any('"session"' in line for line in lines), 30,
                       "the session read")
        os.mkfifo(journal)
        child.wait_for(lambda lines: len(refusal_records(lines)) == 1, 30,
                       "the refusal of the journal")
        assert str(journal) in refusal_records(child.lines)[0]["message"]
        journal.unlink()
        opened = sum('"opened read-only' in line for line in child.lines)
        child.wait_for(lambda lines: sum('"opened read-only' in line for line in lines)
                       > opened, 30, "the database opened again")
        assert child.stop_within(signal.SIGTERM) < EXIT_SECONDS
    finally:
        child.kill()


def big_transcript(sessions: Path, megabytes: int) -> Path:
    sid = "cccccccc-0000-4000-8000-000000000000"
    path = sessions / f"{sid}.jsonl"
    line = dumps(assistant_tool_call("CALL", 0))
    head, tail = line.split("CALL")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(dumps(session_header(sid)) + "\n")
        n = 0
        while handle.tell() < megabytes << 20:
            handle.write("".join(f"{head}c{n + k}{tail}\n" for k in range(1000)))
            n += 1000
    return path


def opened_by(pid: int, path: Path) -> bool:
    try:
        return any(f.path == str(path) for f in psutil.Process(pid).open_files())
    except psutil.Error:
        return False


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_watch_headless_exits_within_2s_of_a_signal_during_a_long_first_catch_up(
        tmp_path, signum):
    state = tmp_path / "state"
    sessions = good_agent(state)
    big = big_transcript(sessions, 80)       # ~80 MB: seconds of reading and folding
    child = Child(clawwatch("watch", "--headless", "--json", "--no-checkpoint", "--state-dir",
                           str(state)), tmp_path)
    try:
        deadline = time.monotonic() + 30
        while not opened_by(child.proc.pid, big):
            assert time.monotonic() < deadline and child.proc.poll() is None, \
                "the catch-up never opened the transcript"
            time.sleep(0.02)
        assert child.stop_within(signum) < EXIT_SECONDS
    finally:
        child.kill()


# ------------------------------------------------------------------------ the dashboard


class Terminal:
    """The dashboard in a pseudo-terminal; a thread drains its output."""

    def __init__(self, argv: list[str], home: Path) -> None:
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 140, 0, 0))
        env = child_env(home)
        env.update(TERM="xterm-256color", COLUMNS="140", LINES="40")
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave,
                                     cwd=str(REPO), env=env, start_new_session=True)
        os.close(slave)
        self.output = bytearray()
        self.grew = threading.Condition()
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        while True:
            try:
                ready, _, _ = select.select([self.master], [], [], 0.5)
                if not ready:
                    if self.proc.poll() is not None:
                        return
                    continue
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            with self.grew:
                self.output += data
                self.grew.notify_all()

    def wait_for(self, needle: bytes, seconds: float) -> None:
        with self.grew:
            ok = self.grew.wait_for(lambda: needle in self.output
                                    or self.proc.poll() is not None, seconds)
        assert ok and self.proc.poll() is None, \
            f"{needle!r} not shown within {seconds}s: {bytes(self.output[-1500:])!r}"

    def exits_within(self, seconds: float) -> bool:
        try:
            self.proc.wait(timeout=seconds)
            return True
        except subprocess.TimeoutExpired:
            return False

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        os.close(self.master)


@pytest.mark.parametrize("how", ["q", "SIGTERM"])
def test_dashboard_quits_within_2s_mid_first_scan_with_a_fifo_in_the_dir(tmp_path, how):
    state = tmp_path / "state"
    sessions = good_agent(state)
    big_transcript(sessions, 80)
    hostile("fifo-transcript", state, tmp_path)
    hostile("dev-zero-session-file", state, tmp_path)
    term = Terminal(clawwatch("--state-dir", str(state)), tmp_path)
    try:
        term.wait_for(b"\x1b[?1049h", 60)          # the alternate screen: the app runs
        term.wait_for(b"Quit", 30)                 # the footer is drawn
        started = time.monotonic()
        if how == "q":
            os.write(term.master, b"q")
        else:
            term.proc.send_signal(signal.SIGTERM)
        exited = term.exits_within(EXIT_SECONDS + 3)
        took = time.monotonic() - started
        assert exited, f"the dashboard did not exit after {how}"
        assert took < EXIT_SECONDS, f"the dashboard took {took:.2f}s to exit after {how}"
        assert term.proc.returncode == 0
    finally:
        term.close()


# -------------------------------------------------------------------- idle at 100,000


def empty_transcripts(sessions: Path, count: int) -> None:
    fd = os.open(sessions, os.O_RDONLY)
    try:
        for n in range(count):
            os.mknod(f"{n:08d}-0000-4000-8000-000000000000.jsonl", 0o600 | stat.S_IFREG,
                     dir_fd=fd)
    finally:
        os.close(fd)


def files_noticed(lines: list[str]) -> int:
    """The files counted by the aggregated notices among ``lines``."""
    return sum(int(count) for line in lines for count in AGGREGATED_COUNT.findall(line))


def test_100000_empty_transcripts_cost_little_at_rest_and_give_few_notices(tmp_path):
    state = tmp_path / "state"
    sessions = state / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    empty_transcripts(sessions, 100_000)
    child = Child(clawwatch("watch", "--headless", "--json", "--no-checkpoint", "--state-dir",
                           str(state)), tmp_path)
    try:
        process = psutil.Process(child.proc.pid)
        # Caught up: the notices of the new files were given (aggregated: one per
        # NOTICE_HOLD_SECONDS of catch-up, however long this machine takes), the last
        # once the source is no longer behind; then the CPU use per second must settle.
        child.wait_for(lambda lines: files_noticed(lines) >= 99_999, 45,
                       "the aggregated notices")
        assert len([line for line in child.lines if AGGREGATED_COUNT.search(line)]) <= 3
        time.sleep(2.0)
        before, started = process.cpu_times(), time.monotonic()
        time.sleep(10.0)
        after, elapsed = process.cpu_times(), time.monotonic() - started
        share = ((after.user + after.system) - (before.user + before.system)) / elapsed
        # 1.6-1.9 % on an idle machine (the sweep's stats, a relisting every 30 s); listing
        # the dir or checking every file each second would cost tens of percent.
        assert share <= 0.04, f"{share:.1%} of a core at rest"
        child.stop_within(signal.SIGTERM)
    finally:
        child.kill()
    output = child.lines + child.stderr
    assert len(output) <= 5, output[:10]


# ------------------------------------------------------- idle followers stay correct


def test_an_idle_transcript_in_a_large_dir_is_read_when_the_waker_names_it(tmp_path,
                                                                           monkeypatch):
    monkeypatch.setattr(legacy, "IDLE_CHECKS_PER_SECOND", 0)      # no sweep: hints only
    count = legacy.IDLE_CHECK_ALL + 100
    sids = [f"s{n:05d}" for n in range(count)]
    for sid in sids:
        write_transcript(tmp_path / f"{sid}.jsonl", sid, 1)
    source = LegacySessionsSource(str(tmp_path), "main")
    source.max_open_followers = 8
    while True:
        source.poll()
        if not source.behind:
            break
    late = Path(next(iter(source._idle)))           # one closed for being idle
    with open(late, "a", encoding="utf-8") as handle:
        handle.write(dumps(assistant_tool_call("late", 1)) + "\n")
    assert not [e for e in source.poll() if isinstance(e, ToolCall)], \
        "with the sweep off, nothing names the file yet"
    source.note_changed({str(late)})
    assert [e.call_id for e in source.poll() if isinstance(e, ToolCall)] == ["late"]
    source.close()


def test_the_safety_net_sweep_finds_a_change_no_one_named(tmp_path, monkeypatch):
    monkeypatch.setattr(legacy, "IDLE_CHECK_ALL", 16)
    monkeypatch.setattr(legacy, "IDLE_CHECKS_PER_SECOND", 400)
    sids = [f"s{n:03d}" for n in range(200)]
    for sid in sids:
        write_transcript(tmp_path / f"{sid}.jsonl", sid, 1)
    source = LegacySessionsSource(str(tmp_path), "main")
    source.max_open_followers = 4
    while True:
        source.poll()
        if not source.behind:
            break
    for sid in sids[::20]:
        with open(tmp_path / f"{sid}.jsonl", "a", encoding="utf-8") as handle:
            handle.write(dumps(assistant_tool_call(f"{sid}-late", 1)) + "\n")
    seen: list[str] = []
    deadline = time.monotonic() + 10
    while len(seen) < len(sids[::20]):
        assert time.monotonic() < deadline, f"the sweep found only {seen}"
        seen += [e.call_id for e in source.poll() if isinstance(e, ToolCall)]
        time.sleep(0.05)
    assert sorted(seen) == sorted(f"{sid}-late" for sid in sids[::20])
    source.close()


def test_the_waker_names_the_file_that_changed(tmp_path):
    waker = Waker([str(tmp_path)], poll_seconds=30)
    target = tmp_path / "a.jsonl"
    try:
        deadline = time.monotonic() + 20
        while True:
            target.write_text("{}\n")
            if waker.wait(0.5):
                changed = waker.take_changed()
                if changed is None or str(target) in changed:
                    break
            assert time.monotonic() < deadline, "no change reported"
        assert changed is None or str(target) in changed
    finally:
        waker.close()


def test_many_refused_files_are_one_aggregated_error_counted_per_file(tmp_path):
    for n in range(50):
        os.mkfifo(tmp_path / f"f{n:02d}.jsonl")
    write_transcript(tmp_path / "good.jsonl", "good", 2)
    source = LegacySessionsSource(str(tmp_path), "main")
    events = source.poll()
    for _ in range(3):
        events += source.poll()
    errors = [e for e in events if isinstance(e, SourceError)]
    assert len(errors) == 1 and "50 files" in errors[0].message, errors
    assert "not a regular file (a FIFO)" in errors[0].message
    assert source.errors == 50
    assert [e.call_id for e in events if isinstance(e, ToolCall)] == ["good-c0", "good-c1"]
    source.close()


def test_gateway_log_and_sqlite_sources_refuse_fifos_once(tmp_path):
    log = tmp_path / "gw.log"
    os.mkfifo(log)
    db = tmp_path / "openclaw-agent.sqlite"
    os.mkfifo(db)
    for source in (GatewayLogSource(str(log)), SqliteAgentSource(str(db), "main")):
        errors = [e for _ in range(5) for e in source.poll() if isinstance(e, SourceError)]
        assert len(errors) == 1 and "not a regular file (a FIFO)" in errors[0].message, errors
        source.close()


def test_an_audit_log_that_is_a_fifo_is_an_error_not_a_hang(tmp_path):
    from monitor.act.audit import AuditLog

    fifo = tmp_path / "audit.jsonl"
    os.mkfifo(fifo)
    audit = AuditLog(str(fifo))
    started = time.monotonic()
    assert audit.append({"event": "attempt", "key": "agent:main:x"}) is False
    assert audit.read() == []
    assert time.monotonic() - started < 2
    assert "audit log" in audit.last_error


# -------------------------------------------------------- a file whose size says 0 (/proc)

#: A regular file whose size reads 0 while it holds data, as every ``/proc`` file does.
PROC_FILE = "/proc/self/status"
needs_proc = pytest.mark.skipif(
    not os.path.isfile(PROC_FILE) or os.stat(PROC_FILE).st_size != 0,
    reason=f"no {PROC_FILE} whose size says 0 bytes")
SIZE_REFUSAL = "its size (0 bytes) does not match what it holds"
PROC_LINK_SID = "cccccccc-0000-4000-8000-000000000000"


def proc_transcript(state: Path) -> Path:
    """``agents/main`` with its good sessions and a transcript that is a symlink to
    ``PROC_FILE``; returns the symlink."""
    link = good_agent(state) / f"{PROC_LINK_SID}.jsonl"
    os.symlink(PROC_FILE, link)
    return link


@needs_proc
def test_open_regular_refuses_a_proc_file_and_keeps_empty_and_growing_files(tmp_path):
    from monitor.sources.regular import SizeMismatch, size_lies

    with pytest.raises(SizeMismatch) as refused:
        open_regular(PROC_FILE)
    assert isinstance(refused.value, NotRegularFile)
    assert str(refused.value) == f"{PROC_FILE}: {SIZE_REFUSAL} (a /proc or /sys file?); not read"
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    os.close(open_regular(str(empty)))
    growing = tmp_path / "growing.jsonl"
    growing.write_bytes(b"")
    fd = os.open(growing, os.O_RDONLY)
    try:
        size_at_open = os.fstat(fd).st_size
        with open(growing, "ab") as writer:     # appended between the fstat and the check
            writer.write(b'{"type":"session"}\n')
        assert size_at_open == 0 and not size_lies(fd, size_at_open)
    finally:
        os.close(fd)
    assert read_regular(str(growing)) == b'{"type":"session"}\n'


@needs_proc
def test_follower_refuses_a_proc_file_once_and_reads_nothing_of_it(tmp_path):
    link = tmp_path / "t.jsonl"
    os.symlink(PROC_FILE, link)
    follower = FileFollower(str(link))
    for _ in range(5):
        assert follower.poll() == []
    [notice] = follower.take_notices()
    assert notice.error and SIZE_REFUSAL in notice.message and notice.path == str(link)
    assert follower.open_descriptors == 0
    follower.close()


@needs_proc
def test_replay_refuses_a_transcript_linked_to_a_proc_file_and_ends(tmp_path):
    state = tmp_path / "state"
    link = proc_transcript(state)
    main = good_sessions_read(replay_json(state, tmp_path, "--no-cache"))
    assert main["errors"] == 1
    [sample] = main["error_samples"]
    assert sample["path"] == str(link) and SIZE_REFUSAL in sample["message"]


@needs_proc
def test_replay_of_a_proc_file_named_as_a_path_is_an_error(tmp_path):
    result = subprocess.run(clawwatch("replay", "--no-cache", PROC_FILE),
                            capture_output=True, text=True, timeout=30, cwd=str(REPO),
                            env=child_env(tmp_path))
    assert result.returncode == 2, (result.stdout[-2000:], result.stderr[-2000:])
    assert f"{PROC_FILE}: {SIZE_REFUSAL}" in result.stderr


@needs_proc
def test_watch_headless_refuses_a_proc_file_once_and_reads_the_good_sessions(tmp_path):
    state = tmp_path / "state"
    link = proc_transcript(state)
    result = subprocess.run(clawwatch("watch", "--headless", "--json", "--no-checkpoint",
                                      "--seconds", "2", "--state-dir", str(state)),
                            capture_output=True, text=True, timeout=30, cwd=str(REPO),
                            env=child_env(tmp_path))
    assert result.returncode == 0, result.stderr[-2000:]
    records = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    about_link = [r for r in records if r.get("path") == str(link)]
    assert len(about_link) == 1, about_link[:5]
    assert about_link[0]["type"] == "error" and SIZE_REFUSAL in about_link[0]["message"]
    assert {r["session_id"] for r in records if r["type"] == "session"} >= set(GOOD_CALLS)
    followed = {r["path"] for r in records if r.get("message") == "following from the start"}
    assert followed == {str(state / "agents" / "main" / "sessions" / f"{sid}.jsonl")
                        for sid in GOOD_CALLS}

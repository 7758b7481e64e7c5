"""Issue 12 items 7 and 8: the gateway log in the forms it is found in, and loop lines for
sessions nobody indexed.

The console lines are built the way OpenClaw 2026.9.6 builds them
(``createConsoleLineFormatter`` in ``dist/subsystem-*.mjs``): ``<time> [<subsystem>]
<message>`` where the gateway's time is ``formatTimestamp(now, {style: "long"})``
(``2026-07-12T21:12:28.674+02:00``, ``GMT`` as ``+00:00``) in the ``compact`` style it uses
when stdout is not a TTY (systemd, Docker), ``HH:MM:SS`` in the ``pretty`` style, and the
subsystem in its console form (``formatSubsystemForConsole``: leading ``gateway/``,
``channels/``, ``providers/`` dropped, at most the last two segments). With colour on
(``FORCE_COLOR``, a TTY), chalk wraps the time in grey, the ``[subsystem]`` in a colour
picked by hashing its name, and the message in red (error/fatal), yellow (warn), grey
(debug/trace) or cyan (info): the only place the level shows. journald holds these lines as
``MESSAGE`` (a byte array when they carry ESC), ``journalctl -o short-iso`` prefixes them with
``<time> <host> <ident>[<pid>]:``.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from monitor.detect.gateway_notice import openclaw_loop_line
from monitor.events import GatewayNotice, SourceError
from monitor.sources.gateway_log import GatewayLogSource
from monitor.sources.log_line_forms import parse_log_line, strip_ansi

REPO = Path(__file__).resolve().parent.parent
KEY = "agent:main:docker-run"
SID = "7d3f1c2a-0b5e-4c1d-9a8f-2e6b4d0c9f11"
LOOP = (f"tool loop: sessionId={SID} sessionKey={KEY} tool=exec level=critical action=block "
        "detector=generic_repeat count=20 message=\"CRITICAL: Called exec with identical "
        "outcomes 20 times. Session execution blocked.\"")
UNINDEXED_LOOP = ("tool loop: sessionId=unknown sessionKey=agent:main:nobody tool=exec "
                  "level=critical action=block detector=generic_repeat count=10 "
                  "message=\"CRITICAL: Called exec with identical outcomes 10 times.\"")

# ------------------------------------------------------ OpenClaw's formatter, in Python

SUBSYSTEM_COLORS = ["cyan", "green", "yellow", "blue", "magenta", "red"]
CHALK = {"cyan": 36, "green": 32, "yellow": 33, "blue": 34, "magenta": 35, "red": 31,
         "gray": 90}
CHANNELS = {"telegram", "discord", "slack", "whatsapp", "webchat", "signal"}


def console_subsystem(subsystem: str) -> str:
    """``formatSubsystemForConsole``."""
    parts = [p for p in subsystem.split("/") if p]
    original = "/".join(parts) or subsystem
    while parts and parts[0] in ("gateway", "channels", "providers"):
        parts.pop(0)
    if not parts:
        return original
    if parts[0].lower() in CHANNELS:
        return parts[0]
    return "/".join(parts[-2:]) if len(parts) > 2 else "/".join(parts)


def pick_color(subsystem: str) -> str:
    """``pickSubsystemColor`` (a JS 32-bit hash)."""
    value = 0
    for char in subsystem:
        value = (value * 31 + ord(char)) & 0xFFFFFFFF
    if value >= 1 << 31:
        value -= 1 << 32
    return SUBSYSTEM_COLORS[abs(value) % len(SUBSYSTEM_COLORS)]


def paint(color: str, text: str) -> str:
    return f"\x1b[{CHALK[color]}m{text}\x1b[39m"


def console_line(subsystem: str, message: str, *, level: str = "info",
                 time_text: str | None = "2026-07-12T21:12:28.674+02:00",
                 colour: bool = False) -> str:
    """``createConsoleLineFormatter(subsystem)(level, message, style)``."""
    shown = console_subsystem(subsystem)
    prefix = f"[{shown}]"
    level_color = {"error": "red", "fatal": "red", "warn": "yellow", "debug": "gray",
                   "trace": "gray"}.get(level, "cyan")
    if colour:
        prefix = paint(pick_color(shown), prefix)
        message = paint(level_color, message)
        time_text = paint("gray", time_text) if time_text else None
    return f"{time_text} {prefix} {message}" if time_text else f"{prefix} {message}"


def journal_entry(message: str, *, priority: str = "6", realtime: int = 1783883548674000,
                  as_bytes: bool = False, cursor: str = "s=abc;i=1") -> str:
    data = message.encode()
    return json.dumps({
        "__CURSOR": cursor, "__REALTIME_TIMESTAMP": str(realtime),
        "__MONOTONIC_TIMESTAMP": "123456", "_BOOT_ID": "b" * 32, "PRIORITY": priority,
        "_SYSTEMD_UNIT": "openclaw-gateway.service", "SYSLOG_IDENTIFIER": "openclaw",
        "_PID": "123", "_COMM": "node", "_TRANSPORT": "stdout",
        "MESSAGE": list(data) if as_bytes or "\x1b" in message else message,
    })


def parse(line: str) -> GatewayNotice:
    return parse_log_line(line.encode())


# ------------------------------------------------------------------- the line forms

@pytest.mark.parametrize("style", ["compact", "pretty", "no-time", "colour"])
def test_console_lines_as_openclaw_formats_them(style):
    kwargs = {"compact": {}, "pretty": {"time_text": "21:12:28"}, "no-time": {"time_text": None},
              "colour": {"colour": True}}[style]
    notice = parse(console_line("diagnostic", LOOP, level="error", **kwargs))
    assert (notice.subsystem, notice.message) == ("diagnostic", LOOP)
    assert (notice.session_key, notice.session_id) == (KEY, SID)
    assert notice.ts == (1783883548.674 if style in ("compact", "colour") else None)
    assert notice.level == ("ERROR" if style == "colour" else "INFO")
    line = openclaw_loop_line(notice.subsystem, notice.message)
    assert (line.detector, line.level, line.count, line.session_key) == \
        ("generic_repeat", "critical", 20, KEY)


def test_console_subsystem_names_and_levels_from_colour():
    notice = parse(console_line("gateway/ws", "⇄ res ✓ chat.send 176ms", colour=True))
    assert (notice.subsystem, notice.level) == ("ws", "INFO")
    warn = parse(console_line("agents/loop-detection",
                              "Loop warning: exec called 10 times with identical arguments",
                              level="warn", colour=True))
    assert (warn.subsystem, warn.level) == ("agents/loop-detection", "WARN")
    assert openclaw_loop_line(warn.subsystem, warn.message).level == "warning"
    blocked = parse(console_line("agents/tools", "Blocking exec due to critical loop: CRITICAL: "
                                 "Called exec with identical outcomes 20 times.", level="error"))
    assert openclaw_loop_line(blocked.subsystem, blocked.message).tool == "exec"


def test_captured_console_output_is_text_from_no_subsystem():
    notice = parse("2026-07-12T21:12:28.674+02:00 some output: " + LOOP)
    assert notice.subsystem is None and notice.ts == 1783883548.674
    assert openclaw_loop_line(notice.subsystem, notice.message) is None


def test_journal_json_entries():
    plain = parse(journal_entry(console_line("diagnostic", LOOP)))
    assert (plain.subsystem, plain.session_key, plain.ts) == ("diagnostic", KEY, 1783883548.674)
    coloured = parse(journal_entry(console_line("diagnostic", LOOP, level="error",
                                                time_text=None, colour=True),
                                   realtime=1783883549000000))
    assert (coloured.subsystem, coloured.message, coloured.level) == ("diagnostic", LOOP, "ERROR")
    assert coloured.ts == 1783883549.0      # the line has no time: the journal's
    stderr = parse(journal_entry("node: warning: something", priority="4"))
    assert (stderr.subsystem, stderr.level, stderr.message) == \
        (None, "WARN", "node: warning: something")
    assert openclaw_loop_line(coloured.subsystem, coloured.message).count == 20


def test_journal_short_iso_lines():
    for stamp in ("2026-07-12T21:12:28+0200", "2026-07-12T21:12:28.674123+0200",
                  "2026-07-12T21:12:28+02:00"):
        notice = parse(f"{stamp} gw-host openclaw[123]: " + console_line("diagnostic", LOOP))
        assert (notice.subsystem, notice.session_key, notice.message) == ("diagnostic", KEY, LOOP)
        assert notice.ts == 1783883548.674
    bare = parse("2026-07-12T21:12:28+0200 gw-host openclaw[123]: [diagnostic] " + LOOP)
    assert bare.ts is not None and bare.ts == pytest.approx(1783883548.0)
    assert openclaw_loop_line(bare.subsystem, bare.message) is not None


def test_json_console_style():
    line = json.dumps({"runId": "r1", "time": "2026-07-12T21:12:28.674+02:00", "level": "error",
                       "subsystem": "diagnostic", "message": LOOP})
    notice = parse(line)
    assert (notice.subsystem, notice.level, notice.session_key) == ("diagnostic", "ERROR", KEY)


def test_ansi_is_stripped_safely():
    plain, _ = strip_ansi("\x1b]8;;http://x\x07link\x1b]8;;\x07 \x1b[1;31mred\x1b[0m \x9b2Jz")
    assert plain == "link red z"
    hostile = "\x1b]" * 200_000 + "tail"
    started = time.monotonic()
    strip_ansi(hostile)
    assert time.monotonic() - started < 2.0


def test_a_log_of_mixed_forms_reads_without_errors(tmp_path):
    log = tmp_path / "gateway.console.log"
    log.write_text("\n".join([
        "-- Boot 0123456789abcdef --",
        console_line("gateway", "listening on ws://127.0.0.1:18789"),
        console_line("agent/embedded", "embedded run start: runId=r1 sessionId=s1", colour=True),
        console_line("gateway", "lane task error: Error: boom"),
        "    at run (file:///app/dist/x.mjs:1:2)",         # the rest of that message
        journal_entry(console_line("diagnostic", LOOP)),
        "2026-07-12T21:12:28+0200 host openclaw[9]: " + console_line("diagnostic", LOOP),
        json.dumps({"0": '{"subsystem":"diagnostic"}', "1": LOOP,
                    "_meta": {"logLevelName": "ERROR"}, "time": "2026-07-12T19:12:28.674Z"}),
    ]) + "\n")
    source = GatewayLogSource(str(log))
    events = source.poll()
    assert [e for e in events if isinstance(e, SourceError)] == []
    notices = [e for e in events if isinstance(e, GatewayNotice)]
    assert len(notices) == 8
    assert sum(openclaw_loop_line(n.subsystem, n.message) is not None for n in notices) == 3


# ---------------------------------------------------------------- replay and watch (CLI)

def clean_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENCLAW_", "CLAWWATCH_")) or k == "CLAWWATCH_LOG_DIRS"}
    env.update(HOME=str(tmp_path), TMPDIR=str(tmp_path), XDG_STATE_HOME=str(tmp_path / "xdg"),
               XDG_CONFIG_HOME=str(tmp_path / "cfg"), **extra)
    return env


def cli(tmp_path, *args, stdin_text: str | None = None, env=None, timeout=30):
    return subprocess.run([sys.executable, "-m", "monitor", *args], input=stdin_text,
                          capture_output=True, text=True, timeout=timeout, cwd=str(tmp_path),
                          env=env or clean_env(tmp_path))


def findings_by_key(document: dict) -> dict[str, list[dict]]:
    return {s["key"]: s["findings"] for s in document["sessions"] if s["findings"]}


def indexed_state(tmp_path: Path) -> Path:
    """A state dir whose index lists ``KEY`` (``SID``) and nothing else."""
    sessions = tmp_path / "state" / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / "sessions.json").write_text(json.dumps({KEY: {"sessionId": SID}}))
    (sessions / f"{SID}.jsonl").write_text(json.dumps({"type": "session", "version": 3,
                                                       "id": SID}) + "\n")
    return tmp_path / "state"


@pytest.mark.parametrize("form", ["tslog", "console"])
def test_unindexed_loop_line_is_a_critical_on_the_named_key(tmp_path, form):
    log = tmp_path / "gateway.log"
    if form == "tslog":         # item 8 alone: the file log's JSON form
        log.write_text(json.dumps({"0": '{"subsystem":"diagnostic"}', "1": UNINDEXED_LOOP,
                                   "_meta": {"logLevelName": "ERROR"},
                                   "time": "2026-07-12T19:12:28.674Z"}) + "\n")
    else:
        log.write_text(console_line("gateway", "ready") + "\n"
                       + console_line("diagnostic", UNINDEXED_LOOP, level="error") + "\n")
    result = cli(tmp_path, "replay", "--json", "--state-dir", str(indexed_state(tmp_path)),
                 "--log", str(log))
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    [session] = [s for s in document["sessions"] if s["key"] == "agent:main:nobody"]
    [finding] = session["findings"]
    assert (finding["detector"], finding["level"], finding["count"], finding["tool"]) == \
        ("gateway_loop_notice", "critical", 10, "exec")
    assert session["known_from"] == "log"
    assert document["sources"][0]["errors"] == 0


def test_indexed_console_loop_line_is_a_critical_on_its_session(tmp_path):
    log = tmp_path / "docker.log"
    log.write_text(console_line("diagnostic", LOOP, colour=True) + "\n")
    result = cli(tmp_path, "replay", "--json", "--state-dir", str(indexed_state(tmp_path)),
                 "--log", str(log))
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    [session] = [s for s in document["sessions"] if s["key"] == KEY]
    assert session["session_id"] == SID and "known_from" not in session
    assert [(f["detector"], f["level"]) for f in session["findings"]] == \
        [("gateway_loop_notice", "critical")]


@pytest.mark.parametrize("forged", [
    console_line("agent/embedded", UNINDEXED_LOOP),                 # wrong subsystem
    console_line("diagnostic", "lane task error: " + UNINDEXED_LOOP),   # not anchored
    console_line("diagnostic", "exec failed: echo '" + UNINDEXED_LOOP + "'"),
    "2026-07-12T21:12:28.674+02:00 " + UNINDEXED_LOOP,              # captured, no subsystem
    UNINDEXED_LOOP,                                                 # bare text
    "[diagnosticx] " + UNINDEXED_LOOP,
    journal_entry("[tools] " + UNINDEXED_LOOP),
    journal_entry(console_line("agents/embedded", UNINDEXED_LOOP)),
    "2026-07-12T21:12:28+0200 host openclaw[1]: exec said " + UNINDEXED_LOOP,
    json.dumps({"time": "2026-07-12T21:12:28.674+02:00", "level": "error",
                "message": UNINDEXED_LOOP}),                        # json console, no subsystem
])
def test_a_forged_console_loop_line_raises_nothing(tmp_path, forged):
    real = UNINDEXED_LOOP.replace("agent:main:nobody", "agent:main:real")
    log = tmp_path / "forged.log"
    log.write_text(console_line("gateway", "ready") + "\n" + forged + "\n"
                   + console_line("diagnostic", real, level="error") + "\n")
    result = cli(tmp_path, "replay", "--json", "--log", str(log))
    assert result.returncode == 0, result.stderr
    assert set(findings_by_key(json.loads(result.stdout))) == {"agent:main:real"}


def test_stdin_replay_reads_to_the_end(tmp_path):
    text = (console_line("gateway", "ready") + "\n"
            + journal_entry(console_line("diagnostic", UNINDEXED_LOOP, colour=True)) + "\n"
            + console_line("diagnostic", LOOP))             # no newline at the end
    result = cli(tmp_path, "replay", "--json", "--log", "-", stdin_text=text)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["sources"][0]["path"] == "-" and document["sources"][0]["errors"] == 0
    found = findings_by_key(document)
    assert set(found) == {"agent:main:nobody", KEY}
    assert all(f[0]["level"] == "critical" for f in found.values())


def read_json_lines_until(proc: subprocess.Popen, wanted, seconds: float = 15.0) -> list[dict]:
    """Lines of ``proc``'s stdout until one satisfies ``wanted`` (read by a thread: a
    selector on a buffered pipe misses lines already in the buffer)."""
    import queue
    import threading

    lines: queue.Queue = getattr(proc, "_lines", None) or queue.Queue()
    if not hasattr(proc, "_lines"):
        proc._lines = lines
        threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout] + [lines.put("")],
                         daemon=True).start()
    seen: list[dict] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=0.2)
        except queue.Empty:
            continue
        if not line:
            break
        seen.append(json.loads(line))
        if wanted(seen[-1]):
            return seen
    raise AssertionError(f"not seen; got {seen}")


def is_critical(record: dict) -> bool:
    return record.get("type") == "finding" and record.get("level") == "critical"


def stop_within(proc: subprocess.Popen, seconds: float = 2.0) -> float:
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError(f"still running {seconds}s after SIGTERM") from None
    return time.monotonic() - started


def test_stdin_watch_follows_and_exits_on_sigterm_while_stdin_is_open(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-m", "monitor", "watch", "--headless", "--json", "--log", "-",
         "--no-checkpoint"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, cwd=str(tmp_path), env=clean_env(tmp_path))
    try:
        time.sleep(1.0)
        proc.stdin.write(console_line("diagnostic", UNINDEXED_LOOP, level="error") + "\n")
        proc.stdin.flush()
        records = read_json_lines_until(proc, is_critical)
        assert records[-1]["key"] == "agent:main:nobody"
        time.sleep(0.5)                       # stdin open and silent
        assert stop_within(proc, 2.0) < 2.0
        assert proc.returncode == 0, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdin.close()


def test_stdin_watch_ends_at_end_of_input(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-m", "monitor", "watch", "--headless", "--json", "--log", "-",
         "--no-checkpoint"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, cwd=str(tmp_path), env=clean_env(tmp_path))
    time.sleep(1.0)
    out, err = proc.communicate(console_line("diagnostic", UNINDEXED_LOOP), timeout=15)
    assert proc.returncode == 0, err
    records = [json.loads(line) for line in out.splitlines()]
    assert [r["key"] for r in records if is_critical(r)] == ["agent:main:nobody"]


# --------------------------------------------------------------- --journal UNIT

FAKE_JOURNALCTL = """#!{python}
import json, os, sys, time
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "argv.json"), "a") as f:
    f.write(json.dumps(sys.argv[1:]) + "\\n")
with open(os.path.join(here, "pid"), "w") as f:
    f.write(str(os.getpid()))
with open(os.path.join(here, "lines.jsonl")) as f:
    sys.stdout.write(f.read())
sys.stdout.flush()
if "--follow" in sys.argv:
    time.sleep(120)
"""


def fake_journalctl(tmp_path: Path, lines: list[str], *, ignores_sigterm: bool = False,
                    scans_on: bool = False) -> Path:
    """A ``journalctl`` that writes ``lines``; one that ``ignores_sigterm`` stands for one
    stuck where a signal does not reach it (a journal on a hung disk), one that ``scans_on``
    after them, even without ``--follow``, for one scanning a large journal for more."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "journalctl"
    text = FAKE_JOURNALCTL.replace("{python}", sys.executable)
    if ignores_sigterm:
        text = text.replace("import json, os, sys, time\n", "import json, os, sys, time\n"
                            "import signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n")
    if scans_on:
        text = text.replace('if "--follow" in sys.argv:', "if True:")
    script.write_text(text)
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    (bin_dir / "lines.jsonl").write_text("".join(line + "\n" for line in lines))
    return bin_dir


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_journal_watch_follows_journalctl_and_terminates_it(tmp_path):
    entries = [journal_entry(console_line("gateway", "ready"), cursor="s=1;i=1"),
               journal_entry(console_line("diagnostic", UNINDEXED_LOOP, level="error",
                                          colour=True), priority="3", cursor="s=1;i=2")]
    bin_dir = fake_journalctl(tmp_path, entries)
    env = clean_env(tmp_path, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    checkpoint = tmp_path / "checkpoint.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "monitor", "watch", "--headless", "--json", "--journal",
         "openclaw-gateway.service", "--checkpoint", str(checkpoint)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(tmp_path), env=env)
    try:
        records = read_json_lines_until(proc, is_critical)
        assert records[-1]["key"] == "agent:main:nobody"
        child = int((bin_dir / "pid").read_text())
        assert alive(child)
        assert stop_within(proc, 2.0) < 2.0
        assert proc.returncode == 0, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    deadline = time.monotonic() + 3
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child), "journalctl was left running"
    argv = json.loads((bin_dir / "argv.json").read_text().splitlines()[0])
    assert {"--follow", "--output=json", "--unit=openclaw-gateway.service"} <= set(argv)
    saved = json.loads(checkpoint.read_text())["sources"]
    assert saved["gateway-log:journal:openclaw-gateway.service"] == {"cursor": "s=1;i=2"}
    again = subprocess.Popen(       # a restart goes on after the cursor it saved
        [sys.executable, "-m", "monitor", "watch", "--headless", "--json", "--journal",
         "openclaw-gateway.service", "--checkpoint", str(checkpoint)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=str(tmp_path), env=env)
    try:
        deadline = time.monotonic() + 15
        while len((bin_dir / "argv.json").read_text().splitlines()) < 2:
            assert time.monotonic() < deadline, "journalctl not started again"
            time.sleep(0.05)
        assert stop_within(again, 2.0) < 2.0
    finally:
        if again.poll() is None:
            again.kill()
            again.wait()
    argv = json.loads((bin_dir / "argv.json").read_text().splitlines()[1])
    assert "--after-cursor=s=1;i=2" in argv


def test_journal_watch_ends_within_2s_of_sigterm_when_journalctl_ignores_it(tmp_path):
    bin_dir = fake_journalctl(tmp_path, [journal_entry(console_line(
        "diagnostic", UNINDEXED_LOOP, level="error"), priority="3", cursor="s=1;i=1")],
        ignores_sigterm=True)
    env = clean_env(tmp_path, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    proc = subprocess.Popen(
        [sys.executable, "-m", "monitor", "watch", "--headless", "--json", "--journal",
         "openclaw-gateway.service", "--no-checkpoint"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(tmp_path), env=env)
    try:
        read_json_lines_until(proc, is_critical)
        child = int((bin_dir / "pid").read_text())
        assert stop_within(proc, 2.0) < 2.0
        assert proc.returncode == 0, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not alive(child), "journalctl was left running"


@pytest.mark.parametrize(("command", "signum"), [
    (["replay", "--json"], signal.SIGTERM),
    (["watch", "--headless", "--json", "--no-checkpoint"], signal.SIGKILL),
], ids=["replay-SIGTERM", "watch-SIGKILL"])
def test_journalctl_ends_with_a_clawwatch_that_could_not_close_it(tmp_path, command, signum):
    bin_dir = fake_journalctl(tmp_path, [journal_entry(console_line("gateway", "ready"))],
                              ignores_sigterm=True, scans_on=True)
    env = clean_env(tmp_path, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    proc = subprocess.Popen([sys.executable, "-m", "monitor", *command, "--journal", "openclaw"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            cwd=str(tmp_path), env=env)
    try:
        deadline = time.monotonic() + 30
        while not (bin_dir / "pid").exists() or not (bin_dir / "pid").read_text():
            assert time.monotonic() < deadline, "journalctl not started"
            time.sleep(0.05)
        child = int((bin_dir / "pid").read_text())
        proc.send_signal(signum)
        proc.wait(timeout=5)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    deadline = time.monotonic() + 2
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    ended = not alive(child)
    if not ended:
        os.kill(child, signal.SIGKILL)
    assert ended, "journalctl was left reading"


def test_journal_replay_reads_the_unit_to_its_end(tmp_path):
    bin_dir = fake_journalctl(tmp_path, [journal_entry(console_line(
        "diagnostic", UNINDEXED_LOOP), as_bytes=True)])
    env = clean_env(tmp_path, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    result = cli(tmp_path, "replay", "--json", "--journal", "openclaw", env=env)
    assert result.returncode == 0 and "no entry" not in result.stderr, result.stderr
    assert set(findings_by_key(json.loads(result.stdout))) == {"agent:main:nobody"}
    [argv] = [json.loads(line) for line in (bin_dir / "argv.json").read_text().splitlines()]
    assert "--follow" not in argv and "--unit=openclaw" in argv


def test_journal_replay_of_a_unit_without_entries_says_to_check_its_name(tmp_path):
    bin_dir = fake_journalctl(tmp_path, [])
    env = clean_env(tmp_path, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    result = cli(tmp_path, "replay", "--json", "--journal", "openclaw-gatway", env=env)
    assert result.returncode == 0, result.stderr
    assert "--journal openclaw-gatway: journalctl has no entry of this unit" in result.stderr
    assert "systemctl list-units" in result.stderr


def test_journal_without_journalctl_is_exit_2_saying_so(tmp_path):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    env = clean_env(tmp_path, PATH=str(empty))
    for command in (["watch", "--headless", "--json", "--no-checkpoint"], ["replay", "--json"]):
        result = cli(tmp_path, *command, "--journal", "openclaw", env=env)
        assert result.returncode == 2
        assert "journalctl" in result.stderr and "not found" in result.stderr
        assert "Traceback" not in result.stderr


def test_stdin_watch_beside_a_state_dir_goes_on_after_end_of_input(tmp_path):
    """With a state dir to watch too, the end of standard input ends only the log: a loop
    written to a transcript afterwards is still caught, and SIGTERM ends the watch."""
    from test_history_fast_path import state_dir_with_hammer

    later = Path(state_dir_with_hammer(tmp_path / "later", 60, "running"))
    state_dir = tmp_path / "state"
    sessions = state_dir / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    proc = subprocess.Popen(
        [sys.executable, "-m", "monitor", "watch", "--headless", "--json", "--log", "-",
         "--state-dir", str(state_dir), "--no-checkpoint", "--poll", "0.2"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        cwd=str(tmp_path), env=clean_env(tmp_path))
    try:
        proc.stdin.write(console_line("diagnostic", UNINDEXED_LOOP) + "\n")
        proc.stdin.close()
        assert read_json_lines_until(proc, is_critical)[-1]["key"] == "agent:main:nobody"
        assert proc.poll() is None, "the end of the log is not the end of the watch"
        (transcript,) = (later / "agents" / "main" / "sessions").glob("*.jsonl")
        os.replace(later / "agents" / "main" / "sessions" / "sessions.json",
                   sessions / "sessions.json")
        os.replace(transcript, sessions / transcript.name)
        critical = read_json_lines_until(proc, is_critical, seconds=30)[-1]
        assert critical["key"] == "agent:main:main"
        assert stop_within(proc, 2.0) < 2.0
        assert proc.returncode == 0, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

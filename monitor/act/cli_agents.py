"""The Claude Code or Codex CLI process that writes a session, found by evidence that agrees.

Neither CLI has a gateway to ask, so the writer of a transcript is found in the process table
(psutil) and proven, the way OpenClaw exec shells are (``monitor.act.evidence``): nothing is
acted on unless the evidence names one process. (How each CLI and its tool processes look in
the process table, as verified with the real clients: ``monitor.act.cli_processes``.)

A process is a candidate when it looks like that CLI (process name or ``argv[0]``, or a
script of its npm package), belongs to this user, runs in the session's cwd (its own cwd, or
for Codex the ``-C``/``--cd`` dir, which it records without changing its cwd), and nothing
contradicts it (its argv resumes another session id, or forks this one into a new session;
its ``CLAUDE_CONFIG_DIR``/``CODEX_HOME`` does not hold the transcript; with nothing tying it
to this session, it holds another session's transcript open or a tool of it names another
session). A launcher whose only child candidate has its arguments is left out. A candidate
ties itself to the session by at least one fact: argv resumes or names the session id; an
open file is the transcript or names the session id; a tool child's environment names the
session id; or, as the weakest tie, it started before the transcript's first entry, is the
only candidate in that cwd, a Claude Code transcript sits in the folder Claude Code keeps
that cwd's sessions in (the cwd is the transcript's own claim), and no other transcript
beside this one was written since it started (it could be writing that one). One tied
candidate is the writer; two tied, or several untied, is ambiguous: nothing is acted on and
``Lookup.reason`` says why.

Results carry ``(pid, create_time)``; ``monitor.act.cli_agent_signals`` re-checks that pair
before any signal, so a reused PID is never hit.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace

import psutil

from monitor import untrusted_json
from monitor.act.cli_processes import (
    argv_of,
    cli_arguments,
    cwd_of,
    environ_of,
    marked_session,
    open_paths,
    owned_by_me,
    process_name,
    tool_children,
    working_dirs,
)
from monitor.discovery import claude_config_homes
from monitor.sources.regular import open_regular_file
from monitor.sources.transcript import parse_timestamp

SOURCES = ("claude-code", "codex")
RESUME_FLAGS = ("--resume", "-r", "resume")
SESSION_FLAGS = (*RESUME_FLAGS, "--session-id")   # the next argument: the session written
FORK_FLAGS = ("fork",)                # codex [exec] fork ID: a new session from ID
FORK_SWITCH = "--fork-session"        # Claude Code: --resume ID starts a new session from ID
HEAD_BYTES = 1 << 20     # how much of a transcript's start is read for its first entry
RIVALS_LOOKED_AT = 10_000  # transcripts beside the session's looked at for a rival writer
CLOCK_SLACK = 2.0        # a create time is boot time + ticks; entries are written after start
CLAUDE_FOLDER_CHARS = 200  # Claude Code cuts a longer project folder name and adds a hash
_SESSION_ID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_SESSION_ID_RE = re.compile(f"^{_SESSION_ID}$")
_SESSION_ID_IN = re.compile(_SESSION_ID)
_PROJECT_DIR_NAME_RE = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")  # as Claude Code takes it


@dataclass(frozen=True)
class CliSession:
    """A session to act on: its source, id, transcript path and (for Claude Code) the project
    cwd; without ``cwd`` it is read from the transcript (Codex's ``session_meta``)."""

    source: str          # "claude-code" | "codex"
    session_id: str
    transcript: str
    cwd: str | None = None


@dataclass(frozen=True)
class CliProcess:
    """A CLI process in the session's cwd, and the facts that tie it to the session."""

    pid: int
    create_time: float
    argv: tuple[str, ...]
    cwd: str
    arguments: tuple[str, ...] = ()    # what the CLI was given (argv after its entry)
    ties: tuple[str, ...] = ()

    @property
    def target(self) -> tuple[int, float]:
        return (self.pid, self.create_time)


@dataclass(frozen=True)
class Lookup:
    """The outcome of ``find_cli``: ``process`` when the evidence names exactly one;
    ``ambiguous`` when it names several (or several run where none is tied), so that the
    ``candidates`` are the rivals to show, never decided from the ``reason`` text (which
    holds the cwd, any path at all)."""

    process: CliProcess | None
    reason: str
    candidates: tuple[CliProcess, ...] = ()
    ambiguous: bool = False

    @property
    def target(self) -> tuple[int, float] | None:
        return self.process.target if self.process else None


# ------------------------------------------------------------------ reading the session

def _head_entries(path: str) -> list[dict]:
    """The complete JSON entries among the first ``HEAD_BYTES`` of a transcript."""
    try:
        with open_regular_file(path) as handle:
            data = handle.read(HEAD_BYTES)
    except OSError:
        return []
    entries = []
    for line in data.split(b"\n")[:-1]:
        try:
            entry = untrusted_json.loads(line)
        except (ValueError, UnicodeDecodeError):
            continue
        if isinstance(entry, dict):
            entries.append(entry)
    return entries


def first_entry_time(path: str) -> float | None:
    """When the transcript's first timestamped entry was written (seconds since the epoch)."""
    for entry in _head_entries(path):
        ts = parse_timestamp(entry.get("timestamp"))
        if ts is not None:
            return ts
    return None


def recorded_cwd(session: CliSession) -> str | None:
    """The session's cwd as given, else as the transcript records it (Codex
    ``session_meta.payload.cwd``; Claude Code, the first entry's ``cwd``), unresolved. A
    recorded cwd that no path can be (one with a NUL or a lone surrogate) is no cwd."""
    if session.cwd:
        return session.cwd
    for entry in _head_entries(session.transcript):
        payload = entry.get("payload") if entry.get("type") == "session_meta" else entry
        cwd = payload.get("cwd") if isinstance(payload, dict) else None
        if isinstance(cwd, str) and cwd.startswith("/") and _can_be_path(cwd):
            return cwd
    return None


def _can_be_path(text: str) -> bool:
    """Whether ``text`` can name a file (``os.fsencode`` takes it and it has no NUL)."""
    try:
        return b"\0" not in os.fsencode(text)
    except UnicodeEncodeError:
        return False


def session_cwd(session: CliSession) -> str | None:
    """The session's cwd (``recorded_cwd``), symlinks resolved."""
    cwd = recorded_cwd(session)
    return os.path.realpath(cwd) if cwd else None


def claude_project_folder(cwd: str) -> str:
    """The name of the folder under ``projects/`` where Claude Code keeps the transcripts of
    sessions run in ``cwd`` (as Claude Code 2.1.332 names it: every UTF-16 code unit that is
    not an ASCII letter or digit becomes ``-``; a name past ``CLAUDE_FOLDER_CHARS`` is cut
    there and given ``-<hash>``, so only that start is returned)."""
    name = "".join(char if char.isascii() and char.isalnum()
                   else "--" if ord(char) > 0xFFFF else "-" for char in cwd)
    return name[:CLAUDE_FOLDER_CHARS]


def in_cwd_folder(session: CliSession, transcript: str, env: dict[str, str]) -> bool:
    """Whether a Claude Code transcript sits in the ``projects/`` folder of the cwd its
    session claims, symlinks resolved (Claude Code 2.1.332 names the folder after its
    resolved cwd, and records that cwd, even started through a symlink with ``$PWD`` saying
    so), or the folder that a process with environment ``env`` names instead
    (``CLAUDE_CODE_PROJECT_DIR_NAME``); a Codex one always does (its folders are dates). A
    transcript anywhere else cannot be from a process run in that cwd: its claim is all that
    ties the two, and a claimed ``/proc/<pid>/cwd`` or symlink names another's cwd."""
    if session.source != "claude-code":
        return True
    folder = os.path.basename(os.path.dirname(transcript))
    named = env.get("CLAUDE_CODE_PROJECT_DIR_NAME", "")
    if _PROJECT_DIR_NAME_RE.match(named) and folder == named:
        return True
    cwd = session_cwd(session)
    if not cwd:
        return False
    name = claude_project_folder(cwd)
    return folder == name or (len(name) == CLAUDE_FOLDER_CHARS
                              and folder.startswith(name + "-"))


def _inside(path: str, folder: str) -> bool:
    folder = os.path.realpath(folder)
    return os.path.commonpath([path, folder]) == folder


def writes_elsewhere(env: dict[str, str], source: str, transcript: str,
                     cwd: str | None = None) -> str | None:
    """Why a process whose environment is ``env`` cannot write ``transcript`` (its config
    dir does not hold it), or None when it may (or the environment does not say). Claude
    Code's config dirs are its ``$CLAUDE_CONFIG_DIR``, else ``claude_config_homes`` of its
    own environment (its ``$XDG_CONFIG_HOME``, not clawwatch's). A relative
    config dir is the process's, below its cwd ``cwd`` (verified with Claude Code 2.1.332);
    without that cwd it says nothing."""
    if source == "claude-code":
        configured = env.get("CLAUDE_CONFIG_DIR")
        homes = [configured] if configured else []
        if not configured and env.get("HOME"):
            homes = claude_config_homes(env)
        roots = [os.path.join(home, "projects") for home in homes]
        label = "CLAUDE_CONFIG_DIR" if configured else "HOME"
    else:
        configured = env.get("CODEX_HOME")
        home = configured or (os.path.join(env["HOME"], ".codex") if env.get("HOME") else None)
        roots = [os.path.join(home, "sessions"), os.path.join(home, "archived_sessions")] \
            if home else []
        label = "CODEX_HOME" if configured else "HOME"
    if any(not os.path.isabs(root) for root in roots):
        if cwd is None:
            return None
        roots = [os.path.join(cwd, root) for root in roots]
    if not roots or any(_inside(transcript, root) for root in roots):
        return None
    return f"its {label} keeps sessions in {roots[0]}, not where the transcript is"


def _named_sessions(argv: list[str]) -> list[tuple[str, str]]:
    """Each ``(flag, session id)`` that argv gives (``--resume ID``, ``--session-id=ID``,
    ``codex exec resume ID``, ``codex fork ID``)."""
    named = []
    for index, arg in enumerate(argv[1:], start=1):
        flag, eq, value = arg.partition("=")
        if eq and flag in SESSION_FLAGS + FORK_FLAGS and _SESSION_ID_RE.match(value):
            named.append((flag, value))
        elif arg in SESSION_FLAGS + FORK_FLAGS and index + 1 < len(argv) \
                and _SESSION_ID_RE.match(argv[index + 1]):
            named.append((arg, argv[index + 1]))
    return named


def argv_sessions(argv: list[str]) -> tuple[str | None, str | None]:
    """``(written, forked)``: the session id that argv says the CLI writes (it resumes or
    names it), and the one it forks a new session from (``codex fork ID``, Claude Code's
    ``--resume ID --fork-session``: verified with both, the new session gets an id of its
    own, which argv does not name unless ``--session-id`` gives it)."""
    forking = FORK_SWITCH in argv[1:]
    written = forked = None
    for flag, value in _named_sessions(argv):
        if flag in FORK_FLAGS or (forking and flag in RESUME_FLAGS):
            forked = forked or value
        else:
            written = written or value
    return written, forked


# ---------------------------------------------------------------------- the evidence

def evidence_of(proc: psutil.Process, argv: list[str], session: CliSession
                ) -> tuple[list[str], str | None]:
    """The facts (besides timing) that tie ``proc`` to ``session``, and one that ties it to
    another session instead (it holds another session's transcript open, or a tool of it
    names another session), if any."""
    sid = session.session_id
    ties = []
    if argv_sessions(argv)[0] == sid:
        ties.append(f"argv names session {sid}")
    transcript = os.path.realpath(session.transcript)
    paths = open_paths(proc)
    named = [path for path in paths if sid in path.split(os.sep)
             or os.path.splitext(os.path.basename(path))[0] == sid]
    if transcript in paths:
        ties.append(f"holds the transcript {transcript} open")
    elif named:
        ties.append(f"holds {named[0]} open (named by the session id)")
    other = next((f"holds another session's transcript open ({path})" for path in paths
                  if _names_another_session(path, sid)), None)
    for child in tool_children(proc):
        marked = marked_session(child, session.source)
        if marked == sid:
            ties.append(f"tool process {child.pid}'s environment names session {sid}")
        elif marked and other is None:
            other = f"its tool process {child.pid} names another session ({marked})"
    return ties, other


def _names_another_session(path: str, session_id: str) -> bool:
    """``path`` is a transcript (``*.jsonl``) whose name holds a session id, not this one."""
    name = os.path.basename(path)
    return name.endswith(".jsonl") and session_id not in name \
        and _SESSION_ID_IN.search(name) is not None


def _candidate(proc: psutil.Process, session: CliSession, cwd: str,
               transcript: str) -> tuple[CliProcess | None, str | None]:
    """``proc`` as a candidate in ``cwd`` (with its ties), or None and why it was left out
    (None, None: not a CLI process in that cwd at all)."""
    argv = argv_of(proc)
    args = cli_arguments(argv, process_name(proc), session.source)
    if args is None:
        return None, None
    if proc.pid in (0, 1, os.getpid()) or not owned_by_me(proc) \
            or cwd not in working_dirs(proc, argv, session.source):
        return None, None
    try:
        if proc.status() == psutil.STATUS_ZOMBIE:
            return None, None
        started = proc.create_time()
    except psutil.Error:
        return None, None
    written, forked = argv_sessions(argv)
    if written and written != session.session_id:
        return None, f"pid {proc.pid} resumes another session ({written})"
    if forked == session.session_id and written is None:
        return None, f"pid {proc.pid} forks session {forked} into a new one"
    elsewhere = writes_elsewhere(environ_of(proc), session.source, transcript, cwd_of(proc))
    if elsewhere:
        return None, f"pid {proc.pid}: {elsewhere}"
    ties, other = evidence_of(proc, argv, session)
    if other and not ties:
        return None, f"pid {proc.pid} {other}"
    return CliProcess(proc.pid, started, tuple(argv), cwd, tuple(args), tuple(ties)), None


def rival_transcript(transcript: str, started: float) -> str | None:
    """Another transcript in ``transcript``'s folder written after ``started`` (a process
    that started then may be its writer), if any; at most ``RIVALS_LOOKED_AT`` are looked at,
    and past that the folder counts as holding one."""
    own = os.path.realpath(transcript)
    folder = os.path.dirname(own)
    try:
        with os.scandir(folder) as entries:
            for index, entry in enumerate(entries):
                if index >= RIVALS_LOOKED_AT:
                    return f"one of more than {RIVALS_LOOKED_AT} files in {folder}"
                if not entry.name.endswith(".jsonl") or entry.path == own:
                    continue
                try:
                    written = entry.stat(follow_symlinks=False).st_mtime
                except OSError:
                    continue
                if written > started:
                    return entry.path
    except OSError:
        return None
    return None


def _environ_of_pid(pid: int) -> dict[str, str]:
    try:
        return environ_of(psutil.Process(pid))
    except psutil.Error:
        return {}


def _drop_launchers(found: list[CliProcess]) -> list[CliProcess]:
    """Leave out a launcher (``node codex.js …``, ``node cli-wrapper.cjs …``) whose child
    candidate runs the same arguments: the child is the CLI, the launcher forwards signals."""
    launchers = set()
    for child in found:
        try:
            parent = psutil.Process(child.pid).ppid()
        except psutil.Error:
            continue
        for other in found:
            if other.pid == parent and other.arguments == child.arguments:
                launchers.add(other.pid)
    return [proc for proc in found if proc.pid not in launchers]


def find_cli(session: CliSession) -> Lookup:
    """The process that writes ``session``, or None with the reason (see the module doc)."""
    if session.source not in SOURCES:
        return Lookup(None, f"unknown source {session.source!r}")
    cwd = session_cwd(session)
    if cwd is None:
        return Lookup(None, f"the session's cwd is unknown (not given, not in "
                            f"{session.transcript})")
    transcript = os.path.realpath(session.transcript)
    found: list[CliProcess] = []
    left_out: list[str] = []
    for proc in psutil.process_iter():
        candidate, why_not = _candidate(proc, session, cwd, transcript)
        if candidate:
            found.append(candidate)
        elif why_not:
            left_out.append(why_not)
    found = _drop_launchers(found)
    aside = f" (left out: {'; '.join(left_out)})" if left_out else ""
    tied = [proc for proc in found if proc.ties]
    if len(tied) == 1:
        (proc,) = tied
        return Lookup(proc, f"pid {proc.pid}: {'; '.join(proc.ties)}", tuple(found))
    if len(tied) > 1:
        named = "; ".join(f"pid {proc.pid}: {', '.join(proc.ties)}" for proc in tied)
        return Lookup(None, f"ambiguous: {len(tied)} {session.source} processes in {cwd} are "
                            f"tied to session {session.session_id} ({named})", tuple(found),
                      ambiguous=True)
    if not found:
        return Lookup(None, f"no {session.source} process runs in {cwd}{aside}")
    if len(found) > 1:
        pids = ", ".join(str(proc.pid) for proc in found)
        return Lookup(None, f"ambiguous: {len(found)} {session.source} processes run in {cwd} "
                            f"(pids {pids}) and none is tied to session {session.session_id}",
                      tuple(found), ambiguous=True)
    (proc,) = found
    first = first_entry_time(session.transcript)
    if first is None:
        return Lookup(None, f"pid {proc.pid} is the only {session.source} process in {cwd}, "
                            "but the transcript has no timestamped entry to compare its start "
                            "with", tuple(found))
    if proc.create_time > first + CLOCK_SLACK:
        return Lookup(None, f"pid {proc.pid} is the only {session.source} process in {cwd}, "
                            f"but it started {proc.create_time - first:.1f} s after the "
                            "transcript's first entry and nothing else ties it to the session",
                      tuple(found))
    if not in_cwd_folder(session, transcript, _environ_of_pid(proc.pid)):
        return Lookup(None, f"pid {proc.pid} is the only {session.source} process in {cwd}, "
                            "but the transcript is not in the folder Claude Code keeps that "
                            f"cwd's sessions in ({claude_project_folder(cwd)}): nothing but "
                            "the cwd it claims ties the two", tuple(found))
    rival = rival_transcript(session.transcript, proc.create_time)
    if rival is not None:
        return Lookup(None, f"pid {proc.pid} is the only {session.source} process in {cwd}, "
                            f"but another session's transcript beside this one ({rival}) was "
                            "written since it started: it may be that session's writer",
                      tuple(found))
    proc = replace(proc, ties=("the only one in the cwd, started before the transcript's "
                               "first entry",))
    return Lookup(proc, f"pid {proc.pid}: {proc.ties[0]}", (proc,))

"""Every source under a state dir plus the gateway log, found again as agents appear."""

from __future__ import annotations

import os
import time

from monitor.log_names import DEFAULT_FAMILY, family_of, local_date, log_date, logs_in
from monitor.sources.base import Source
from monitor.sources.claude_code import ClaudeCodeSource, is_claude_code_entry
from monitor.sources.codex import CodexSource, is_codex_entry
from monitor.sources.gateway_log import GatewayLogSource
from monitor.sources.jsonl_tree import first_entry
from monitor.sources.legacy import LegacySessionsSource
from monitor.sources.saved import saved_dict
from monitor.sources.sqlite_agent import SqliteAgentSource
from monitor.sources.tail_state import FollowerState, complete_files
from monitor.sources.transcript_light import CountOnly
from monitor.sources.transcript_owners import TranscriptOwners

AGENT_DB = os.path.join("agent", "openclaw-agent.sqlite")
RESCAN_SECONDS = 2.0
#: How long one ``poll`` reads before the sources stop at their next step boundary (each
#: makes some progress): reading and folding a step must not hold a stop signal or a quit
#: key for seconds (folding takes about twice as long as reading).
STEP_SECONDS = 0.1
FIRST_POLL_BUDGET_BYTES = 1 << 20   # the first poll is small so a board shows the index at once
#: A step's reading once the monitor is stopping (``note_stopping``): folding what a step
#: reads is not bounded by its deadline, and 2 MiB of tool calls take most of a second to
#: fold with every detector, too much of the 2 s a stop may take.
STOPPING_POLL_BUDGET_BYTES = 256 << 10


def source_id(source: Source) -> str:
    if getattr(source, "stream", False):        # "-", "journal:UNIT": not a path
        return f"{source.kind}:{source.path}"
    return f"{source.kind}:{os.path.abspath(source.path)}"


class SourceSet:
    """Owns the sources and their checkpoints.

    ``state_dir`` may be an OpenClaw state dir, or any dir holding
    ``agents/<id>/...``; explicit ``paths`` add single files or dirs (an agent
    DB, a sessions dir, a transcript, a gateway log; a ``.jsonl`` written by Claude Code or
    Codex CLI is read as theirs). ``claude_dirs`` are Claude Code projects dirs,
    ``codex_dirs`` Codex sessions dirs (issue 14).
    """

    def __init__(self, *, state_dir: str | None = None, log_path: str | None = None,
                 paths: tuple[str, ...] = (), resume: dict | None = None,
                 include_archives: bool = False, replay: bool = False,
                 log_from_end: bool = False, rolling_log_dirs: tuple[str, ...] = (),
                 rolling_log_family: str = DEFAULT_FAMILY,
                 log_stream: str | None = None, from_start: bool = False,
                 transcripts_only: bool = False, only_sessions: frozenset[str] | None = None,
                 count_shared_errors: bool = True, claude_dirs: tuple[str, ...] = (),
                 codex_dirs: tuple[str, ...] = (), history_readers: int = 0) -> None:
        self.state_dir = state_dir
        #: Reader processes a legacy source may give its counted history to in its first
        #: scan (``history_split``); never in a replay or a shard.
        self.history_readers = 0 if replay or transcripts_only else history_readers
        self._quiet = False
        #: A shard of a split replay: no gateway log, only ``only_sessions``' transcripts
        #: (None: all), and the errors no session owns counted only if
        #: ``count_shared_errors``.
        self.transcripts_only = transcripts_only
        self.only_sessions = only_sessions
        self.count_shared_errors = count_shared_errors
        #: Given to every source (``set_count_only``): what the monitor only counts.
        self.count_only: CountOnly | None = None
        self.log_path = log_path
        self.rolling_log_dirs = rolling_log_dirs
        #: The family of the dated logs in ``rolling_log_dirs`` (``monitor.log_names``).
        self.rolling_log_family = rolling_log_family
        self.include_archives = include_archives
        #: What this set was built from, for ``session_reader``.
        self._inputs = {"paths": tuple(paths), "claude_dirs": tuple(claude_dirs),
                        "codex_dirs": tuple(codex_dirs)}
        self.replay = replay
        #: A source's saved state is handed to it only when it is a dict (a checkpoint on
        #: disk is not trusted); what is inside is the source's to check.
        self._resume = {key: value for key, value in saved_dict(resume).items()
                        if type(value) is dict}
        self.sources: list[Source] = []
        #: Which legacy source reads which transcript file, so that each is read once.
        self._transcript_owners = TranscriptOwners()
        self._known: set[str] = set()
        self._last_scan = float("-inf")
        self._log_held = False
        self._stopping = False
        self._polled: set[int] = set()
        self._add_earlier_days(log_path)
        if log_path:
            saved = self._resume.pop(f"gateway-log:{os.path.abspath(log_path)}", {})
            try:
                follower = FollowerState.from_json(saved["follower"])
            except (KeyError, ValueError):
                follower = None
            self._add(GatewayLogSource(
                log_path, include_rotated=replay, resume=follower,
                start_at_end=log_from_end and not follower))
        if log_stream:      # "-" (stdin) or "journal:UNIT"; raises StreamSetupError
            from monitor.sources.stream import open_log_stream

            self._add(open_log_stream(log_stream, to_eof=replay, from_start=from_start,
                                      resume=self._resume.pop(f"gateway-log:{log_stream}", None)))
        for path in paths:
            self._add_explicit(path)
        for directory in claude_dirs:
            self._add_cli_tree(ClaudeCodeSource, directory)
        for directory in codex_dirs:
            self._add_cli_tree(CodexSource, directory)
        self.rescan()

    # ---------------------------------------------------------------- building

    def _add(self, source: Source) -> None:
        sid = source_id(source)
        if self.transcripts_only and source.kind == "gateway-log":
            return
        source.only_sessions = self.only_sessions
        source.count_shared_errors = self.count_shared_errors
        if self.replay:
            source.shared_errors = {}
        source.count_only = self.count_only
        if hasattr(source, "history_readers"):
            source.history_readers = self.history_readers
            source.note_quiet(self._quiet)
        if sid not in self._known:
            self._known.add(sid)
            self.sources.append(source)
            if hasattr(source, "transcript_owners"):
                source.transcript_owners = self._transcript_owners
                if source.only_files is None:       # it lists the whole dir
                    self._transcript_owners.add_dir(source.path)

    def _add_earlier_days(self, log_path: str | None) -> None:
        """The earlier days' files of the dated log that the checkpoint names, each from its
        saved position, before ``log_path``: the gateway moved to the next day's file while
        the monitor was stopped, and what it wrote to the earlier one after the checkpoint is
        read too (a file gone since holds nothing left to read)."""
        dirs = {os.path.abspath(d) for d in self.rolling_log_dirs}
        current = os.path.abspath(log_path) if log_path else None
        for key in sorted(k for k in self._resume if k.startswith("gateway-log:")):
            path = key.partition(":")[2]
            if path == current or os.path.dirname(path) not in dirs \
                    or family_of(path) != self.rolling_log_family or not os.path.isfile(path):
                continue
            try:
                follower = FollowerState.from_json(self._resume[key].get("follower"))
            except ValueError:
                continue
            del self._resume[key]
            self._add(GatewayLogSource(path, resume=follower))

    def _resume_for(self, kind: str, path: str) -> dict | None:
        return self._resume.pop(f"{kind}:{os.path.abspath(path)}", None)

    def _add_agent_dir(self, agent_id: str, agent_dir: str) -> None:
        db = os.path.join(agent_dir, AGENT_DB)
        if os.path.exists(db) and f"sqlite:{os.path.abspath(db)}" not in self._known:
            self._add(SqliteAgentSource(db, agent_id, resume=self._resume_for("sqlite", db)))
        sessions = os.path.join(agent_dir, "sessions")
        if os.path.isdir(sessions) and f"jsonl:{os.path.abspath(sessions)}" not in self._known:
            self._add(LegacySessionsSource(sessions, agent_id,
                                           resume=self._resume_for("jsonl", sessions),
                                           include_archives=self.include_archives))

    def _add_cli_tree(self, kind: type, directory: str) -> None:
        """A Claude Code or Codex source of every transcript under ``directory``."""
        directory = os.path.abspath(directory)
        if f"jsonl:{directory}" not in self._known:
            self._add(kind(directory, resume=self._resume_for("jsonl", directory)))

    def _add_explicit(self, path: str) -> None:
        path = os.path.abspath(path)
        agent_id = _agent_id_from_path(path)
        if os.path.isdir(os.path.join(path, "agents")):
            self.state_dir = self.state_dir or path
        elif os.path.isdir(path):
            if os.path.exists(os.path.join(path, AGENT_DB)):
                self._add_agent_dir(agent_id, path)
            else:
                self._add(LegacySessionsSource(path, agent_id,
                                               resume=self._resume_for("jsonl", path),
                                               include_archives=self.include_archives))
        elif path.endswith(".sqlite"):
            self._add(SqliteAgentSource(path, agent_id, resume=self._resume_for("sqlite", path)))
        elif path.endswith(".jsonl") and (cli := _cli_source_of(path)) is not None:
            self._add(cli.for_file(path))
        elif ".jsonl" in os.path.basename(path):
            self._add(LegacySessionsSource(os.path.dirname(path), agent_id,
                                           include_archives=True, only_files={path}))
        else:
            self._add(GatewayLogSource(path, include_rotated=self.replay))

    def rescan(self) -> None:
        """Pick up agents (and their databases) created since the last scan, and the
        gateway's next daily log file when the log was found by its rolling name: every
        dated log of its family named for a day from yesterday (or the log's own day, if
        older) on, not only the newest, which anyone who can write the dir can make theirs
        (``log_names``)."""
        self._last_scan = time.monotonic()
        if self.rolling_log_dirs:
            since = min(log_date(self.log_path) or local_date(-1), local_date(-1))
            for path in logs_in(list(self.rolling_log_dirs), self.rolling_log_family,
                                since=since):
                if f"gateway-log:{os.path.abspath(path)}" not in self._known:
                    self.log_path = path
                    self._add(GatewayLogSource(path))
        if not self.state_dir:
            return
        root = os.path.join(self.state_dir, "agents")
        try:
            names = sorted(os.listdir(root))
        except OSError:
            return
        for name in names:
            agent_dir = os.path.join(root, name)
            if os.path.isdir(agent_dir):
                self._add_agent_dir(name, agent_dir)

    # ----------------------------------------------------------------- running

    def poll(self) -> list:
        """``_poll_step``; in ``replay`` the files read are complete (``complete_files``: a
        last line without a newline is read at once)."""
        with complete_files(self.replay):
            return self._poll_step()

    def _poll_step(self) -> list:
        """New events of every source, at most one step (see ``Source.behind``) of each.

        Transcripts come before the log, so that log lines can be attributed to the
        sessions and runs they mention; while any transcript source is behind, the log
        waits, so it is never folded ahead of the runs it names (where reader processes
        count the history, it is parsed meanwhile: ``log_ahead``). Once ``note_stopping`` was
        called, files that a later run could not find are read first, the log's too.
        """
        if time.monotonic() - self._last_scan >= RESCAN_SECONDS:
            self.rescan()
        deadline = time.monotonic() + STEP_SECONDS
        for source in self.sources:
            source.deadline = deadline
        out: list = []
        transcripts = [s for s in self.sources if s.kind != "gateway-log"]
        if self._stopping:
            for source in transcripts:
                source.detached_first()
        for source in transcripts:
            out.extend(self._poll_source(source))
        self._log_held = any(s.behind for s in transcripts)
        for source in self.sources:
            if source.kind != "gateway-log":
                continue
            if not self._log_held or (self._stopping and source.detached_first()):
                out.extend(self._poll_source(source))
            elif self.history_readers and not self._stopping \
                    and hasattr(source, "parse_ahead"):
                source.parse_ahead()
        return out

    def note_stopping(self) -> None:
        """The monitor is about to checkpoint and exit: what it holds of files rotated or
        deleted meanwhile is read first (a restart could not find them), even ahead of the
        runs a log line names."""
        self._stopping = True

    def _poll_source(self, source: Source) -> list:
        """One step of ``source``; its first step reads at most ``FIRST_POLL_BUDGET_BYTES``,
        and each step once stopping at most ``STOPPING_POLL_BUDGET_BYTES``."""
        first = id(source) not in self._polled
        self._polled.add(id(source))
        source.stopping = self._stopping
        limit = FIRST_POLL_BUDGET_BYTES if first else \
            STOPPING_POLL_BUDGET_BYTES if self._stopping else None
        if limit is None or not hasattr(source, "poll_budget_bytes"):
            return source.poll()
        budget = source.poll_budget_bytes
        source.poll_budget_bytes = min(budget, limit)
        try:
            return source.poll()
        finally:
            source.poll_budget_bytes = budget

    def set_count_only(self, count_only: CountOnly | None) -> None:
        """The entries the monitor only counts are read light from now on (the
        transcript sources that keep an index of their own: OpenClaw's)."""
        self.count_only = count_only
        for source in self.sources:
            source.count_only = count_only

    def note_quiet(self, quiet: bool) -> None:
        """Whether the monitor folds quietly now (``Monitor.quiet``): only then may a first
        scan's history come summed from reader processes."""
        self._quiet = quiet
        for source in self.sources:
            if hasattr(source, "note_quiet"):
                source.note_quiet(quiet)

    def session_reader(self, session_id: str) -> SourceSet:
        """A set that reads one session's transcripts from their start to their end (a
        board's timeline, loaded when the session is first looked at)."""
        return SourceSet(state_dir=self.state_dir, paths=self._inputs["paths"],
                         include_archives=self.include_archives, replay=True,
                         transcripts_only=True, only_sessions=frozenset({session_id}),
                         count_shared_errors=False, claude_dirs=self._inputs["claude_dirs"],
                         codex_dirs=self._inputs["codex_dirs"])

    def keep_only_logs(self) -> None:
        """Close and drop every source but the gateway log(s), and find no more agents: the
        transcripts have been read elsewhere (a split replay)."""
        for source in self.sources:
            if source.kind != "gateway-log":
                source.close()
        self.sources = [s for s in self.sources if s.kind == "gateway-log"]
        self.state_dir = None

    def note_changed(self, paths: set[str] | None) -> None:
        """Paths the waker saw change (None: unknown), for the sources to look at first."""
        if paths is None or paths:
            for source in self.sources:
                source.note_changed(paths)

    def unfinished_of(self, session_ids: list[str]) -> set[str] | None:
        """Those of ``session_ids`` with a transcript some source may read more of in this
        pass (``Source.unfinished_of``); None when a source cannot tell."""
        unfinished: set[str] = set()
        for source in self.sources:
            sessions = source.unfinished_of(session_ids)
            if sessions is None:
                return None
            unfinished |= sessions
        return unfinished

    @property
    def behind(self) -> bool:
        """More is readable now: poll again without waiting."""
        return self._log_held or any(s.behind for s in self.sources)

    @property
    def backlog_bytes(self) -> int:
        """What the sources know to be readable but unread (an estimate, for progress)."""
        return sum(s.backlog_bytes for s in self.sources)

    def agent_of(self, origin: str) -> str:
        """The agent whose source read the event ``origin`` names (``<path>@<offset>`` of a
        transcript line, ``<db>#<session>:<seq>`` of a row), "" when none: a transcript no
        index lists (or an archive) is still in ``agents/<id>/``."""
        for source in self.sources:
            agent = getattr(source, "agent_id", None)
            path = source.path
            if agent and origin.startswith(path) and origin[len(path):len(path) + 1] in (
                    os.sep, "#", "@"):
                return agent
        return ""

    @property
    def exhausted(self) -> bool:
        """A stream was given as the log (``--log -``, ``--journal``), it has ended, and
        there is nothing else to watch (no state dir, no other source): a live loop stops."""
        streams = [s for s in self.sources if getattr(s, "stream", False)]
        others = self.state_dir or any(not getattr(s, "stream", False) for s in self.sources)
        return bool(streams) and all(s.finished for s in streams) and not others

    def stream_failures(self) -> list[str]:
        """What made a stream source fail (journalctl exiting with an error)."""
        return [s.failure for s in self.sources if getattr(s, "failure", None)]

    def stream_notes(self) -> list[str]:
        """What an ended stream source has to say though it did not fail (no entries)."""
        return [s.empty_note for s in self.sources if getattr(s, "empty_note", None)]

    def attach_waker(self, wake) -> None:
        """Stream sources call ``wake`` (from their reader thread) when data arrives."""
        for source in self.sources:
            if hasattr(source, "attach_waker"):
                source.attach_waker(wake)

    def watch_paths(self) -> list[str]:
        paths = [self.state_dir] if self.state_dir else []
        paths += [os.path.dirname(os.path.abspath(s.path)) if s.kind == "gateway-log"
                  else s.path for s in self.sources if not getattr(s, "stream", False)]
        paths += list(self.rolling_log_dirs)
        return [p for p in paths if p]

    def checkpoint(self) -> dict:
        return {source_id(s): s.checkpoint() for s in self.sources}

    def summaries(self) -> list[dict]:
        return [s.summary() for s in self.sources]

    def close(self) -> None:
        for source in self.sources:
            source.close()


def _cli_source_of(path: str) -> type | None:
    """``ClaudeCodeSource`` or ``CodexSource`` when the transcript ``path`` was written by
    Claude Code or Codex CLI (told by its first JSON object), else None."""
    entry = first_entry(path)
    if entry is None:
        return None
    if is_codex_entry(entry):
        return CodexSource
    if is_claude_code_entry(entry):
        return ClaudeCodeSource
    return None


def _agent_id_from_path(path: str) -> str:
    parts = os.path.normpath(path).split(os.sep)
    if "agents" in parts:
        index = len(parts) - 1 - parts[::-1].index("agents")
        if index + 1 < len(parts):
            return parts[index + 1]
    return "main"

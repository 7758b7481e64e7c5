"""The SQLite-era source at scale: cheap per-poll queries and bounded, exactly-once steps.

Databases are written by the simulator's ``SqliteAgentWriter`` in OpenClaw's schema
(large events stored zstd-compressed, as the gateway stores them). A step budget far
below the data forces many polls; every run is compared with one unbounded read.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from monitor.demo.sim import transcript as tx
from monitor.demo.sim.sqlite_writer import SqliteAgentWriter
from monitor.events import SessionInfo, SourceError, SourceNotice
from monitor.sources.sqlite_agent import SqliteAgentSource
from monitor.sources.sqlite_unread import NEW_ROWS_SQL

UNBOUNDED = {"poll_budget_bytes": 1 << 40, "step_rows": 1 << 40}
SMALL_STEP = {"poll_budget_bytes": 48 * 1024, "step_rows": 40}
BIG_TEXT_BYTES = 12_000  # well past the writer's zstd threshold
T0 = 1_795_960_000.0


def session_id(n: int) -> str:
    return f"{n:08d}-0000-4000-8000-000000000000"


class Agent:
    """One agent database and the turns written to it, session by session."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.writer = SqliteAgentWriter(path)
        self.turns: Counter[str] = Counter()
        self.clock = T0

    def tick(self) -> float:
        self.clock += 0.5
        return self.clock

    def start(self, n: int) -> str:
        sid = session_id(n)
        now = self.tick()
        self.writer.upsert_session(f"agent:main:s{n}", sid, {"model": "m", "status": "running"},
                                   "running", updated_at=int(now * 1000), model="m",
                                   provider="p")
        self.writer.append_event(sid, tx.session_header(sid, now, "/tmp"))
        return sid

    def turn(self, sid: str, *, big: bool = False) -> None:
        """An assistant tool call and its result; ``big`` makes the result a zstd row."""
        ordinal = self.turns[sid]
        self.turns[sid] += 1
        call_id = f"{sid[:8]}-call-{ordinal}"
        now = self.tick()
        self.writer.append_event(sid, tx.assistant_message(
            f"a{ordinal}", "p", now, content=[tx.tool_call_item(call_id, "exec",
                                                                {"command": f"echo {ordinal}"})],
            model_usage=tx.usage(10, 2), stop_reason="toolUse", started_ts=now,
            response_id=f"r{ordinal}", run_id="run", provider="p", model="m", api="chat"))
        text = "".join(f"{ordinal}:{i:06d} " for i in range(BIG_TEXT_BYTES // 10)) if big \
            else "ok"
        self.writer.append_event(sid, tx.tool_result(
            f"t{ordinal}", f"a{ordinal}", self.tick(), call_id=call_id, tool="exec", text=text,
            details=None, is_error=False, run_id="run"))

    def close(self) -> None:
        self.writer.close()


@pytest.fixture
def agent(tmp_path: Path):
    """Six sessions written one after another (s1 oldest); s2 is big, then s1 is written
    to again, so by last activity the order is s1, s6, s5, s4, s3, s2."""
    agent = Agent(tmp_path / "agents" / "main" / "agent" / "openclaw-agent.sqlite")
    sids = {n: agent.start(n) for n in range(1, 7)}
    for n, sid in sids.items():
        for i in range(30 if n == 2 else 6):
            agent.turn(sid, big=(n == 2 or i % 3 == 0))
    agent.turn(sids[1])
    yield agent
    agent.close()


def transcript_events(events: list) -> list:
    return [e for e in events
            if not isinstance(e, (SessionInfo, SourceNotice, SourceError))]


def by_session(events: list) -> dict[str, list[str]]:
    """Each session's transcript events in read order, as reprs (exact, hashable)."""
    sessions: dict[str, list[str]] = {}
    for event in transcript_events(events):
        sessions.setdefault(event.session_id, []).append(repr(event))
    return sessions


def unbounded_read(path: Path) -> list:
    source = SqliteAgentSource(str(path), "main", **UNBOUNDED)
    events = source.poll()
    assert not source.behind and source.errors == 0
    source.close()
    return events


def drain(source: SqliteAgentSource, between=None, limit: int = 1000) -> tuple[list, list]:
    """Poll until the source is not behind; returns (events of each poll, behind after each
    poll). ``between(i)`` runs after poll ``i``, e.g. to append rows."""
    polls, behind = [], []
    for i in range(limit):
        polls.append(source.poll())
        behind.append(source.behind)
        if between is not None:
            between(i)
        if not source.behind:
            return polls, behind
    raise AssertionError(f"still behind after {limit} polls")


def assert_same_reads(polls: list[list], reference: list) -> None:
    """The union of ``polls`` is the reference read: same events, none twice, none missing,
    each session's events in the reference order."""
    union = [e for events in polls for e in events]
    assert Counter(map(repr, transcript_events(union))) == \
        Counter(map(repr, transcript_events(reference)))
    assert by_session(union) == by_session(reference)


def plan_of(conn: sqlite3.Connection, sql: str, params: tuple = ()) -> list[str]:
    return [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql, params)]


# ------------------------------------------------------------------------ query plans

def test_new_rows_query_is_a_rowid_range_search(agent: Agent) -> None:
    agent.writer.commit()
    conn = sqlite3.connect(f"file:{agent.path}?mode=ro", uri=True)
    plan = plan_of(conn, NEW_ROWS_SQL, (10,))
    assert any("USING INTEGER PRIMARY KEY" in step for step in plan), plan
    assert not any(step.startswith("SCAN") for step in plan), plan
    distinct = plan_of(conn, "SELECT DISTINCT session_id FROM transcript_events "
                             "WHERE rowid > ?", (10,))
    assert any(step.startswith("SCAN") for step in distinct), \
        "the DISTINCT form this replaced should scan the index; the check above would not fail"
    conn.close()


def test_a_poll_between_sweeps_scans_no_table(agent: Agent) -> None:
    """Every SELECT of a poll that is not a sweep is an index or rowid search: its cost
    follows what changed, not the size of the database."""
    source = SqliteAgentSource(str(agent.path), "main", sweep_seconds=3600, **UNBOUNDED)
    source.poll()
    statements: list[str] = []
    assert source._conn is not None
    source._conn.set_trace_callback(statements.append)
    agent.turn(session_id(3))
    agent.writer.upsert_session("agent:main:s3", session_id(3), {"model": "m"}, "done",
                                updated_at=int(agent.tick() * 1000))
    events = source.poll()
    assert len(transcript_events(events)) > 0
    selects = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
    assert any("transcript_events WHERE rowid >" in s for s in selects), selects
    conn = sqlite3.connect(f"file:{agent.path}?mode=ro", uri=True)
    for sql in selects:
        plan = plan_of(conn, sql)
        assert not any(step.startswith("SCAN") for step in plan), (sql, plan)
    conn.close()
    source.close()


def test_a_source_of_some_sessions_sweeps_only_theirs(agent: Agent) -> None:
    """A source reading some sessions (a replay's shard, one session's timeline) looks
    each up in the index when it sweeps, where a sweep of every session scans it all, and
    reads exactly what the whole read gives those sessions."""
    wanted = {session_id(2), session_id(5)}
    source = SqliteAgentSource(str(agent.path), "main", sweep_seconds=0, **UNBOUNDED)
    source.only_sessions = frozenset(wanted)
    polls = [source.poll()]
    statements: list[str] = []
    assert source._conn is not None
    source._conn.set_trace_callback(statements.append)
    for n in (2, 3, 5):
        agent.turn(session_id(n))
    agent.writer.commit()
    polls.append(source.poll())
    sweeps = [s for s in statements if "max(seq)" in s]
    assert len(sweeps) == 1, statements
    conn = sqlite3.connect(f"file:{agent.path}?mode=ro", uri=True)
    plan = plan_of(conn, sweeps[0])
    assert not any(step.startswith("SCAN") for step in plan), (sweeps[0], plan)
    assert set(by_session(polls[1])) == wanted
    reference = [e for e in unbounded_read(agent.path)
                 if getattr(e, "session_id", None) in wanted]
    assert_same_reads(polls, reference)
    conn.close()
    source.close()


# --------------------------------------------------------------------- bounded steps

def test_budgeted_polls_read_exactly_what_one_unbounded_read_does(agent: Agent) -> None:
    reference = unbounded_read(agent.path)
    source = SqliteAgentSource(str(agent.path), "main", **SMALL_STEP)
    polls, behind = drain(source)
    assert len(polls) >= 8
    assert behind[:-1] == [True] * (len(polls) - 1) and behind[-1] is False
    assert_same_reads(polls, reference)
    big = session_id(2)
    assert sum(1 for events in polls if big in by_session(events)) >= 4, \
        "the big session must be read over several polls"
    assert transcript_events(source.poll()) == [] and not source.behind
    source.close()


def test_each_poll_stays_within_its_budget_but_one_row(agent: Agent) -> None:
    conn = sqlite3.connect(f"file:{agent.path}?mode=ro", uri=True)
    size = {f"{sid}:{seq}": n for sid, seq, n in conn.execute(
        "SELECT session_id, seq, event_utf8_bytes FROM transcript_events")}
    conn.close()
    largest = max(size.values())
    source = SqliteAgentSource(str(agent.path), "main", **SMALL_STEP)
    polls, _ = drain(source)
    for events in polls:
        rows = {e.origin.removeprefix(f"{agent.path}#").split("#")[0]
                for e in transcript_events(events)}
        assert len(rows) <= SMALL_STEP["step_rows"]
        assert sum(size[row] for row in rows) <= SMALL_STEP["poll_budget_bytes"] + largest
    source.close()


def test_backlog_is_positive_while_behind_and_zero_once_caught_up(agent: Agent) -> None:
    source = SqliteAgentSource(str(agent.path), "main", **SMALL_STEP)
    backlog = []
    _, behind = drain(source, between=lambda i: backlog.append(source.backlog_bytes))
    assert all(b > 0 for b, late in zip(backlog, behind, strict=True) if late)
    assert backlog[-1] == 0
    assert backlog[0] > backlog[len(backlog) // 2], "the backlog shrinks as the source reads"
    source.close()


def test_first_poll_emits_the_whole_index_then_most_recent_sessions_first(
        agent: Agent) -> None:
    source = SqliteAgentSource(str(agent.path), "main", **SMALL_STEP)
    polls, _ = drain(source)
    first = polls[0]
    indexed = [i for i, e in enumerate(first) if isinstance(e, SessionInfo)]
    read = [i for i, e in enumerate(first)
            if not isinstance(e, (SessionInfo, SourceNotice, SourceError))]
    assert {e.session_id for e in first if isinstance(e, SessionInfo)} == {
        session_id(n) for n in range(1, 7)}
    assert read and max(indexed) < min(read)
    order: list[str] = []
    for events in polls:
        for event in transcript_events(events):
            if event.session_id not in order:
                order.append(event.session_id)
    assert order == [session_id(n) for n in (1, 6, 5, 4, 3, 2)]
    source.close()


@pytest.mark.parametrize("sweep_seconds", [0.0, 3600.0], ids=["sweep-every-poll", "no-sweep"])
def test_rows_appended_between_steps_are_read_exactly_once(agent: Agent,
                                                           sweep_seconds: float) -> None:
    source = SqliteAgentSource(str(agent.path), "main", sweep_seconds=sweep_seconds,
                               **SMALL_STEP)
    late = session_id(7)

    def append(i: int) -> None:
        agent.turn(session_id(2), big=True)     # the big session, while it is being read
        agent.turn(session_id(4 + i % 2))       # sessions already read
        if i == 2:
            agent.start(7)
        if i >= 2:
            agent.turn(late, big=i % 2 == 0)

    polls, behind = drain(source, between=append)
    assert len(polls) >= 8 and behind[-1] is False
    polls.append(source.poll())   # what the last append wrote
    assert not source.behind
    assert_same_reads(polls, unbounded_read(agent.path))
    assert late in by_session([e for events in polls for e in events])
    source.close()


def test_checkpoint_and_resume_mid_catch_up_read_each_row_once(agent: Agent) -> None:
    first = SqliteAgentSource(str(agent.path), "main", **SMALL_STEP)
    polls = [first.poll() for _ in range(3)]
    assert first.behind
    saved = first.checkpoint()
    first.close()
    agent.turn(session_id(2), big=True)
    agent.turn(session_id(6))
    resumed = SqliteAgentSource(str(agent.path), "main", resume=saved, **SMALL_STEP)
    more, behind = drain(resumed)
    assert behind[-1] is False
    assert_same_reads(polls + more, unbounded_read(agent.path))
    resumed.close()

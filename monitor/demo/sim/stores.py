"""The two storage eras behind one small interface, so the simulator is era-agnostic."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from monitor.demo.sim.legacy_writer import LegacyWriter
from monitor.demo.sim.sqlite_writer import SqliteAgentWriter
from monitor.demo.sim.transcript import to_ms


@dataclass(frozen=True, slots=True)
class IndexRow:
    """What the session index says about one session (times in epoch seconds)."""

    key: str
    session_id: str
    entry: dict[str, Any]
    status: str
    created: float
    updated: float
    started: float | None
    ended: float | None
    provider: str
    model: str
    previous_session_id: str | None = None
    reason: str | None = None


class Store(Protocol):
    path: Path

    def append(self, session_id: str, event: dict[str, Any], ts: float) -> None: ...

    def trajectory(self, session_id: str, run_id: str, event: dict[str, Any],
                   ts: float) -> None: ...

    def index(self, row: IndexRow) -> None: ...

    def archive(self, session_id: str, ts: float) -> Path | None: ...

    def close(self) -> None: ...


def sqlite_path(state_dir: Path, agent_id: str) -> Path:
    return state_dir / "agents" / agent_id / "agent" / "openclaw-agent.sqlite"


def sessions_dir(state_dir: Path, agent_id: str) -> Path:
    return state_dir / "agents" / agent_id / "sessions"


class SqliteStore:
    def __init__(self, state_dir: Path, agent_id: str, *, autocommit: bool = True) -> None:
        self.path = sqlite_path(state_dir, agent_id)
        self.writer = SqliteAgentWriter(self.path, autocommit=autocommit)

    def append(self, session_id: str, event: dict[str, Any], ts: float) -> None:
        self.writer.append_event(session_id, event, created_at=to_ms(ts))

    def trajectory(self, session_id: str, run_id: str, event: dict[str, Any],
                   ts: float) -> None:
        self.writer.append_trajectory(session_id, run_id, event, created_at=to_ms(ts))

    def index(self, row: IndexRow) -> None:
        self.writer.upsert_session(
            row.key, row.session_id, row.entry, row.status,
            created_at=to_ms(row.created), updated_at=to_ms(row.updated),
            started_at=_ms_or_none(row.started), ended_at=_ms_or_none(row.ended),
            model=row.model, provider=row.provider,
            previous_session_id=row.previous_session_id, reason=row.reason,
            last_interaction_at=to_ms(row.created), transcript_updated_at=to_ms(row.updated),
        )

    def archive(self, session_id: str, ts: float) -> Path | None:
        return None

    def close(self) -> None:
        self.writer.close()


class LegacyStore:
    def __init__(self, state_dir: Path, agent_id: str, *, split_writes: bool = False) -> None:
        self.path = sessions_dir(state_dir, agent_id)
        self.writer = LegacyWriter(self.path, split_writes=split_writes)

    def append(self, session_id: str, event: dict[str, Any], ts: float) -> None:
        self.writer.append_event(session_id, event)

    def trajectory(self, session_id: str, run_id: str, event: dict[str, Any],
                   ts: float) -> None:
        return None

    def index(self, row: IndexRow) -> None:
        entry = dict(row.entry)
        ordered = {"sessionId": entry.pop("sessionId", row.session_id),
                   "sessionFile": str(self.writer.transcript_path(row.session_id))}
        ordered.update(entry)
        self.writer.upsert_session(row.key, ordered)

    def archive(self, session_id: str, ts: float) -> Path | None:
        return self.writer.archive(session_id, "reset", ts)

    def close(self) -> None:
        self.writer.close()


def _ms_or_none(ts: float | None) -> int | None:
    return None if ts is None else to_ms(ts)

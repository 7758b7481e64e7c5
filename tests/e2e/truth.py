"""Ground truth for the e2e tests, read straight from an OpenClaw agent DB with plain SQL.

Deliberately independent of ``monitor``: the e2e tests compare clawwatch's output with what
this module computes. Transcript rows hold either ``event_json`` (TEXT) or, for larger events
since agent schema 23, ``event_zstd`` (a zstd frame of the same JSON); both are read here.

``export_legacy`` rewrites a DB as the pre-SQLite layout (``agents/<id>/sessions/*.jsonl`` plus
``sessions.json``) so the same history can be replayed through clawwatch's JSONL reader.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

import zstandard


@dataclass
class SessionTruth:
    """What one transcript generation (``session_id``) contains."""

    session_id: str
    key: str | None
    agent_id: str
    tool_calls: int = 0
    tools: dict[str, int] = field(default_factory=dict)
    tokens: dict[str, int] = field(default_factory=lambda: {"input": 0, "output": 0, "total": 0})
    call_ids: list[str] = field(default_factory=list)
    events: int = 0
    zstd_events: int = 0
    zstd_tool_calls: int = 0

    def content(self) -> tuple:
        """What the transcript says, without how it was stored (for comparing stores)."""
        return (self.session_id, self.key, self.agent_id, self.tool_calls, self.tools,
                self.tokens, self.call_ids, self.events)

    def add(self, event: dict, *, compressed: bool = False) -> None:
        """Account one transcript event."""
        self.events += 1
        self.zstd_events += compressed
        message = event.get("message") if event.get("type") == "message" else None
        if not isinstance(message, dict) or message.get("role") != "assistant":
            return
        for part in message.get("content") or []:
            if isinstance(part, dict) and part.get("type") == "toolCall":
                self.tool_calls += 1
                self.zstd_tool_calls += compressed
                self.tools[part.get("name")] = self.tools.get(part.get("name"), 0) + 1
                self.call_ids.append(part.get("id"))
        usage = message.get("usage") or {}
        self.tokens["input"] += int(usage.get("input") or 0)
        self.tokens["output"] += int(usage.get("output") or 0)
        self.tokens["total"] += int(usage.get("totalTokens") or 0)


def connect_ro(agent_db: str | Path) -> sqlite3.Connection:
    """A read-only connection (safe while the gateway writes; WAL readers see commits)."""
    return sqlite3.connect(f"file:{Path(agent_db)}?mode=ro", uri=True, timeout=10)


def agent_id_of(agent_db: str | Path) -> str:
    """``main`` for ``.../agents/main/agent/openclaw-agent.sqlite``."""
    return Path(agent_db).parent.parent.name


def decode_row(event_json: str | None, event_zstd: bytes | None) -> str:
    """The event's JSON text, whichever column holds it."""
    if event_json is not None:
        return event_json
    return zstandard.ZstdDecompressor().decompressobj().decompress(event_zstd).decode("utf-8")


def iter_rows(db: sqlite3.Connection, session_id: str) -> Iterator[tuple[int, str, bool]]:
    """``(seq, json_text, was_compressed)`` for every transcript event, in seq order."""
    rows = db.execute("SELECT seq, event_json, event_zstd FROM transcript_events "
                      "WHERE session_id = ? ORDER BY seq", (session_id,))
    for seq, event_json, event_zstd in rows:
        yield seq, decode_row(event_json, event_zstd), event_json is None


def _session_keys(db: sqlite3.Connection) -> dict[str, str]:
    keys = dict(db.execute("SELECT current_session_id, session_key FROM session_nodes"))
    keys.update(db.execute("SELECT session_id, session_key FROM session_windows"))
    return keys


def session_truths(agent_db: str | Path) -> dict[str, SessionTruth]:
    """Per ``session_id``: key, tool calls (total, per tool, ids in order) and token sums."""
    agent_id = agent_id_of(agent_db)
    with closing(connect_ro(agent_db)) as db:
        keys = _session_keys(db)
        truths = {}
        session_ids = [row[0] for row in db.execute(
            "SELECT DISTINCT session_id FROM transcript_events ORDER BY session_id")]
        for session_id in session_ids:
            truth = SessionTruth(session_id, keys.get(session_id), agent_id)
            for _seq, text, compressed in iter_rows(db, session_id):
                truth.add(json.loads(text), compressed=compressed)
            truths[session_id] = truth
    return truths


def wait_quiescent(agent_db: str | Path, timeout: float = 15.0) -> dict[str, SessionTruth]:
    """Session truths once two reads 0.5 s apart agree (a run's last writes follow its end)."""
    deadline = time.monotonic() + timeout
    previous = session_truths(agent_db)
    while True:
        time.sleep(0.5)
        current = session_truths(agent_db)
        if current == previous or time.monotonic() > deadline:
            return current
        previous = current


def zstd_row_count(agent_db: str | Path) -> int:
    with closing(connect_ro(agent_db)) as db:
        return db.execute("SELECT count(*) FROM transcript_events "
                          "WHERE event_zstd IS NOT NULL").fetchone()[0]


def export_legacy(agent_db: str | Path, out_state_dir: str | Path) -> Path:
    """Write the DB's transcripts as legacy JSONL under ``out_state_dir``; return the sessions dir.

    Layout: ``agents/<agentId>/sessions/<sessionId>.jsonl`` (every transcript event in seq
    order, as stored) and ``sessions.json`` mapping each session key to its ``entry_json`` with
    ``sessionId`` and an absolute ``sessionFile``.
    """
    sessions_dir = Path(out_state_dir) / "agents" / agent_id_of(agent_db) / "sessions"
    sessions_dir.mkdir(parents=True, exist_ok=True)
    with closing(connect_ro(agent_db)) as db:
        session_ids = [row[0] for row in db.execute(
            "SELECT DISTINCT session_id FROM transcript_events")]
        for session_id in session_ids:
            _write_lines(sessions_dir / f"{session_id}.jsonl",
                         (text for _seq, text, _z in iter_rows(db, session_id)))
        store = {}
        for key, session_id, entry_json in db.execute(
                "SELECT session_key, current_session_id, entry_json FROM session_nodes"):
            entry = json.loads(entry_json)
            entry["sessionId"] = session_id
            entry["sessionFile"] = str((sessions_dir / f"{session_id}.jsonl").resolve())
            store[key] = entry
    (sessions_dir / "sessions.json").write_text(json.dumps(store, indent=2), encoding="utf-8")
    return sessions_dir


def legacy_truths(sessions_dir: str | Path) -> dict[str, SessionTruth]:
    """The same per-``session_id`` truth, computed from an exported legacy sessions dir."""
    sessions_dir = Path(sessions_dir)
    store = json.loads((sessions_dir / "sessions.json").read_text(encoding="utf-8"))
    keys = {entry["sessionId"]: key for key, entry in store.items()}
    agent_id = sessions_dir.parent.name
    truths = {}
    for path in sorted(sessions_dir.glob("*.jsonl")):
        truth = SessionTruth(path.stem, keys.get(path.stem), agent_id)
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    truth.add(json.loads(line))
        truths[path.stem] = truth
    return truths


def _write_lines(path: Path, texts: Iterable[str]) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for text in texts:
            # One event per line: re-serialize the rare event stored with raw line breaks.
            fh.write((json.dumps(json.loads(text)) if "\n" in text else text) + "\n")



@dataclass
class CallEvidence:
    """One tool call of a transcript and what OpenClaw's loop guard put on its result."""

    index: int
    call_id: str
    name: str
    veto: dict | None = None
    warning_after: int | None = None


WARNING_NOTE = "[System note: Tool-loop warning after "


def call_evidence(agent_db: str | Path, session_id: str) -> list[CallEvidence]:
    """Every tool call of ``session_id`` in order (``index`` 1-based), with its loop evidence.

    ``veto`` is ``details.intervention`` of a result OpenClaw blocked (``deniedReason``
    ``tool-loop``); ``warning_after`` is N from the ``[System note: Tool-loop warning after N
    …]`` text part OpenClaw adds to the result of a call it warned about.
    """
    calls: list[CallEvidence] = []
    by_id: dict[str, CallEvidence] = {}
    with closing(connect_ro(agent_db)) as db:
        for _seq, text, _compressed in iter_rows(db, session_id):
            message = json.loads(text).get("message")
            if not isinstance(message, dict):
                continue
            if message.get("role") == "assistant":
                for part in message.get("content") or []:
                    if isinstance(part, dict) and part.get("type") == "toolCall":
                        call = CallEvidence(len(calls) + 1, part.get("id"), part.get("name"))
                        calls.append(call)
                        by_id[call.call_id] = call
            elif message.get("role") == "toolResult" and message.get("toolCallId") in by_id:
                _add_result_evidence(by_id[message["toolCallId"]], message)
    return calls


def _add_result_evidence(call: CallEvidence, result: dict) -> None:
    details = result.get("details")
    if isinstance(details, dict) and details.get("deniedReason") == "tool-loop":
        call.veto = details.get("intervention") or {}
    for part in result.get("content") or []:
        text = part.get("text", "") if isinstance(part, dict) else ""
        if text.startswith(WARNING_NOTE):
            count = text[len(WARNING_NOTE):].split(" ", 1)[0]
            call.warning_after = int(count) if count.isdigit() else -1

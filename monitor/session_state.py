"""What the monitor knows of one session: its counts, tokens and newest findings."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from monitor.detect.findings import Finding

# Findings kept per session (the newest); ``findings_total`` counts every one. A session
# looping for days keeps producing findings (one per OpenClaw warning line, every tenth
# call), and the list must not grow with it. The dashboard shows a session's newest 50 and
# the alerts pane keeps its own history across sessions, so 50 is all a session needs; a
# kept finding costs ~290 bytes (key, tool and pattern are shared), 1,000 looping sessions
# at this cap ~15 MB.
FINDINGS_KEPT = 50
#: A loop finding within this many calls of the session's newest is still current …
CURRENT_CALLS = 12
#: … as is any finding this recent (relative to the session's newest event); a session
#: whose newest event is this recent is still under way.
CURRENT_SECONDS = 300.0
#: The index statuses of a session that has ended, or was stopped, and the board's state
#: for each.
ENDED_STATES = {"done": "done", "failed": "done", "timeout": "done",
                "killed": "stopped", "interrupted": "stopped"}


@dataclass(slots=True)
class SessionState:
    """What the monitor knows of one transcript generation (one ``session_id``).

    ``findings`` holds the newest ``FINDINGS_KEPT`` findings; ``findings_total`` counts all
    that the session ever produced (it also serves as the session's change marker).
    ``index_tokens`` is what the session index records (``inputTokens``, ``outputTokens``,
    ``totalTokens``): shown (``token_counts``, ``tokens_from == "index"``) while no
    transcript usage was read, e.g. for an index entry whose transcript is gone.
    """

    session_id: str
    key: str = ""
    agent_id: str = ""
    model: str | None = None
    status: str | None = None
    label: str | None = None
    run_id: str | None = None
    aborted_last_run: bool = False
    tool_calls: int = 0
    tools: Counter = field(default_factory=Counter)
    tokens_input: int = 0
    tokens_output: int = 0
    tokens_total: int = 0
    cost: float = 0.0
    assistant_messages: int = 0
    errors: int = 0
    first_ts: float | None = None
    last_ts: float | None = None
    findings: list[Finding] = field(default_factory=list)
    findings_total: int = 0
    #: "log": known only from a gateway-log loop line that named it (no index, no transcript).
    known_from: str | None = None
    index_tokens: tuple[int, int, int] | None = None
    #: A transcript event of this session was folded (not only its index entry).
    from_transcript: bool = False
    #: Which tool wrote it: "openclaw", "claude-code" or "codex" (``SessionInfo.source``).
    source: str = "openclaw"

    @property
    def tokens_from(self) -> str:
        """"index" when the tokens shown are the session index's (no transcript usage was
        read), else "transcript"."""
        return "index" if self.index_tokens is not None and not self.assistant_messages \
            else "transcript"

    def token_counts(self) -> tuple[int, int, int]:
        """``(input, output, total)`` as shown: the transcript's sums, or the index's."""
        if self.tokens_from == "index":
            return self.index_tokens
        return self.tokens_input, self.tokens_output, self.tokens_total

    def add_finding(self, finding: Finding) -> None:
        self.findings.append(finding)
        self.findings_total += 1
        if len(self.findings) > FINDINGS_KEPT:
            del self.findings[:-FINDINGS_KEPT]

    def current_findings(self) -> list[Finding]:
        """The findings that still describe the session (a loop it is still in, a budget
        it crossed): within ``CURRENT_CALLS`` calls or ``CURRENT_SECONDS`` of its newest."""
        out = []
        for finding in self.findings:
            recent_call = finding.at_call > 0 and self.tool_calls - finding.at_call \
                < CURRENT_CALLS
            recent_time = finding.ts is not None and self.last_ts is not None \
                and self.last_ts - finding.ts <= CURRENT_SECONDS
            if recent_call or recent_time or finding.detector == "token_budget":
                out.append(finding)
        return out

    def ended_state(self) -> str | None:
        """The board's state of a session the index says ended or was stopped (its last
        run aborted and none running since), or None."""
        if self.status in ENDED_STATES:
            return ENDED_STATES[self.status]
        if self.aborted_last_run and self.status != "running":
            return "stopped"
        return None

    def under_way_at(self, now: float) -> bool:
        """Whether the session is still under way at ``now``: it has not ended
        (``ended_state``), and its newest event is within ``CURRENT_SECONDS``."""
        return self.ended_state() is None and self.last_ts is not None \
            and now - self.last_ts <= CURRENT_SECONDS

    def touch(self, ts: float | None) -> None:
        if ts is None:
            return
        if self.first_ts is None or ts < self.first_ts:
            self.first_ts = ts
        if self.last_ts is None or ts > self.last_ts:
            self.last_ts = ts

    def as_json(self) -> dict:
        return {
            "key": self.key or self.session_id,
            "session_id": self.session_id,
            "agent_id": self.agent_id,
            "source": self.source,
            "model": self.model,
            "status": self.status,
            "tool_calls": self.tool_calls,
            "tools": dict(sorted(self.tools.items())),
            "tokens": dict(zip(("input", "output", "total"), self.token_counts(),
                               strict=True)),
            "tokens_from": self.tokens_from,
            "findings": [f.as_json() for f in self.findings],
            "findings_total": self.findings_total,
            **({"known_from": self.known_from} if self.known_from else {}),
        }

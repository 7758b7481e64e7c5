"""The detection engine: transcript events in, findings out.

Events are routed to their session's state (a session id, or a session key, or for a
gateway line a run id); tool calls are judged in ``tool_calls``, assistant messages in
``turns``, and the gateway's own loop lines are reported as OpenClaw logged them.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

from monitor.config import Config
from monitor.detect.beyond import Hit
from monitor.detect.budgets import DailyLedger, day_of, tokens_of
from monitor.detect.findings import Finding
from monitor.detect.frozen import FrozenStates
from monitor.detect.gateway_notice import loop_finding_message, openclaw_loop_line
from monitor.detect.hibernate import SessionSummary, restore
from monitor.detect.jsstable import js_trim
from monitor.detect.outcome_keys import DeferredBodies
from monitor.detect.session_state import SessionState
from monitor.detect.settings import Settings, build_settings
from monitor.detect.status import BurnStatus, PingPongPair, StreakStatus
from monitor.detect.streaks import burn_status, ping_pong_pairs, streak_statuses
from monitor.detect.tool_calls import ToolCallJudge, gated
from monitor.detect.turns import assistant_hits
from monitor.events import (
    TRANSCRIPT_EVENT_TYPES,
    AssistantMessage,
    Compaction,
    GatewayNotice,
    LoopVeto,
    ToolCall,
    ToolResult,
    UserMessage,
)
from monitor.run_index import RunIndex

# Runs whose session is remembered, for gateway lines that name only a run.
MAX_RUN_INDEX = 4096
# Gateway loop lines of sessions not (yet) in the transcripts: the highest bucket
# reported per session and pattern, oldest forgotten first.
MAX_ORPHAN_NOTICES = 1024


def run_scope(run_id: str | None) -> str | None:
    """``normalizeOptionalString(runId)``."""
    if type(run_id) is not str:
        return None
    return js_trim(run_id) or None


class DetectionEngine:
    """Per-session detector state; ``observe`` returns findings when a level is first reached."""

    def __init__(self, config: Config | None = None) -> None:
        self.config = config or Config()
        self._settings: dict[str, Settings] = {}
        self._sessions: dict[str, SessionState] = {}
        #: Idle sessions reduced to their summary (``hibernate_idle``); woken by an event.
        self._hibernated: dict[str, SessionSummary] = {}
        #: Sessions set aside whole (``freeze_idle``); thawed by their next event.
        self._frozen = FrozenStates()
        #: Sessions whose state ``freeze_idle`` let go, their transcripts read to the end.
        self._dropped: set[str] = set()
        #: An event came for a dropped session: the state it went to was not the session's.
        self.dropped_woke = False
        self._last_session: str | None = None
        self._key_to_session: dict[str, str] = {}
        self._run_to_session = RunIndex(MAX_RUN_INDEX)
        self._ledger = DailyLedger()
        self._orphan_notices: OrderedDict[str, int] = OrderedDict()
        self._calls = ToolCallJudge()

    # ------------------------------------------------------------------ public

    def observe(self, session_key: str, agent_id: str, event) -> list[Finding]:
        kind = type(event)
        if kind is GatewayNotice:
            return self._on_notice(session_key, agent_id, event)
        if kind not in TRANSCRIPT_EVENT_TYPES or not event.session_id:
            return []
        settings = self._settings.get(agent_id or "") or self.settings_for(agent_id)
        if not settings.detection.enabled:
            return []
        state = self._state(event.session_id, session_key, agent_id, settings)
        self._last_session = event.session_id
        state.seen = True
        if event.ts is not None:
            state.last_ts = event.ts
        run_id = run_scope(getattr(event, "run_id", None))
        if run_id:
            self._run_to_session.note(run_id, event.session_id)
        if kind is ToolCall:
            return self._calls.call(state, settings, event, run_id)
        if kind is ToolResult:
            return self._calls.result(state, settings, event)
        if kind is LoopVeto:
            return self._calls.veto(state, settings, event)
        self._calls.commit(state, None)
        if kind is AssistantMessage:
            return self._on_assistant(state, settings, event)
        if kind is UserMessage:
            state.diminishing.user_message(
                event.text_chars,
                settings.detection.diminishing_returns.continuation_prompt_max_chars)
        elif kind is Compaction:
            state.compaction.compaction(list(state.recent_call_keys),
                                        settings.detection.post_compaction_repeat.window_calls)
            state.bloat.reset()
        return []

    def freeze_idle(self, unfinished_of: Callable[[list[str]], set[str] | None] | None = None
                    ) -> None:
        """Set aside the state of every live session but the one the last event went to.

        ``unfinished_of(session_ids)`` tells which of them have transcripts the sources may
        still read more of (None: it cannot tell); every other one is dropped: nothing will
        read its state again, unless a transcript grows while the replay runs, and then
        ``dropped_woke`` tells the caller to read again without dropping. The rest is
        frozen (``FrozenStates``): a frozen session that gets another event thaws to
        exactly the state it had (unlike hibernation, which keeps only totals). A state
        pickle cannot take stays alive."""
        idle = [s for s in self._sessions if s != self._last_session]
        unfinished = unfinished_of(idle) if unfinished_of is not None and idle else None
        for session_id in idle:
            if unfinished is not None and session_id not in unfinished:
                del self._sessions[session_id]
                self._dropped.add(session_id)
            elif self._frozen.put(session_id, self._sessions[session_id]):
                del self._sessions[session_id]

    def hold_outcome_bodies(self, budget_bytes: int) -> None:
        """Let outcome keys and OpenClaw's outcome hashes wait for a comparison before they
        are made, holding the results up to ``budget_bytes`` (``outcome_keys``): in a replay
        most are never compared."""
        self._calls.outcome_keys = DeferredBodies(budget_bytes)

    @property
    def outcome_listener(self) -> Callable[[str, str, str], None] | None:
        """Told ``(session_id, call_id, outcome key)`` of each result keyed (the dashboard's
        timeline marks repeating outcomes with the engine's own key)."""
        return self._calls.outcome_listener

    @outcome_listener.setter
    def outcome_listener(self, listener: Callable[[str, str, str], None] | None) -> None:
        self._calls.outcome_listener = listener

    def _live(self, session_id: str) -> SessionState | None:
        """The live state of a session, thawed when it was frozen."""
        state = self._sessions.get(session_id)
        if state is None:
            if session_id in self._frozen:
                state = self._sessions[session_id] = self._frozen.take(session_id)
            elif session_id in self._dropped:
                self._dropped.discard(session_id)
                self.dropped_woke = True
        return state

    def streaks(self, session_id: str) -> list[StreakStatus]:
        state = self._live(session_id) or self._idle_view(session_id)
        if state is None:
            return []
        return streak_statuses(state, self.settings_for(state.agent_id))

    def pingpong_pairs(self, session_id: str) -> list[PingPongPair]:
        state = self._live(session_id)
        return ping_pong_pairs(state) if state is not None else []

    def burn(self, session_id: str) -> BurnStatus:
        state = self._live(session_id) or self._idle_view(session_id)
        settings = self.settings_for(state.agent_id if state else "")
        return burn_status(state, settings)

    def forget(self, session_id: str) -> None:
        self._dropped.discard(session_id)
        self._live(session_id)
        state = self._sessions.pop(session_id, None) or self._hibernated.pop(session_id, None)
        if state is not None and self._key_to_session.get(state.key) == session_id:
            del self._key_to_session[state.key]

    def is_hibernated(self, session_id: str) -> bool:
        return session_id in self._hibernated

    def hibernate_idle(self, now: float | None = None,
                       keep: Callable[[str], bool] | None = None) -> int:
        """Reduce every idle session to its summary; the number hibernated.

        A session is idle when it had no event for ``history.hibernate_after`` seconds
        (null: never), by its newest event's time and by the wall time of the sweeps that
        saw it get one: an event since the last sweep keeps it awake.
        ``keep(session_id)`` true keeps a session awake whatever its age (the monitor keeps
        the sessions its index says are running). Meant to be called now and then (the
        monitor sweeps at most once a minute); a sweep is one pass over the live sessions.
        """
        after = self.config.history.hibernate_after
        now = time.time() if now is None else now
        asleep = 0
        for session_id, state in list(self._sessions.items()):
            if state.seen:
                state.seen = False
                state.seen_at = now
                continue
            if after is None or now - max(state.last_ts or 0.0, state.seen_at) < after:
                continue
            if keep is not None and keep(session_id):
                continue
            self._hibernated[session_id] = SessionSummary(state)
            del self._sessions[session_id]
            asleep += 1
        return asleep

    def external_finding(self, session_key: str, session_id: str, detector: str, level: str,
                         count: int, message: str, *, tool: str | None = None,
                         pattern: str = "", at_call: int = 0,
                         ts: float | None = None) -> Finding | None:
        """A finding from outside the transcript (e.g. ``hung_process`` from the process
        watcher), reported once per level per pattern like every other detector."""
        state = self._awake(session_id)
        agent_id = state.agent_id if state else ""
        settings = self.settings_for(agent_id)
        if not settings.detection.enabled or not getattr(settings.detection.detectors,
                                                         detector, True):
            return None
        if state is None:
            state = self._state(session_id, session_key, agent_id, settings)
        hit = Hit(detector, level, count, message, f"{detector}:{pattern}", tool)
        return gated(state, hit, at_call, ts)

    def settings_for(self, agent_id: str | None) -> Settings:
        key = agent_id or ""
        settings = self._settings.get(key)
        if settings is None:
            config = self.config.for_agent(key)
            # An agent the config does not name shares the default's settings (and its
            # normaliser's memory): agent ids are data, any number of them.
            settings = self.settings_for(None) if key and config is self.config \
                else build_settings(config)
            self._settings[key] = settings
        return settings

    # ---------------------------------------------------------------- sessions

    def _state(self, session_id: str, session_key: str, agent_id: str,
               settings: Settings) -> SessionState:
        state = self._sessions.get(session_id) or self._live(session_id)
        if state is None:
            det = settings.detection
            summary = self._hibernated.pop(session_id, None)
            if summary is not None:         # it wakes, with its totals, numbering, gates
                state = restore(summary, det.history_size, det.session_no_progress.window)
            else:
                state = SessionState(session_id, session_key or "", agent_id or "",
                                     det.history_size, det.session_no_progress.window)
            self._sessions[session_id] = state
        if session_key and session_key != state.key and session_key != session_id:
            state.key = session_key
        if not state.key and session_key:
            state.key = session_key
        if agent_id:
            state.agent_id = agent_id
        if state.key:
            self._key_to_session[state.key] = session_id
        return state

    def _awake(self, session_id: str | None) -> SessionState | None:
        """The live state of a session, woken from its summary when it hibernates."""
        if not session_id:
            return None
        state = self._live(session_id)
        summary = None if state is not None else self._hibernated.get(session_id)
        if summary is not None:
            state = self._state(session_id, summary.key, summary.agent_id,
                                self.settings_for(summary.agent_id))
        return state

    def _idle_view(self, session_id: str) -> SessionState | None:
        """What the dashboard views show of a hibernated session: a fresh state with its
        totals (no streaks), built on demand and not kept."""
        summary = self._hibernated.get(session_id)
        if summary is None:
            return None
        det = self.settings_for(summary.agent_id).detection
        return restore(summary, det.history_size, det.session_no_progress.window)

    # ------------------------------------------------------------- messages

    def _on_assistant(self, state: SessionState, settings: Settings,
                      event: AssistantMessage) -> list[Finding]:
        ts = event.ts if event.ts is not None else state.last_ts
        tokens = tokens_of(event.usage)
        state.session_tokens += tokens
        agent_tokens = total_tokens = 0
        budgets = settings.config.budgets
        day = ""
        if ts is not None and tokens:
            state.burn.add(ts, tokens, settings.detection.burn_rate.window_seconds)
            day = day_of(ts, budgets.reset_time)
            agent_tokens, total_tokens = self._ledger.add(day, state.agent_id, tokens)
        hits = assistant_hits(state, settings, event, tokens, agent_tokens, total_tokens, day)
        return [f for hit in hits if (f := gated(state, hit, 0, event.ts))]

    # ---------------------------------------------------------- gateway log

    def _on_notice(self, session_key: str, agent_id: str, notice: GatewayNotice
                   ) -> list[Finding]:
        line = openclaw_loop_line(notice.subsystem, notice.message)
        if line is None:
            return []
        session_id = line.session_id or notice.session_id
        run_id = run_scope(notice.run_id)
        if not session_id and run_id:
            session_id = self._run_to_session.get(run_id)
        key = session_key or line.session_key or notice.session_key or ""
        if not session_id and key:
            session_id = self._key_to_session.get(key) or (
                key if key in self._sessions or key in self._frozen or key in self._dropped
                or key in self._hibernated
                else None)
        state = self._awake(session_id)
        settings = self.settings_for(agent_id or (state.agent_id if state else ""))
        det = settings.detection
        if not det.enabled or not det.detectors.gateway_loop_notice:
            return []
        per_tool = line.detector not in ("ping_pong", "argument_churn")
        pattern = (f"gateway:{run_id or ''}:{line.detector}:"
                   f"{line.tool if per_tool else ''}:{line.level}")
        # Each critical line is a call OpenClaw blocked: report every one (the several lines
        # logged for one block share its count). Warnings follow OpenClaw's buckets of ten.
        bucket = line.count if line.level == "critical" else max(1, line.count // 10)
        tool = line.tool
        message = loop_finding_message(line, key or session_id or "")
        if state is None:
            if not key and not session_id:
                return []
            orphan = f"{session_id or key}|{pattern}"
            if self._orphan_notices.get(orphan, 0) >= bucket:
                return []
            self._orphan_notices[orphan] = bucket
            while len(self._orphan_notices) > MAX_ORPHAN_NOTICES:
                self._orphan_notices.popitem(last=False)
            return [Finding(key or session_id or "", session_id or "", "gateway_loop_notice",
                            line.level, line.count, tool, 0, message, pattern, notice.ts)]
        if not state.warning_buckets.passes(pattern, bucket):
            return []
        return [Finding(key or state.key, state.session_id, "gateway_loop_notice", line.level,
                        line.count, tool, 0, message, pattern, notice.ts)]



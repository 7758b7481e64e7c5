"""The detection engine: transcript events in, findings out.

Tool calls are replayed the way OpenClaw 2026.9.6's embedded runner admits
them. The calls of one assistant message form a batch; each call is judged
(``loopcore.evaluate``) against the run's history plus the earlier calls of
its batch projected as vetoes, when it is seen. The batch enters the history
when its first result arrives: as ordinary records, or, when that result is
OpenClaw's ``tool-loop`` veto, as veto records for the calls that repeated the
blocked action (OpenClaw's ``recordLoopVeto``). Each result then fills its
record's outcome. ``at_call`` is the call's 1-based index in the session.

Reporting follows OpenClaw's log: a warning is reported when
``floor(count / warning_bucket_size)`` rises for its key (``runId:warningKey``),
which is exactly when OpenClaw logs ``tool loop: … level=warning`` and appends
its system note; a critical is reported the first time for its key, when its
bucket rises, and again after OpenClaw really vetoed a call (a new block).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

from monitor.config import Config
from monitor.detect.beyond import Hit, level_for
from monitor.detect.budgets import DailyLedger, day_of, tokens_of
from monitor.detect.findings import LEVEL_RANK, Finding
from monitor.detect.frozen import FrozenStates
from monitor.detect.gateway_notice import loop_finding_message, openclaw_loop_line
from monitor.detect.hibernate import SessionSummary, restore
from monitor.detect.jsstable import js_trim
from monitor.detect.loopcore import Record, Verdict, evaluate
from monitor.detect.outcome_keys import DeferredBodies, LazyDigest
from monitor.detect.outcomes import (
    VETO_KIND,
    hash_tool_call,
    is_known_poll,
    is_not_admitted,
    normalize_tool_name,
    outcome_of,
    outcome_params,
    tool_params,
)
from monitor.detect.session_state import LastCall, PendingCall, SessionState
from monitor.detect.settings import Settings, build_settings
from monitor.detect.status import BurnStatus, PingPongPair, StreakStatus
from monitor.detect.streaks import burn_status, ping_pong_pairs, streak_statuses
from monitor.detect.turns import assistant_hits
from monitor.events import (
    AssistantMessage,
    Compaction,
    GatewayNotice,
    LoopVeto,
    ModelChange,
    SessionStart,
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
TRANSCRIPT_EVENTS = (ToolCall, ToolResult, LoopVeto, AssistantMessage, UserMessage, Compaction,
                     SessionStart, ModelChange)


def run_scope(run_id: str | None) -> str | None:
    """``normalizeOptionalString(runId)``."""
    if not isinstance(run_id, str):
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
        self._last_session: str | None = None
        self._key_to_session: dict[str, str] = {}
        self._run_to_session = RunIndex(MAX_RUN_INDEX)
        self._ledger = DailyLedger()
        self._orphan_notices: OrderedDict[str, int] = OrderedDict()
        self._outcome_keys = DeferredBodies()
        #: Told ``(session_id, call_id, outcome key)`` of each result keyed (the dashboard's
        #: timeline marks repeating outcomes with the engine's own key).
        self.outcome_listener: Callable[[str, str, str], None] | None = None

    # ------------------------------------------------------------------ public

    def observe(self, session_key: str, agent_id: str, event) -> list[Finding]:
        if isinstance(event, GatewayNotice):
            return self._on_notice(session_key, agent_id, event)
        if not isinstance(event, TRANSCRIPT_EVENTS) or not event.session_id:
            return []
        settings = self.settings_for(agent_id)
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
        if isinstance(event, ToolCall):
            return self._on_call(state, settings, event, run_id)
        if isinstance(event, ToolResult):
            return self._on_result(state, settings, event)
        if isinstance(event, LoopVeto):
            return self._on_veto(state, settings, event)
        self._commit(state, None)
        if isinstance(event, AssistantMessage):
            return self._on_assistant(state, settings, event)
        if isinstance(event, UserMessage):
            state.diminishing.user_message(
                event.text_chars,
                settings.detection.diminishing_returns.continuation_prompt_max_chars)
        elif isinstance(event, Compaction):
            state.compaction.compaction(list(state.recent_call_keys),
                                        settings.detection.post_compaction_repeat.window_calls)
            state.bloat.reset()
        return []

    def freeze_idle(self) -> None:
        """Set aside the state of every live session but the one the last event went to
        (``FrozenStates``); a frozen session that gets another event thaws to exactly the
        state it had (unlike hibernation, which keeps only totals). A state pickle cannot
        take stays alive."""
        for session_id in [s for s in self._sessions if s != self._last_session]:
            if self._frozen.put(session_id, self._sessions[session_id]):
                del self._sessions[session_id]

    def hold_outcome_bodies(self, budget_bytes: int) -> None:
        """Let outcome keys and OpenClaw's outcome hashes wait for a comparison before they
        are made, holding the results up to ``budget_bytes`` (``outcome_keys``): in a replay
        most are never compared."""
        self._outcome_keys = DeferredBodies(budget_bytes)

    def _live(self, session_id: str) -> SessionState | None:
        """The live state of a session, thawed when it was frozen."""
        state = self._sessions.get(session_id)
        if state is None and session_id in self._frozen:
            state = self._sessions[session_id] = self._frozen.take(session_id)
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
        return self._gate(state, hit, at_call, ts)

    def settings_for(self, agent_id: str | None) -> Settings:
        key = agent_id or ""
        settings = self._settings.get(key)
        if settings is None:
            settings = build_settings(self.config.for_agent(key))
            self._settings[key] = settings
        return settings

    # ---------------------------------------------------------------- sessions

    def _state(self, session_id: str, session_key: str, agent_id: str,
               settings: Settings) -> SessionState:
        state = self._live(session_id)
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

    # ------------------------------------------------------------ tool calls

    def _on_call(self, state: SessionState, settings: Settings, event: ToolCall,
                 run_id: str | None) -> list[Finding]:
        state.call_index += 1
        # A Claude Code / Codex call is judged by the OpenClaw tool of its shape (``shape``);
        # findings show the CLI's own tool name.
        tool = normalize_tool_name(event.shape or event.name)
        shown = event.name if event.shape else None
        params = tool_params(event.arguments, event.has_arguments)
        args_hash = hash_tool_call(tool, params)
        known_poll = is_known_poll(tool, params)
        if state.batch and state.batch_run != run_id:
            self._commit(state, None)
        call = PendingCall(tool, outcome_params(params), args_hash, event.call_id, run_id,
                           state.call_index, known_poll, shown)
        findings: list[Finding] = []
        if state.batch_blocked is None:
            history = state.scoped_history(run_id)
            for earlier in state.batch:
                projected = Record(earlier.tool, earlier.args_hash, earlier.call_id, run_id)
                projected.kind = VETO_KIND
                history.append(projected)
            verdict = evaluate(history, tool, args_hash, known_poll, settings.thresholds)
            if verdict is not None:
                finding = self._loop_finding(state, settings, verdict, call, run_id, event.ts)
                if finding is not None:
                    findings.append(finding)
                if verdict.level == "critical":
                    state.batch_blocked = args_hash
        state.last_call = LastCall(tool, args_hash, known_poll, run_id)
        state.batch.append(call)
        state.batch_run = run_id
        if settings.detection.detectors.iteration_budget:
            findings.extend(self._iteration(state, settings, call, event.ts))
        return findings

    def _loop_finding(self, state: SessionState, settings: Settings, verdict: Verdict,
                      call: PendingCall, run_id: str | None, ts: float | None
                      ) -> Finding | None:
        key = f"{run_id}:{verdict.warning_key}" if run_id else verdict.warning_key
        size = settings.detection.warning_bucket_size
        bucket = max(1, verdict.count // size) if size > 0 else 1
        gate = state.warning_buckets if verdict.level == "warning" else state.critical_buckets
        if not gate.passes(key, bucket):
            return None
        message = verdict.message
        if call.shown != call.tool:              # "Called exec ..." -> "Called Bash ..."
            message = message.replace(f" {call.tool} ", f" {call.shown} ", 1)
        return Finding(state.key, state.session_id, verdict.detector, verdict.level,
                       verdict.count, call.shown, call.index, message, key, ts)

    def _commit(self, state: SessionState, veto: ToolResult | LoopVeto | None) -> None:
        """Enter the pending batch into the history (see the module docstring)."""
        if not state.batch:
            return
        if veto is not None:
            action_key = _action_key(veto) or state.batch_blocked
            if action_key is None:
                blocked = state.find_batch_call(veto.call_id)
                action_key = blocked.args_hash if blocked else None
            for call in state.batch:
                call.vetoed = True
                if call.args_hash == action_key:
                    record = Record(call.tool, call.args_hash, call.call_id, call.run_id,
                                    call.index)
                    record.kind = VETO_KIND
                    state.add_record(record)
            state.critical_buckets.clear()
        else:
            for call in state.batch:
                call.record = Record(call.tool, call.args_hash, call.call_id, call.run_id,
                                     call.index)
                state.add_record(call.record)
        for call in state.batch:
            state.remember_pending(call)
        state.batch = []
        state.batch_run = None
        state.batch_blocked = None

    # --------------------------------------------------------------- results

    def _on_result(self, state: SessionState, settings: Settings, event: ToolResult
                   ) -> list[Finding]:
        if event.is_loop_veto:
            return self._on_veto(state, settings, event)
        self._commit(state, None)
        call = state.take_pending(event.call_id)
        if call is None:
            return []
        if call.vetoed:
            return self._progress(state, settings, call, None, event.ts)
        held = self._outcome_keys.held(event.details, event.text)
        if is_not_admitted(event.name, event.text):
            if call.record is not None:
                state.remove_record(call.record)
        else:
            outcome = outcome_of(call.tool, call.params, is_error=event.is_error,
                                 details=event.details, text=event.text, is_veto=False,
                                 defer=self._outcome_keys.deferring(call.tool, held))
            record = call.record
            if record is None or record.has_outcome or record not in state.records:
                record = Record(call.tool, call.args_hash, call.call_id, call.run_id,
                                call.index)
                state.add_record(record)
            record.result_hash = outcome.result_hash
            record.kind = outcome.kind
            record.failure_identity = outcome.failure_identity
            record.no_progress = outcome.no_progress
            record.unknown_tool_name = outcome.unknown_tool_name
        key = self._outcome_keys.key(settings.normaliser, call.tool, call.args_hash,
                                     is_error=event.is_error, details=event.details,
                                     text=event.text, held=held)
        if self.outcome_listener is not None:
            self.outcome_listener(event.session_id, event.call_id, key.make())
        return self._progress(state, settings, call, key, event.ts)

    def _on_veto(self, state: SessionState, settings: Settings,
                 event: ToolResult | LoopVeto) -> list[Finding]:
        if event.call_id in state.handled_vetoes:
            return []
        state.handled_vetoes.append(event.call_id)
        if state.batch and state.find_batch_call(event.call_id) is not None:
            self._commit(state, event)
        elif state.batch:
            self._commit(state, None)
        call = state.take_pending(event.call_id)
        if call is None:
            return []
        return self._progress(state, settings, call, None, event.ts)

    def _progress(self, state: SessionState, settings: Settings, call: PendingCall,
                  key: LazyDigest | None, ts: float | None) -> list[Finding]:
        """The beyond-OpenClaw detectors that judge a call by its outcome."""
        det = settings.detection
        findings: list[Finding] = []
        combined = (call.args_hash, key)
        if det.detectors.session_no_progress:
            streak = state.progress.observe(key)
            cfg = det.session_no_progress
            level = level_for(streak, cfg.warning_threshold, cfg.critical_threshold)
            if level and (found := self._call_finding(
                    state, "session_no_progress", level, streak, call, state.progress.episode,
                    ts, lambda: f"{streak} consecutive tool calls added nothing new to the "
                                f"session (any tool; last: {call.shown})")):
                findings.append(found)
        if det.detectors.post_compaction_repeat:
            repeats = state.compaction.observe(combined)
            cfg = det.post_compaction_repeat
            level = level_for(repeats, cfg.warning_threshold, cfg.critical_threshold) \
                if repeats else None
            if level and (found := self._call_finding(
                    state, "post_compaction_repeat", level, repeats, call,
                    state.compaction.episode, ts,
                    lambda: f"{repeats} calls right after a compaction repeated earlier calls "
                            f"with the same outcome (last: {call.shown})")):
                findings.append(found)
        state.recent_call_keys.append(combined)
        return findings

    @staticmethod
    def _call_finding(state: SessionState, detector: str, level: str, count: int,
                      call: PendingCall, episode: int, ts: float | None,
                      message: Callable[[], str]) -> Finding | None:
        """``detector``'s finding at ``call`` when its level passes the gate (``_gate``),
        its message made only then: a stuck session meets these detectors on every call."""
        pattern = f"{detector}:{episode}"
        if not state.levels.passes(pattern, LEVEL_RANK[level]):
            return None
        return Finding(state.key, state.session_id, detector, level, count, call.shown,
                       call.index, message(), pattern, ts)

    def _iteration(self, state: SessionState, settings: Settings, call: PendingCall,
                   ts: float | None) -> list[Finding]:
        count = state.iterations.observe(call.run_id)
        cfg = settings.detection.iteration_budget
        level = level_for(count, cfg.warning_tool_calls, cfg.critical_tool_calls)
        if not level:
            return []
        critical = "no critical" if cfg.critical_tool_calls is None \
            else f"critical {cfg.critical_tool_calls}"
        hit = Hit("iteration_budget", level, count, f"run made {count} tool calls "
                  f"(warning {cfg.warning_tool_calls}, {critical})",
                  f"iteration_budget:{call.run_id or ''}", call.shown)
        finding = self._gate(state, hit, call.index, ts)
        return [finding] if finding else []

    # ------------------------------------------------------------- messages

    def _on_assistant(self, state: SessionState, settings: Settings,
                      event: AssistantMessage) -> list[Finding]:
        ts = event.ts if event.ts is not None else state.last_ts
        tokens = tokens_of(event.usage)
        state.session_tokens += tokens
        agent_tokens = total_tokens = 0
        budgets = settings.config.budgets
        if ts is not None and tokens:
            state.burn.add(ts, tokens, settings.detection.burn_rate.window_seconds)
            agent_tokens, total_tokens = self._ledger.add(
                day_of(ts, budgets.reset_time), state.agent_id, tokens)
        hits = assistant_hits(state, settings, event, tokens, agent_tokens, total_tokens,
                              self._ledger.day)
        return [f for hit in hits if (f := self._gate(state, hit, 0, event.ts))]

    def _gate(self, state: SessionState, hit: Hit, at_call: int, ts: float | None
              ) -> Finding | None:
        if not state.levels.passes(hit.pattern, LEVEL_RANK[hit.level]):
            return None
        return Finding(state.key, state.session_id, hit.detector, hit.level, hit.count,
                       hit.tool, at_call, hit.message, hit.pattern, ts)

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
                key if key in self._sessions or key in self._frozen or key in self._hibernated
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


def _action_key(veto: ToolResult | LoopVeto) -> str | None:
    details = getattr(veto, "details", None)
    if isinstance(details, dict):
        intervention = details.get("intervention")
        if isinstance(intervention, dict) and isinstance(intervention.get("actionKey"), str):
            return intervention["actionKey"]
    return None

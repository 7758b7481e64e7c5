"""The tool calls of a session, judged the way OpenClaw 2026.9.6's embedded runner admits them.

The calls of one assistant message form a batch; each call is judged
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

from collections.abc import Callable

from monitor.detect.beyond import Hit, level_for
from monitor.detect.findings import LEVEL_RANK, Finding
from monitor.detect.loopcore import Record, Verdict, evaluate
from monitor.detect.outcome_keys import DeferredBodies, LazyDigest
from monitor.detect.outcome_record import VETO_KIND
from monitor.detect.outcomes import outcome_of, outcome_params
from monitor.detect.session_state import LastCall, PendingCall, SessionState
from monitor.detect.settings import Settings
from monitor.detect.tool_call_hashing import (
    hash_tool_call,
    is_known_poll,
    is_not_admitted,
    normalize_tool_name,
    tool_params,
)
from monitor.events import LoopVeto, ToolCall, ToolResult


class ToolCallJudge:
    """The engine's tool-call detectors: OpenClaw's loop verdicts, the outcome keys of
    results, and the beyond-OpenClaw detectors that judge a call by its outcome."""

    __slots__ = ("outcome_keys", "outcome_listener")

    def __init__(self) -> None:
        self.outcome_keys = DeferredBodies()
        #: Told ``(session_id, call_id, outcome key)`` of each result keyed (the dashboard's
        #: timeline marks repeating outcomes with the engine's own key).
        self.outcome_listener: Callable[[str, str, str], None] | None = None

    def call(self, state: SessionState, settings: Settings, event: ToolCall,
             run_id: str | None) -> list[Finding]:
        """Judge a call as it is seen, against the run's history and its batch so far."""
        state.call_index += 1
        # A Claude Code / Codex call is judged by the OpenClaw tool of its shape (``shape``).
        # Findings show the name as called: the CLI's own, or ``Bash`` where OpenClaw says exec.
        tool = normalize_tool_name(event.shape or event.name)
        shown = event.name
        params = tool_params(event.arguments, event.has_arguments)
        args_hash = hash_tool_call(tool, params)
        known_poll = is_known_poll(tool, params)
        if state.batch and state.batch_run != run_id:
            self.commit(state, None)
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
        state.last_call = LastCall(tool, args_hash, known_poll, run_id, call.shown)
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
        return Finding(state.key, state.session_id, verdict.detector, verdict.level,
                       verdict.count, call.shown, call.index,
                       verdict.message_naming(call.shown), key, ts)

    def commit(self, state: SessionState, veto: ToolResult | LoopVeto | None) -> None:
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
                                    call.index, call.shown)
                    record.kind = VETO_KIND
                    state.add_record(record)
            state.critical_buckets.clear()
        else:
            for call in state.batch:
                call.record = Record(call.tool, call.args_hash, call.call_id, call.run_id,
                                     call.index, call.shown)
                state.add_record(call.record)
        for call in state.batch:
            state.remember_pending(call)
        state.batch = []
        state.batch_run = None
        state.batch_blocked = None

    def result(self, state: SessionState, settings: Settings, event: ToolResult
               ) -> list[Finding]:
        """Fill the outcome of the call a result answers, and judge the call by it."""
        if event.is_loop_veto:
            return self.veto(state, settings, event)
        self.commit(state, None)
        call = state.take_pending(event.call_id)
        if call is None:
            return []
        if call.vetoed:
            return self._progress(state, settings, call, None, event.ts)
        held = self.outcome_keys.held(event.details, event.text)
        if is_not_admitted(event.name, event.text):
            if call.record is not None:
                state.remove_record(call.record)
        else:
            outcome = outcome_of(call.tool, call.params, is_error=event.is_error,
                                 details=event.details, text=event.text, is_veto=False,
                                 defer=self.outcome_keys.deferring(call.tool, held))
            record = call.record
            if record is None or record.has_outcome or record not in state.records:
                record = Record(call.tool, call.args_hash, call.call_id, call.run_id,
                                call.index, call.shown)
                state.add_record(record)
            record.result_hash = outcome.result_hash
            record.kind = outcome.kind
            record.failure_identity = outcome.failure_identity
            record.no_progress = outcome.no_progress
            record.unknown_tool_name = outcome.unknown_tool_name
        key = self.outcome_keys.key(settings.normaliser, call.tool, call.args_hash,
                                     is_error=event.is_error, details=event.details,
                                     text=event.text, held=held)
        if self.outcome_listener is not None:
            self.outcome_listener(event.session_id, event.call_id, key.make())
        return self._progress(state, settings, call, key, event.ts)

    def veto(self, state: SessionState, settings: Settings,
             event: ToolResult | LoopVeto) -> list[Finding]:
        """OpenClaw's ``tool-loop`` veto of a call: its batch enters the history as vetoes."""
        if event.call_id in state.handled_vetoes:
            return []
        state.handled_vetoes.append(event.call_id)
        if state.batch and state.find_batch_call(event.call_id) is not None:
            self.commit(state, event)
        elif state.batch:
            self.commit(state, None)
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
        finding = gated(state, hit, call.index, ts)
        return [finding] if finding else []


def gated(state: SessionState, hit: Hit, at_call: int, ts: float | None) -> Finding | None:
    """``hit`` as a finding when its level is new for its pattern in this session."""
    if not state.levels.passes(hit.pattern, LEVEL_RANK[hit.level]):
        return None
    return Finding(state.key, state.session_id, hit.detector, hit.level, hit.count,
                   hit.tool, at_call, hit.message, hit.pattern, ts)


def _action_key(veto: ToolResult | LoopVeto) -> str | None:
    details = getattr(veto, "details", None)
    if isinstance(details, dict):
        intervention = details.get("intervention")
        if isinstance(intervention, dict) and isinstance(intervention.get("actionKey"), str):
            return intervention["actionKey"]
    return None

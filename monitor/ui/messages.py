"""Messages to the app's handlers: from worker threads, and from its screens."""

from __future__ import annotations

from textual.message import Message

from monitor.act.api import ActionResult, ProcessInfo
from monitor.snapshot import Snapshot


class SnapshotReady(Message, bubble=False):
    """A new picture from the ingest thread; a newer one replaces it in the queue."""

    def __init__(self, snapshot: Snapshot) -> None:
        super().__init__()
        self.snapshot = snapshot

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, SnapshotReady)


class ActionFinished(Message, bubble=False):
    """The controller answered a stop or kill."""

    def __init__(self, result: ActionResult) -> None:
        super().__init__()
        self.result = result


class KillCandidatesFound(Message, bubble=False):
    """The processes a kill of ``session_key`` would end, to confirm; ``identity`` names the
    session beside its key (id and agent), shown in the dialog."""

    def __init__(self, session_key: str, candidates: list[ProcessInfo],
                 identity: str = "") -> None:
        super().__init__()
        self.session_key = session_key
        self.candidates = candidates
        self.identity = identity


class Rang(Message, bubble=False):
    """The bell rang (observable in tests through ``message_hook``)."""

    def __init__(self, reason: str) -> None:
        super().__init__()
        self.reason = reason


class PanesOnView(Message):
    """A screen of panes came into view (pushed, or uncovered): render its panes.

    Posted by the screen itself (``PanesScreen``); it bubbles to the app, which renders
    only the screen in view, so a screen that was covered or not yet composed missed the
    renders in between."""

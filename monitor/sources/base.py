"""What every source shares: identity, counts of events and errors, error samples."""

from __future__ import annotations

import time

from monitor.events import SourceError, SourceKind

ERROR_SAMPLES_KEPT = 5


class Source:
    """Base for incremental sources.

    ``poll()`` returns the new events (and ``SourceError``/``SourceNotice``
    records) since the previous call. ``events`` and ``errors`` count what the
    source produced; the first few errors are kept in ``error_samples`` so a
    report can show them with their path and offset or row.
    """

    kind: SourceKind
    #: True after a ``poll()`` that stopped at its step budget with more already readable;
    #: readers loop without waiting while any source is behind.
    behind: bool = False
    #: Bytes (or an estimate) known to be readable but not yet read; for progress displays.
    backlog_bytes: int = 0
    #: How much one ``poll()`` may read; sources that read in steps set it.
    poll_budget_bytes: int
    #: ``time.monotonic()`` after which a ``poll()`` stops at its next step boundary (having
    #: done at least one) and sets ``behind``; None: no limit. Set by ``SourceSet.poll`` so
    #: a step (and with it a stop signal or a quit key) never waits long.
    deadline: float | None = None

    def __init__(self, path: str) -> None:
        self.path = path
        self.events = 0
        self.errors = 0
        self.error_samples: list[SourceError] = []

    def poll(self) -> list:
        raise NotImplementedError

    def out_of_time(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline

    def note_changed(self, paths: set[str] | None) -> None:
        """Paths the waker saw change (None: it could not tell which); a source that polls
        idle files only now and then looks at these at once."""

    def checkpoint(self) -> dict:
        return {}

    def close(self) -> None:
        pass

    def error(self, where: str, message: str, *, path: str | None = None) -> SourceError:
        self.errors += 1
        record = SourceError(self.kind, path or self.path, where, message)
        if len(self.error_samples) < ERROR_SAMPLES_KEPT:
            self.error_samples.append(record)
        return record

    def summary(self) -> dict:
        return {
            "kind": self.kind,
            "path": self.path,
            "events": self.events,
            "errors": self.errors,
            "error_samples": [
                {"path": e.path, "where": e.where, "message": e.message}
                for e in self.error_samples
            ],
        }

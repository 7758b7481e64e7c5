"""What every source shares: identity, counts of events and errors, error samples."""

from __future__ import annotations

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

    def __init__(self, path: str) -> None:
        self.path = path
        self.events = 0
        self.errors = 0
        self.error_samples: list[SourceError] = []

    def poll(self) -> list:
        raise NotImplementedError

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

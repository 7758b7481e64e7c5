"""What the person looking at the dashboard chose: selection, filters, sort, search.

Frozen: the app's handlers replace it (``dataclasses.replace``) in the app's
``view`` reactive, whose watcher renders the panes; panes read it together
with the snapshot and never change it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from monitor.snapshot import AlertEntry, BoardRow, LogLine

BOARD_FILTERS = ("all", "active", "problems")
SOURCE_FILTERS = ("all", "openclaw", "claude-code", "codex")
ALERT_FILTERS = ("all", "warning", "critical")
LOG_FILTERS = ("all", "info", "warn", "error")
SORTS = ("severity", "burn", "tokens", "calls", "recent", "session")
LOG_RANK = {"TRACE": 0, "DEBUG": 1, "INFO": 2, "WARN": 3, "WARNING": 3, "ERROR": 4, "FATAL": 5}
LOG_FILTER_RANK = {"all": 0, "info": 2, "warn": 3, "error": 4}
LEVEL_RANK = {None: 0, "warning": 1, "critical": 2}
STATE_RANK = {"looping": 5, "stalled": 4, "running": 3, "idle": 2, "stopped": 1, "done": 0}


def _by_severity(row: BoardRow) -> tuple:
    return (-LEVEL_RANK.get(row.worst_level, 0), -STATE_RANK.get(row.state, 0),
            -row.burn_per_minute, row.key, row.session_id)


#: The board's order per sort (one function each: 10,000 rows are sorted per snapshot).
SORT_KEYS = {
    "burn": lambda row: (-row.burn_per_minute, row.key, row.session_id),
    "tokens": lambda row: (-(row.tokens_in + row.tokens_out), row.key, row.session_id),
    "calls": lambda row: (-row.tool_calls, row.key, row.session_id),
    "recent": lambda row: (-(row.last_ts or 0), row.key, row.session_id),
    "session": lambda row: (row.key, row.session_id),
    "severity": _by_severity,
}


def _source_of_key(key: str) -> str | None:
    prefix = key.partition(":")[0]
    return {"claude-code": "claude-code", "codex": "codex", "agent": "openclaw"}.get(prefix)


def cycle(options: tuple[str, ...], current: str) -> str:
    return options[(options.index(current) + 1) % len(options)]


@dataclass(frozen=True)
class ViewState:
    selected: str | None = None
    board_filter: str = "all"
    source_filter: str = "all"
    sort: str = "severity"
    alert_filter: str = "all"
    log_filter: str = "all"
    search: str = ""
    search_index: int = 0
    paused: bool = False
    detail_call: int | None = None

    # ----------------------------------------------------------- board

    def next_source(self) -> ViewState:
        """The view with the next source filter: all → openclaw → claude-code → codex."""
        return replace(self, source_filter=cycle(SOURCE_FILTERS, self.source_filter))

    def board_rows(self, rows: tuple[BoardRow, ...]) -> list[BoardRow]:
        """The rows to show, in display order."""
        return sorted(self.filtered_rows(rows), key=SORT_KEYS.get(self.sort, _by_severity))

    def filtered_rows(self, rows: tuple[BoardRow, ...]) -> tuple[BoardRow, ...]:
        """The rows the board filters let through, in snapshot order."""
        if self.source_filter != "all":
            rows = tuple(r for r in rows if r.source == self.source_filter)
        if self.board_filter == "active":
            rows = tuple(r for r in rows if r.state not in ("done", "stopped"))
        elif self.board_filter == "problems":
            rows = tuple(r for r in rows if r.worst_level or r.state in ("looping", "stalled"))
        return rows

    def sort_key(self, row: BoardRow) -> tuple:
        return SORT_KEYS.get(self.sort, _by_severity)(row)

    # ----------------------------------------------------------- alerts and log

    def alert_sources(self, rows: tuple[BoardRow, ...]) -> dict[str, str] | None:
        """Session key and id → source, for ``alert_visible``; None without a source filter."""
        if self.source_filter == "all":
            return None
        sources = {row.key: row.source for row in rows}
        sources.update((row.session_id, row.source) for row in rows)
        return sources

    def alert_visible(self, alert: AlertEntry, sources: dict[str, str] | None = None) -> bool:
        """Shown under the level filter and, given ``sources`` (``alert_sources``), the
        source filter: an alert of a session the board does not know, or of no session,
        is judged by its key's prefix (``claude-code:``, ``codex:``, ``agent:``), or kept."""
        if sources is not None:
            source = sources.get(alert.session_id) or sources.get(alert.session_key) \
                or _source_of_key(alert.session_key)
            if source is not None and source != self.source_filter:
                return False
        if alert.kind == "action" or self.alert_filter == "all":
            return True
        if self.alert_filter == "critical":
            return alert.level == "critical"
        return alert.level in ("warning", "critical")

    def log_visible(self, line: LogLine) -> bool:
        return LOG_RANK.get(line.level, 2) >= LOG_FILTER_RANK[self.log_filter]

    def log_lines(self, lines: tuple[LogLine, ...]) -> list[LogLine]:
        return [line for line in lines if self.log_visible(line)]

    def matches(self, lines: list[LogLine]) -> list[int]:
        """Indices (in ``lines``) of the lines the search matches, case-insensitively."""
        if not self.search:
            return []
        needle = self.search.lower()
        return [i for i, line in enumerate(lines)
                if needle in f"{line.subsystem} {line.message}".lower()]


class BoardOrder:
    """``ViewState.board_rows`` of one snapshot after another, sorted from the order shown
    last. A snapshot lists its rows in the order of the one before (new sessions last), and
    most keep their place, so the sort finds them almost in order, and the rows that are
    the same objects as before keep their sort keys: a fraction of a full sort of 10,000
    rows, once a second. Every sort key ends with the session id, so the order is the same
    whatever the sort starts from."""

    def __init__(self) -> None:
        self._rows: tuple[BoardRow, ...] = ()
        self._ids: list[str] = []
        self._keys: list[tuple] = []
        self._order: list[int] = []
        self._sort = ""

    def rows(self, view: ViewState, rows: tuple[BoardRow, ...]) -> list[BoardRow]:
        rows = view.filtered_rows(rows)
        key_of = SORT_KEYS.get(view.sort, _by_severity)
        ids = [row.session_id for row in rows]
        known = len(self._ids)
        if view.sort == self._sort and ids[:known] == self._ids:
            start = [*self._order, *range(known, len(rows))]
            keys = [old_key if row is old else key_of(row) for row, old, old_key
                    in zip(rows, self._rows, self._keys, strict=False)]
            keys += map(key_of, rows[known:])
        else:
            start = list(range(len(rows)))
            keys = list(map(key_of, rows))
        self._order = sorted(start, key=keys.__getitem__)
        self._rows, self._ids, self._keys, self._sort = rows, ids, keys, view.sort
        return [rows[index] for index in self._order]

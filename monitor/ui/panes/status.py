"""The status line: what is being read, what is missing and what to do, first-scan progress.

Besides the snapshot, it shows the app's notes (theme errors, a reader that stopped):
its ``notes`` reactive is bound to the app's ``status_notes`` and shows them when set.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.reactive import var
from textual.widgets import ProgressBar

from monitor.display import printable
from monitor.snapshot import Snapshot
from monitor.ui.panes.base import FollowsOwnState, PaneStatic
from monitor.ui.style import Palette
from monitor.ui.view import ViewState


class StatusLine(FollowsOwnState, Horizontal):
    DEFAULT_CLASSES = "pane"

    notes: var[tuple[str, ...]] = var((), init=False)
    """Problems to keep in view, beside the snapshot's missing sources."""

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.status_text = PaneStatic(id="status-text")
        self.scan_progress = ProgressBar(total=None, show_eta=False, id="scan-progress")

    def compose(self) -> ComposeResult:
        yield self.status_text
        yield self.scan_progress

    def watch_notes(self) -> None:
        self.show_again_soon()

    def show(self, snapshot: Snapshot, view: ViewState, palette: Palette) -> None:
        self.shown_from = (snapshot, view, palette)
        text = Text(no_wrap=True, overflow="ellipsis")
        if view.paused:
            text.append(" PAUSED — p resumes ", style=palette.style("text-warning",
                                                                     reverse=True))
            text.append(" ")
        if snapshot.scanning:
            read = f"{snapshot.scan_done:,} of {snapshot.scan_total:,} events" \
                if snapshot.scan_total else "reading sources…"
            if snapshot.scan_bytes_left >= 1_000_000:
                read += f", {snapshot.scan_bytes_left / 1e6:,.0f} MB to go"
            text.append(f"first scan: {read} · {len(snapshot.rows)} sessions  ",
                        style=palette.style("text-primary"))
        missing = [s for s in snapshot.sources if not s.ok]
        for source in missing:
            text.append(f"✖ {printable(source.text)}  ", style=palette.level("error"))
        for note in self.notes:
            text.append(f"✖ {printable(note)}  ", style=palette.level("error"))
        fine = [s for s in snapshot.sources if s.ok]
        if fine:
            text.append(printable(" · ".join(s.text for s in fine)), style=palette.muted)
        elif not missing and not snapshot.scanning:
            text.append("no sources yet", style=palette.muted)
        self.status_text.put(text, layout=False)
        bar = self.scan_progress
        if bar.display != snapshot.scanning:
            bar.display = snapshot.scanning
        if snapshot.scanning:
            if snapshot.scan_total:
                bar.update(total=snapshot.scan_total, progress=snapshot.scan_done)
            else:
                bar.update(total=None)

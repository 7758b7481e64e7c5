"""The status line: what is being read, what is missing and what to do, first-scan progress."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import ProgressBar

from monitor.display import printable
from monitor.snapshot import Snapshot
from monitor.ui.panes.base import PaneStatic
from monitor.ui.style import Palette
from monitor.ui.view import ViewState


class StatusLine(Horizontal):
    DEFAULT_CLASSES = "pane"

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.notes: list[str] = []

    def compose(self) -> ComposeResult:
        yield PaneStatic(id="status-text")
        yield ProgressBar(total=None, show_eta=False, id="scan-progress")

    def show(self, snapshot: Snapshot, view: ViewState, palette: Palette) -> None:
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
        self.query_one("#status-text", PaneStatic).put(text, layout=False)
        bar = self.query_one(ProgressBar)
        if bar.display != snapshot.scanning:
            bar.display = snapshot.scanning
        if snapshot.scanning:
            if snapshot.scan_total:
                bar.update(total=snapshot.scan_total, progress=snapshot.scan_done)
            else:
                bar.update(total=None)

"""The panes about the selected session: streaks, token burn, ping-pong pairs."""

from __future__ import annotations

from rich.cells import set_cell_size
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Sparkline

from monitor.detect.status import StreakStatus
from monitor.display import printable
from monitor.snapshot import BurnLine, FocusDetail, Snapshot
from monitor.ui.panes.base import PaneStatic, set_title
from monitor.ui.style import Palette, duration, percent, tokens
from monitor.ui.view import ViewState

BAR_WIDTH = 12
BURN_SLOTS = 4


def focus_of(snapshot: Snapshot, view: ViewState) -> FocusDetail | None:
    """The snapshot's detail when it is about the selected session (else it is in flight)."""
    focus = snapshot.focus
    return focus if focus is not None and focus.session_id == view.selected else None


def _waiting(view: ViewState) -> Text:
    return Text("no session selected" if view.selected is None else "loading…")


def streak_target(status: StreakStatus) -> tuple[int | float, int | float | None, str | None]:
    """(value, threshold it is heading for, level reached): "17/20" reads value/threshold."""
    high = status.count if status.critical_count is None else status.critical_count
    if status.warning is not None and status.count < status.warning:
        return status.count, status.warning, status.level
    if status.critical is not None:
        return high, status.critical, status.level
    return status.count, status.warning, status.level


def streak_bar(value: float, target: float | None) -> tuple[str, str]:
    if not target:
        return "", "░" * BAR_WIDTH
    filled = min(BAR_WIDTH, round(BAR_WIDTH * value / target))
    return "█" * filled, "░" * (BAR_WIDTH - filled)


class StreaksPane(PaneStatic):
    DEFAULT_CLASSES = "pane"

    def on_mount(self) -> None:
        self.border_title = "Streaks"

    def show(self, snapshot: Snapshot, view: ViewState, palette: Palette) -> None:
        focus = focus_of(snapshot, view)
        if focus is None:
            self.put(_waiting(view), layout=False)
            return
        set_title(self, f"Streaks · {focus.label}")
        active = [s for s in focus.streaks if (s.count or s.critical_count)
                  and (s.warning is not None or s.critical is not None)]
        if not active:
            self.put(Text("every counter at zero", style=palette.muted), layout=False)
            return
        key = (focus.session_id, tuple(active), id(palette))
        if key == self._shown:
            return
        text = Text(no_wrap=True, overflow="ellipsis")

        def ratio(status: StreakStatus) -> float:
            value, target, _ = streak_target(status)
            return value / target if target else 0.0

        for status in sorted(active, key=lambda s: (-ratio(s), s.detector)):
            value, target, level = streak_target(status)
            near = level or ("warning" if target and value >= 0.8 * target else None)
            filled, empty = streak_bar(value, target)
            bar = Text(filled, style=palette.level(near) if near else palette.style(
                "text-success"))
            bar.append(empty, style=palette.muted)
            label = f"{value:g}/{target:g}" if target else f"{value:g}"
            if status.critical_count is not None and status.critical_count != status.count \
                    and value == status.critical_count:
                label = f"{status.count:g} · {label}"
            if text:
                text.append("\n")
            text.append(set_cell_size(printable(status.detector), 23) + " ",
                        style=palette.level(level))
            text.append(set_cell_size(printable(status.tool or ""), 12) + " ",
                        style=palette.muted)
            text.append_text(bar)
            text.append(" " + label, style=palette.level(level, bold=bool(level)))
        self.put(text, key, layout=False)


def burn_caption(line: BurnLine) -> str:
    parts = [f"{tokens(line.rate)}/min", f"{tokens(line.total)} total"]
    if line.budget:
        parts.append(f"{percent(line.percent)} of {tokens(line.budget)}")
        parts.append("budget spent" if line.eta_seconds == 0 else
                     f"ETA {duration(line.eta_seconds)}" if line.eta_seconds else "ETA -")
    return " · ".join(parts)


class BurnPane(Vertical):
    DEFAULT_CLASSES = "pane"

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.slots = [(PaneStatic(id=f"burn-label-{slot}", classes="burn-label"),
                       Sparkline([0.0], id=f"burn-spark-{slot}", classes="burn-spark"))
                      for slot in range(BURN_SLOTS)]
        """(caption, sparkline) per slot, top to bottom."""

    def compose(self) -> ComposeResult:
        for label, spark in self.slots:
            yield label
            yield spark

    def on_mount(self) -> None:
        self.border_title = "Token burn"

    def show(self, snapshot: Snapshot, view: ViewState, palette: Palette) -> None:
        """Slot 0 is the selected session (a placeholder while its detail is in flight),
        the others the top burners; slots only appear or vanish when that count changes,
        because showing or hiding one costs a layout pass."""
        focus = focus_of(snapshot, view)
        lines: list[BurnLine | None] = [focus.burn if focus is not None else None]
        lines += [b for b in snapshot.top_burners if b.session_id != view.selected]
        for slot, (label, spark) in enumerate(self.slots):
            wanted = slot < len(lines) and (slot > 0 or view.selected is not None)
            if label.display != wanted:
                label.display = spark.display = wanted
            if not wanted:
                continue
            line = lines[slot]
            if line is None:
                label.put(Text("▶ loading…", style=palette.muted), layout=False)
                data = [0.0]
            else:
                head = Text(("▶ " if slot == 0 else "  ") + printable(line.label)[:30],
                            style=palette.style("text-primary", bold=slot == 0))
                head.append("  " + burn_caption(line), style=palette.level(
                    "critical" if (line.percent or 0) >= 100 else
                    "warning" if (line.percent or 0) >= 90 else None))
                label.put(head, layout=False)
                data = list(line.series) or [0.0]
            if list(spark.data or []) != data:
                spark.data = data


def short_hash(args_hash: str) -> str:
    """The argument hash without its ``tool:`` prefix, shortened."""
    return args_hash.rsplit(":", 1)[-1][:7]


class PingPongPane(PaneStatic):
    DEFAULT_CLASSES = "pane"

    def on_mount(self) -> None:
        self.border_title = "Ping-pong pairs"

    def show(self, snapshot: Snapshot, view: ViewState, palette: Palette) -> None:
        focus = focus_of(snapshot, view)
        if focus is None:
            self.put(_waiting(view), layout=False)
            return
        if not focus.pairs:
            self.put(Text("no alternating pair", style=palette.muted), layout=False)
            return
        key = (focus.session_id, focus.pairs, id(palette))
        if key == self._shown:
            return
        text = Text(no_wrap=True, overflow="ellipsis")
        limits = next((s for s in focus.streaks if s.detector == "ping_pong"), None)
        warning = limits.warning if limits and limits.warning else float("inf")
        critical = limits.critical if limits and limits.critical else float("inf")
        for pair in focus.pairs:
            verdict = "no progress" if pair.no_progress else "changing"
            level = "critical" if pair.no_progress and pair.count >= critical else \
                "warning" if pair.count >= warning else None
            sides = "both stable" if pair.no_progress else " / ".join(
                "stable" if stable else "changing" for stable in (pair.stable_a, pair.stable_b))
            if text:
                text.append("\n")
            tool = palette.style("text-primary")
            text.append(printable(f"{pair.tool_a}#{short_hash(pair.args_hash_a)}"), style=tool)
            text.append(" ↔ ", style=palette.muted)
            text.append(printable(f"{pair.tool_b}#{short_hash(pair.args_hash_b)}"), style=tool)
            text.append(f"  ×{pair.count}  ", style=palette.level(level, bold=bool(level)))
            text.append(f"{sides} · {verdict}",
                        style=palette.level(level) if level else palette.muted)
        self.put(text, key, layout=False)

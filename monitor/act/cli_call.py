"""The fallback path: ``openclaw gateway call METHOD --json --params JSON`` in a subprocess.

The CLI carries its own paired device identity, so it works where a token-only RPC
connection is refused (``DEVICE_IDENTITY_REQUIRED``). It costs a Node start (1.5–3 s).
The URL and token go to the child through its environment, never its argv, so they do
not show up in ``ps``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Mapping
from typing import Any

from monitor import untrusted_json
from monitor.act.gateway_errors import GatewayError, GatewaySetupError, GatewayUnavailable, redact

#: Lines of the CLI's output that start with ``{`` tried as the start of its JSON document.
JSON_STARTS_TRIED = 16


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
        done = subprocess.run(argv, env=child_env, capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)
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
    # Redacted whole, then cut: a token the cut halved would escape its replacement.
    raise GatewayError(redact(f"openclaw gateway call {method} exited {done.returncode}: "
                              f"{message[:65536]}", token)[:500])


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

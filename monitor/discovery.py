"""Find what to watch, in the order of shared/CONTRACT.md ("Finding OpenClaw").

Nothing here reads transcripts; it only resolves paths and settings, and
remembers every place it looked so a failure can name them.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field

from monitor import untrusted_json
from monitor.redaction import register_known_secret, register_url_secrets
from monitor.sources.regular import open_regular_file


class DiscoveryError(Exception):
    """Nothing to watch; the message names the paths tried and what to do."""


@dataclass
class Discovered:
    state_dir: str | None
    openclaw_config_path: str | None
    openclaw_config: dict
    log_path: str | None
    log_dirs: list[str]
    gateway_url: str | None
    gateway_token: str | None = field(repr=False, default=None)
    tried: list[str] = field(default_factory=list)
    log_is_rolling: bool = False


def resolve_state_dir(explicit: str | None, profile: str | None, env, tried: list[str]
                      ) -> str | None:
    if explicit:
        tried.append(f"--state-dir {explicit}")
        return os.path.abspath(os.path.expanduser(explicit))
    if env.get("OPENCLAW_STATE_DIR"):
        tried.append(f"$OPENCLAW_STATE_DIR={env['OPENCLAW_STATE_DIR']}")
        return os.path.abspath(os.path.expanduser(env["OPENCLAW_STATE_DIR"]))
    home = env.get("OPENCLAW_HOME") or env.get("HOME") or os.path.expanduser("~")
    candidate = os.path.join(home, f".openclaw-{profile}" if profile else ".openclaw")
    tried.append(candidate)
    return candidate if os.path.isdir(candidate) else None


def read_openclaw_config(state_dir: str | None, env, tried: list[str]
                         ) -> tuple[str | None, dict]:
    path = env.get("OPENCLAW_CONFIG_PATH") or (
        os.path.join(state_dir, "openclaw.json") if state_dir else None)
    if not path:
        return None, {}
    tried.append(path)
    try:
        with open_regular_file(path, "r", encoding="utf-8") as handle:   # never a FIFO
            data = untrusted_json.load(handle)
    except (OSError, ValueError):
        return path, {}
    return path, data if isinstance(data, dict) else {}


def default_log_dirs(env) -> list[str]:
    uid = os.getuid() if hasattr(os, "getuid") else 0
    tmp = env.get("TMPDIR") or "/tmp"
    return ["/tmp/openclaw", os.path.join(tmp, f"openclaw-{uid}")]


def newest_log_in(dirs: list[str]) -> str | None:
    """The newest-mtime ``openclaw-*.log`` (not a numbered rotation): the gateway keeps
    writing to the file named for its start date, so today's name can be stale."""
    best: tuple[float, str] | None = None
    for directory in dirs:
        for path in glob.glob(os.path.join(directory, "openclaw-*.log")):
            stem = os.path.basename(path)[: -len(".log")]
            if stem.rsplit(".", 1)[-1].isdigit():
                continue
            try:
                mtime = os.stat(path).st_mtime
            except OSError:
                continue
            if best is None or mtime > best[0]:
                best = (mtime, path)
    return best[1] if best else None


def discover(*, state_dir: str | None = None, profile: str | None = None,
             log: str | None = None, gateway: str | None = None, env=None) -> Discovered:
    env = os.environ if env is None else env
    tried: list[str] = []
    resolved_state = resolve_state_dir(state_dir, profile, env, tried)
    config_path, config = read_openclaw_config(resolved_state, env, tried)
    gateway_config = config.get("gateway") if isinstance(config.get("gateway"), dict) else {}
    logging_config = config.get("logging") if isinstance(config.get("logging"), dict) else {}
    log_dirs = default_log_dirs(env)
    if log:
        log_path: str | None = os.path.abspath(os.path.expanduser(log))
        tried.append(f"--log {log}")
    elif isinstance(logging_config.get("file"), str):
        log_path = logging_config["file"]
        tried.append(f"logging.file {log_path}")
    else:
        log_path = newest_log_in(log_dirs)
        tried.extend(os.path.join(d, "openclaw-*.log") for d in log_dirs)
    port = gateway_config.get("port")
    url = gateway or env.get("OPENCLAW_GATEWAY_URL") or (
        f"ws://127.0.0.1:{port}" if isinstance(port, int) else None)
    auth = gateway_config.get("auth") if isinstance(gateway_config.get("auth"), dict) else {}
    token = env.get("OPENCLAW_GATEWAY_TOKEN") or (
        auth.get("token") if isinstance(auth.get("token"), str) else None)
    rolling = not log and not isinstance(logging_config.get("file"), str)
    register_known_secret(token)  # masked in everything clawwatch outputs
    register_url_secrets(url)
    return Discovered(resolved_state, config_path, config, log_path, log_dirs, url, token, tried,
                      rolling)


def require_something(found: Discovered) -> None:
    """Raise ``DiscoveryError`` when neither a state dir nor a log exists."""
    state_ok = bool(found.state_dir) and os.path.isdir(found.state_dir or "")
    log_ok = bool(found.log_path) and os.path.exists(found.log_path or "")
    if state_ok or log_ok:
        return
    lines = ["clawwatch: no OpenClaw found to watch.", "Looked in:"]
    lines += [f"  - {place}" for place in found.tried]
    lines += [
        "Point clawwatch at it with --state-dir DIR (or $OPENCLAW_STATE_DIR), --profile NAME,",
        "and --log FILE for the gateway log; or try it without OpenClaw: clawwatch demo",
    ]
    raise DiscoveryError("\n".join(lines))

"""The replay cache keys on the secrets clawwatch knows, and keeps none of them.

A name too long to keep whole is redacted with the secrets known when it is read, then cut:
a secret the cut halves is masked only if it was known then. So a session cached before the
gateway token was set must be read again once it is, or part of the token is printed. Each
test runs ``clawwatch replay`` as a user does, on a generated state dir.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import generate_state_dirs

from monitor.redaction.clipping import KEPT_NAME_CHARS
from monitor.replay_cache_secrets import SALT_NAME

REPO = Path(__file__).resolve().parent.parent
TOKEN = "Zq8vLr2mXk9pWt4nHs7bJd3cFg6yQa1eUo5iRz0TlVw8KmNb"   # no rule's shape: known only


@pytest.fixture
def state_dir(tmp_path) -> Path:
    """A generated legacy state dir, one session of which calls a tool whose name, past
    ``KEPT_NAME_CHARS``, holds the token where the cut falls."""
    state = generate_state_dirs(tmp_path / "dirs") / "legacy"
    transcript = sorted((state / "agents" / "main" / "sessions").glob("*.jsonl"))[0]
    name = "x" * (KEPT_NAME_CHARS - 40) + " " + TOKEN
    with transcript.open("a") as handle:
        handle.write(json.dumps({"type": "message", "id": "long-name", "parentId": None,
                                 "timestamp": "2026-11-30T10:00:00Z", "message": {
                                     "role": "assistant", "stopReason": "toolUse",
                                     "content": [{"type": "toolCall", "id": "c-long",
                                                  "name": name, "arguments": {}}],
                                     "usage": {"input": 1, "output": 1}}}) + "\n")
    return state


def cli_replay(state_dir: Path, env: dict, *extra: str) -> str:
    return subprocess.run([sys.executable, "-m", "monitor", "replay", "--state-dir",
                           str(state_dir), "--json", "--jobs", "1", *extra], cwd=REPO,
                          env=env, text=True, capture_output=True, check=True).stdout


def test_a_session_cached_before_the_token_was_set_is_read_again_once_it_is(state_dir,
                                                                             tmp_path):
    cache = tmp_path / "xdg"
    env = {"XDG_CACHE_HOME": str(cache), "HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    with_token = {**env, "OPENCLAW_GATEWAY_TOKEN": TOKEN}
    cli_replay(state_dir, env)                  # cached while no secret is known
    warm = cli_replay(state_dir, with_token)
    assert warm == cli_replay(state_dir, with_token, "--no-cache")
    assert TOKEN[:8] not in warm
    files = sorted((cache / "clawwatch" / "replay").iterdir())
    written = [(f.name, f.stat().st_mtime_ns) for f in files]
    assert cli_replay(state_dir, with_token) == warm
    assert [(f.name, f.stat().st_mtime_ns) for f in files] == written, \
        "under the same secrets the cache answers again"
    assert cli_replay(state_dir, env) == cli_replay(state_dir, env, "--no-cache")


def test_the_cache_holds_neither_the_token_nor_a_plain_digest_of_it(state_dir, tmp_path):
    env = {"XDG_CACHE_HOME": str(tmp_path / "xdg"), "HOME": str(tmp_path / "home"),
           "PATH": "/usr/bin:/bin", "OPENCLAW_GATEWAY_TOKEN": TOKEN}
    cli_replay(state_dir, env)
    directory = tmp_path / "xdg" / "clawwatch" / "replay"
    stored = b"".join(path.read_bytes() for path in directory.iterdir())
    plain = [TOKEN.encode(), json.dumps([TOKEN]).encode()]
    digests = {digest(text).hexdigest() for text in plain
               for digest in (hashlib.sha256, hashlib.blake2b, hashlib.md5, hashlib.sha1)}
    assert TOKEN[:8].encode() not in stored
    assert not any(d.encode() in stored for d in digests)
    assert ((directory / SALT_NAME).stat().st_mode & 0o777) == 0o600

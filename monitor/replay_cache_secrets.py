"""Which secrets clawwatch knows, as the replay cache keys on it, without the secrets.

A session's read depends on the registered secrets (``monitor.redaction.known_secrets``):
a name or id too long to keep whole is redacted with them before it is cut
(``redaction.clipping.bounded``), and the cut can leave a part of a secret that no later
redaction recognises. So what the cache kept under one set of secrets is not the answer
under another, and the set must be part of every key.

The key must not let whoever reads the cache file (the user's own files, but a backup or a
shared home may copy them) test guesses of a secret cheaply. So the secrets are hashed with
scrypt (16 MiB, about 0.1 s: once per replay, and only when some secret is known) salted
with random bytes kept in the cache dir: no table computed in advance applies, and each
guess costs that much memory and time. The digest goes into the key only after sha256 has
mixed it with the rest of the key; neither it nor the secrets are written anywhere.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from monitor.redaction import known_secrets
from monitor.replay_cache_files import write_whole
from monitor.sources.regular import open_regular_file

SALT_NAME = "secrets-salt"
SALT_BYTES = 32
#: scrypt's cost: N, r, p (memory 128 * N * r bytes: 16 MiB).
SCRYPT_COST = (1 << 14, 8, 1)
NO_SECRETS = "none"


def secrets_digest(directory: Path) -> str | None:
    """What keys the cache on the secrets known now: ``NO_SECRETS`` when none is, else a
    salted scrypt digest of them. None when the salt can neither be read nor made (the cache
    is then not used: a key without the secrets could give another set's answer)."""
    known = known_secrets()
    if not known:
        return NO_SECRETS
    salt = _salt(directory)
    if salt is None:
        return None
    n, r, p = SCRYPT_COST
    digest = hashlib.scrypt(json.dumps(known).encode(), salt=salt,
                            n=n, r=r, p=p, maxmem=256 * n * r, dklen=32)
    return digest.hex()


def _salt(directory: Path) -> bytes | None:
    """The cache dir's salt, made when it has none (or one of the wrong size). Two replays
    that make one at once each use their own: the one whose salt was replaced keys entries
    no later replay matches, a miss."""
    path = directory / SALT_NAME
    salt = _read_salt(path)
    if salt is not None:
        return salt
    salt = os.urandom(SALT_BYTES)
    return salt if write_whole(path, [salt], prefix=".salt-") else None


def _read_salt(path: Path) -> bytes | None:
    """The salt kept at ``path``; None when it is missing, not a regular file or not
    ``SALT_BYTES`` long."""
    try:
        with open_regular_file(str(path)) as handle:
            salt = handle.read(SALT_BYTES + 1)
    except OSError:
        return None
    return salt if len(salt) == SALT_BYTES else None

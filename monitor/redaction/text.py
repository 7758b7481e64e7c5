"""A text with its secrets masked: every secret clawwatch itself knows, replaced literally,
and every shape of ``rules``.

The known secrets (``register_known_secret``: the gateway token, the ``--gateway`` URL's
password, webhook URLs' secrets) are kept here, beside ``redact_text``, which reads them on
every call.

Speed: a text is scanned for the rules' markers first (casefolded, as they are written), and
only the rules whose marker it holds run; most texts hold none and run no regex.
"""

from __future__ import annotations

import threading

from monitor.redaction.rules import REDACTED, compiled, compiled_rules

# Known secrets shorter than this are not replaced (they would mask ordinary words).
MIN_KNOWN_SECRET = 6
_known: tuple[str, ...] = ()
_known_lock = threading.Lock()


def register_known_secret(value: str | None) -> None:
    """Mask ``value`` wherever it appears in anything clawwatch outputs from now on (the
    gateway token, a URL's password, a webhook URL's path or query secret)."""
    global _known
    if not isinstance(value, str) or len(value) < MIN_KNOWN_SECRET:
        return
    with _known_lock:
        if value not in _known:
            # Longest first, so a secret that contains another is masked whole.
            _known = tuple(sorted((*_known, value), key=len, reverse=True))


def forget_known_secrets() -> None:
    """Forget every registered secret (tests)."""
    global _known
    with _known_lock:
        _known = ()


def known_secrets() -> tuple[str, ...]:
    """The registered secrets, as one tuple that is replaced, never changed, when they
    change: what a memo of redacted texts compares (``is``) to know it is still right."""
    return _known


def redact_text(text: str) -> str:
    """``text`` with bearer tokens, API keys, passwords, private keys, URL credentials and
    every registered secret masked."""
    for secret in _known:
        if secret in text:
            text = text.replace(secret, REDACTED)
    folded = _folded(text)
    rules = compiled or compiled_rules()
    found = [marker for marker in rules["_SCAN"] if marker in folded]
    if not found:
        return text
    gated = rules["_GATED"]
    found = [marker for gate in found for marker in (
        [m for m in gated[gate] if m in folded] if gate in gated else (gate,))]
    of_marker = rules["_RULES_OF_MARKER"]
    run = of_marker[found[0]] if len(found) == 1 else \
        frozenset().union(*(of_marker[marker] for marker in found))
    secret_text = rules["_SECRET_TEXT"]
    for index in sorted(run):             # in the rules' order, as they are written
        pattern, replacement, _ = secret_text[index]
        text = pattern.sub(replacement, text)
    return text


def _folded(text: str) -> str:
    """``text`` casefolded, as the rules' markers are written."""
    folded = text.casefold()
    if not folded.isascii():  # the two letters ``(?i)i`` matches that casefold elsewhere
        folded = folded.replace("\u0131", "i").replace("\u0307", "")
    return folded

"""Text as clawwatch shows or writes it: secrets masked, arguments formatted, whitespace clipped.

Everything clawwatch outputs passes through here: what the dashboard shows of a tool call or
a gateway-log line, and every output record (``watch --json`` lines, the replay document, the
audit log, webhook bodies, error messages) through ``redact_record``. Secret-named keys are
masked whatever their value; secret-looking text is masked wherever it appears.

The parts, each importable from here:

* ``rules``: the secret shapes (token prefixes, private keys, keyword assignments, headers,
  flags, URL userinfo) as regexes with the markers that gate them, compiled on first use;
* ``text``: ``redact_text``, and the secrets clawwatch itself knows (``register_known_secret``),
  masked by value;
* ``url_secrets``: the secrets a URL carries registered, a URL without its userinfo;
* ``structured``: JSON-like values (``redact``) and output records (``redact_record``);
* ``clipping``: text cut to what a view shows, redacted only that far.
"""

from __future__ import annotations

from typing import Any

from monitor.redaction.clipping import (
    KEPT_NAME_CHARS,
    REDACT_SLACK,
    bounded,
    bounded_output,
    clip,
    clip_redacted,
    format_arguments,
    redacted_cut,
    redacted_start,
    redacted_tail,
    shown_start,
)
from monitor.redaction.rules import REDACTED, compiled_rules
from monitor.redaction.structured import redact, redact_record
from monitor.redaction.text import (
    MIN_KNOWN_SECRET,
    forget_known_secrets,
    known_secrets,
    redact_text,
    register_known_secret,
)
from monitor.redaction.url_secrets import register_url_secrets, url_without_userinfo

__all__ = [
    "KEPT_NAME_CHARS",
    "MIN_KNOWN_SECRET",
    "REDACTED",
    "REDACT_SLACK",
    "bounded",
    "bounded_output",
    "clip",
    "clip_redacted",
    "forget_known_secrets",
    "format_arguments",
    "known_secrets",
    "redact",
    "redact_record",
    "redact_text",
    "redacted_cut",
    "redacted_start",
    "redacted_tail",
    "register_known_secret",
    "register_url_secrets",
    "shown_start",
    "url_without_userinfo",
]


def __getattr__(name: str) -> Any:
    """The compiled rules, built on first access: ``_SECRET_TEXT`` (regex, replacement,
    markers), ``_ALL_MARKERS``, ``_RULES_OF_MARKER``, ``_SECRET_FLAG``."""
    if name in ("_SECRET_TEXT", "_ALL_MARKERS", "_RULES_OF_MARKER", "_SECRET_FLAG"):
        return compiled_rules()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""The secrets a URL clawwatch is given carries (the ``--gateway`` URL, webhook URLs): each
registered as a known secret, so it is masked wherever it appears, and a URL shown in a
message without its userinfo. The userinfo is everything before the last ``@`` of the
authority (up to the first ``/``, ``?`` or ``#``), whatever it holds: a password with a space
or an ``@`` is not RFC 3986, and the client libraries take it all the same."""

from __future__ import annotations

import re

from monitor.redaction.text import register_known_secret


def register_url_secrets(url: str | None) -> None:
    """Register the secrets a URL carries: its userinfo password, and for a webhook URL its
    path and query (which often hold the token: ntfy topics, Slack/Discord hook paths)."""
    if not isinstance(url, str):
        return
    match = re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://(?:([^/?#]*)@)?([^/?#\s]*)([^#\s]*)", url)
    if not match:
        return
    userinfo, _, rest = match.groups()
    if userinfo:
        user, _, password = userinfo.partition(":")
        register_known_secret(password or user)
    for part in re.split(r"[/?&=]", rest or ""):
        if len(part) >= 16:
            register_known_secret(part)


def url_without_userinfo(url: str | None) -> str:
    """``url`` with any ``user:password@`` removed (for messages)."""
    if not isinstance(url, str):
        return str(url)
    return re.sub(r"^([A-Za-z][A-Za-z0-9+.-]*://)[^/?#]*@", r"\1", url)

"""Whether a gateway URL can be connected to at all: ``ws://HOST:PORT`` or
``wss://HOST:PORT`` with a port from 1 to 65535. Checked before connecting, so a mistyped
``--gateway``, ``$OPENCLAW_GATEWAY_URL`` or ``gateway.url`` is bad setup with one clear
line, not a ``ValueError`` from deep inside the WebSocket client."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit

from websockets.exceptions import InvalidURI
from websockets.uri import parse_uri

from monitor.loopback import is_loopback_name
from monitor.redaction import url_without_userinfo

FORM = "give ws://HOST:PORT or wss://HOST:PORT"
#: OpenClaw's own break-glass for plaintext ``ws://`` to a trusted private network; clawwatch
#: honours the same variable, so a setup the ``openclaw`` CLI accepts is accepted here too.
ALLOW_PLAINTEXT = "OPENCLAW_ALLOW_INSECURE_PRIVATE_WS"
PORT = "the port is not a number from 1 to 65535"


def gateway_url_problem(url: str) -> str | None:
    """``"bad gateway URL 'http://x': not ws:// or wss://; give ws://HOST:PORT …"``, or None
    for a URL the client can connect to. The message never holds the URL's password."""
    reason = None
    try:
        parse_uri(url)
        if urlsplit(url).port == 0:       # parse_uri takes port 0 for the scheme's default
            reason = PORT
    except InvalidURI as exc:
        reason = str(exc).rsplit(": ", 1)[-1]
    except ValueError:                    # urllib: the port is out of range or no number
        reason = PORT
    if reason is None:
        return None
    return f"bad gateway URL {url_without_userinfo(url)!r}: {reason}; {FORM}"


def is_loopback_url(url: str) -> bool:
    """Whether the URL's host is ``localhost`` or a loopback address (127.0.0.0/8, ::1)."""
    return is_loopback_name(urlsplit(url).hostname or "")


def plaintext_token_problem(url: str, token: str | None, env: Mapping[str, str]) -> str | None:
    """Why the token must not be sent to ``url``, or None. The token goes in the first
    frame (a URL's ``user:password@`` in the upgrade's Basic auth header), so over ``ws://``
    to a host other than loopback anyone on the path reads it (and can then stop or drive
    every agent); like OpenClaw's clients, clawwatch sends it in the clear only to loopback
    unless ``$OPENCLAW_ALLOW_INSECURE_PRIVATE_WS=1``."""
    parts = urlsplit(url)
    if not (token or parts.username or parts.password) or parts.scheme != "ws" \
            or is_loopback_url(url):
        return None
    if env.get(ALLOW_PLAINTEXT, "").strip() == "1":
        return None
    return (f"refusing to send the gateway token in the clear to "
            f"{url_without_userinfo(url)!r}: plaintext ws:// is for loopback only; use "
            f"wss://, an SSH tunnel to 127.0.0.1, or set {ALLOW_PLAINTEXT}=1 for a trusted "
            "private network")

"""Whether a gateway URL can be connected to at all: ``ws://HOST:PORT`` or
``wss://HOST:PORT`` with a port from 1 to 65535. Checked before connecting, so a mistyped
``--gateway``, ``$OPENCLAW_GATEWAY_URL`` or ``gateway.url`` is bad setup with one clear
line, not a ``ValueError`` from deep inside the WebSocket client."""

from __future__ import annotations

from urllib.parse import urlsplit

from websockets.exceptions import InvalidURI
from websockets.uri import parse_uri

from monitor.redaction import url_without_userinfo

FORM = "give ws://HOST:PORT or wss://HOST:PORT"
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

"""The OpenClaw gateway's wire format (WebSocket, protocol 4), as clawwatch speaks it: the
``connect`` parameters of an operator connection, request frames, and the reading of a
received frame, which may be anything (a frame that is not a JSON object is no frame)."""

from __future__ import annotations

import json
from typing import Any

from monitor import __version__, untrusted_json
from monitor.redaction import redacted_cut

PROTOCOL = 4
OPERATOR_SCOPES = ("operator.read", "operator.write", "operator.admin")
USER_AGENT = f"clawwatch/{__version__}"


def connect_params(token: str | None) -> dict:
    """The ``connect`` request's parameters: ``gateway-client``/``backend`` with the operator
    scopes (on loopback the shared token keeps them without a device key)."""
    return {
        "minProtocol": PROTOCOL, "maxProtocol": PROTOCOL,
        "client": {"id": "gateway-client", "version": f"clawwatch-{__version__}",
                   "platform": "linux", "mode": "backend"},
        "role": "operator", "scopes": list(OPERATOR_SCOPES), "caps": ["tool-events"],
        "auth": {"token": token or ""}, "userAgent": USER_AGENT,
    }


def request_frame(request_id: str, method: str, params: dict | None) -> str:
    """The text of one ``req`` frame."""
    return json.dumps({"type": "req", "id": request_id, "method": method,
                       "params": params or {}})


def parse_frame(raw: Any) -> dict | None:
    """A received frame as a dict, or None for one that is not a JSON object (binary,
    malformed, or JSON of another kind)."""
    if isinstance(raw, bytes):
        return None
    try:
        frame = untrusted_json.loads(raw)
    except ValueError:
        return None
    return frame if isinstance(frame, dict) else None


PREVIEW_CHARS = 80


def preview(raw: Any) -> str:
    """The start of a received frame, for an error message: redacted before the cut, so
    a token the gateway echoes cannot show its first characters (a halved secret is no
    longer known as one)."""
    if isinstance(raw, bytes):
        raw = raw[:PREVIEW_CHARS * 64].decode("utf-8", "backslashreplace")
    if isinstance(raw, str):
        return repr(redacted_cut(raw, PREVIEW_CHARS))
    return repr(raw)

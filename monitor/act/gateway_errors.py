"""What can go wrong talking to the OpenClaw gateway, as exceptions that say whether a
retry can help (``retryable``), and the mapping of a refused ``connect`` or a close frame
to the right one: an auth failure or ``DEVICE_IDENTITY_REQUIRED`` is final, so the caller
can fall back to the ``openclaw`` CLI (``monitor.act.cli_call``) at once. No message holds
the token (``redact``)."""

from __future__ import annotations

from typing import Any

from monitor.act.gateway_frames import PROTOCOL
from monitor.redaction import redact_text, redacted_cut


class GatewayError(Exception):
    """Something the gateway did or did not do; ``retryable`` says whether trying again can help."""

    retryable = False

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.code = code


class GatewaySetupError(GatewayError):
    """No usable URL or token: nothing to retry."""


class GatewayUnavailable(GatewayError):
    """Refused, timed out, or closed under us (a restart): worth a retry."""

    retryable = True


class GatewayProtocolError(GatewayError):
    """Frames that are not the gateway protocol (garbage, wrong first frame)."""

    retryable = True


class GatewayAuthError(GatewayError):
    """The gateway rejected the credentials; retrying with the same token cannot help."""


class DeviceIdentityRequired(GatewayAuthError):
    """The gateway wants a signed device identity (remote connections); use the CLI."""


class GatewayRpcError(GatewayError):
    """A method answered ``ok: false``."""

    def __init__(self, method: str, error: Any) -> None:
        error = error if isinstance(error, dict) else {"message": str(error)}
        self.error = error
        self.method = method
        code = error_code(error.get("code"))
        super().__init__(f"{method} failed: {code or 'error'}: "
                         f"{redacted_cut(str(error.get('message') or ''), 300)}",
                         code=code)
        self.retryable = bool(error.get("retryable"))


MAX_CODE_CHARS = 100      # OpenClaw's codes are words: INVALID_REQUEST, AUTH_TOKEN_MISMATCH


def error_code(value: Any) -> str | None:
    """An error code from the gateway as text cut to ``MAX_CODE_CHARS`` (None for none),
    redacted before the cut (``redacted_cut``): a secret the cut halved would no longer be
    known as one."""
    return redacted_cut(str(value), MAX_CODE_CHARS) if value else None


_JSON_KINDS = ((bool, "a boolean"), (int, "a number"), (float, "a number"), (str, "a string"),
               (list, "an array"), (dict, "an object"))


def json_kind(value: Any) -> str:
    """What a decoded JSON value is, in JSON's words (``"an array"``), for an error that
    must not echo the value itself."""
    if value is None:
        return "null"
    return next(name for kind, name in _JSON_KINDS if isinstance(value, kind))


def answer_object(method: str, payload: Any) -> dict:
    """A method's payload, which the protocol makes an object (``{}`` for none); any other
    answer is a broken or hostile gateway, refused with one line rather than read as if
    it were an object."""
    if payload is None:
        return {}
    if not isinstance(payload, dict):
        raise GatewayProtocolError(f"{method}: the gateway answered with {json_kind(payload)}, "
                                   "not an object")
    return payload


def redact(text: str, token: str | None) -> str:
    """``text`` with the token replaced and any other secret masked (URL userinfo, every
    registered secret), for anything that might be shown or logged."""
    return redact_text(text.replace(token, "<token>") if token else text)


def connect_error(error: Any) -> GatewayError:
    """The exception for a ``connect`` that the gateway answered with ``ok: false``."""
    error = error if isinstance(error, dict) else {"message": str(error)}
    details = error.get("details") if isinstance(error.get("details"), dict) else {}
    code = error_code(error.get("code")) or ""
    detail_code = error_code(details.get("code")) or ""
    message = str(error.get("message") or "")
    lowered = message.lower()
    summary = f"{detail_code or code or 'error'}: {redacted_cut(message, 300)}"
    if ("DEVICE_IDENTITY" in detail_code or code == "NOT_PAIRED"
            or "device identity" in lowered):
        return DeviceIdentityRequired(
            f"the gateway requires a signed device identity ({summary}); clawwatch can stop "
            "sessions through the openclaw CLI instead (--method cli)",
            code="DEVICE_IDENTITY_REQUIRED")
    if detail_code.startswith("AUTH_") or "unauthorized" in lowered or "token" in lowered:
        return GatewayAuthError(f"the gateway rejected the token ({summary}); check "
                                "$OPENCLAW_GATEWAY_TOKEN or gateway.auth.token", code=detail_code
                                or code)
    if detail_code == "PROTOCOL_MISMATCH":
        return GatewayError(f"protocol mismatch: the gateway expects protocol "
                            f"{error_code(details.get('expectedProtocol'))}, clawwatch speaks "
                            f"{PROTOCOL}",
                            code=detail_code)
    return GatewayError(f"connect refused by the gateway ({summary})", code=detail_code or code)


def closed_error(exc: BaseException) -> GatewayError:
    """The exception for a connection closed with a close frame (or without one)."""
    reason = ""
    code = None
    received = getattr(exc, "rcvd", None)
    if received is not None:
        code, reason = received.code, received.reason or ""
    if code == 1008 and reason:
        return connect_error({"message": reason})
    if code is None:
        return GatewayUnavailable(f"connection dropped without a close frame ({exc})")
    return GatewayUnavailable(f"connection closed by the gateway (code {code}"
                              f"{': ' + reason if reason else ''})")

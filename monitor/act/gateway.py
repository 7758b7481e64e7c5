"""A synchronous OpenClaw gateway RPC client (WebSocket, protocol 4) that never hangs.

One ``GatewayConnection`` is one authenticated operator connection: it waits for
``connect.challenge``, answers with ``connect`` as ``gateway-client``/``backend`` (on
loopback the shared token keeps the operator scopes without a device key), and then a
reader thread drains every frame: responses go to the waiting ``call`` (matched by id),
events go to ``on_event`` and a bounded buffer, so events that precede the response to
the request that caused them are kept.

``GatewayClient`` adds reconnection with bounded retries and backoff on the failures a
retry can cure (refused, stalled, closed mid-call, gateway restart, garbage frames). Auth
failures and ``DEVICE_IDENTITY_REQUIRED`` are not retried: they raise at once so the
caller can fall back to the ``openclaw`` CLI (``monitor.act.cli_call``). Every wait has a
time-out. The token is never put in an error message.
"""

from __future__ import annotations

import inspect
import json
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from typing import Any

from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI, WebSocketException
from websockets.sync.client import ClientConnection
from websockets.sync.client import connect as ws_connect

from monitor import __version__, untrusted_json
from monitor.act.gateway_url import gateway_url_problem
from monitor.redaction import (
    redact_text,
    register_known_secret,
    register_url_secrets,
    url_without_userinfo,
)

PROTOCOL = 4
_CONNECT_TAKES_PROXY = "proxy" in inspect.signature(ws_connect).parameters
OPERATOR_SCOPES = ("operator.read", "operator.write", "operator.admin")
MAX_FRAME_BYTES = 64 * 1024 * 1024
CANCELLED = "cancelled: clawwatch is stopping"


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
        super().__init__(f"{method} failed: {error.get('code') or 'error'}: "
                         f"{str(error.get('message') or '')[:300]}", code=error.get("code"))
        self.retryable = bool(error.get("retryable"))


def redact(text: str, token: str | None) -> str:
    """``text`` with the token replaced and any other secret masked (URL userinfo, every
    registered secret), for anything that might be shown or logged."""
    return redact_text(text.replace(token, "<token>") if token else text)


def _connect_error(error: Any) -> GatewayError:
    """The exception for a ``connect`` that the gateway answered with ``ok: false``."""
    error = error if isinstance(error, dict) else {"message": str(error)}
    details = error.get("details") if isinstance(error.get("details"), dict) else {}
    code = str(error.get("code") or "")
    detail_code = str(details.get("code") or "")
    message = str(error.get("message") or "")
    lowered = message.lower()
    summary = f"{detail_code or code or 'error'}: {message[:300]}"
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
                            f"{details.get('expectedProtocol')}, clawwatch speaks {PROTOCOL}",
                            code=detail_code)
    return GatewayError(f"connect refused by the gateway ({summary})", code=detail_code or code)


def _closed_error(exc: BaseException) -> GatewayError:
    """The exception for a connection closed with a close frame (or without one)."""
    reason = ""
    code = None
    received = getattr(exc, "rcvd", None)
    if received is not None:
        code, reason = received.code, received.reason or ""
    if code == 1008 and reason:
        return _connect_error({"message": reason})
    if code is None:
        return GatewayUnavailable(f"connection dropped without a close frame ({exc})")
    return GatewayUnavailable(f"connection closed by the gateway (code {code}"
                              f"{': ' + reason if reason else ''})")


class GatewayConnection:
    """One authenticated connection; use ``open()`` then ``call()``; always ``close()``."""

    def __init__(self, url: str, token: str | None, *, timeout: float = 5.0,
                 on_event: Callable[[dict], None] | None = None, max_events: int = 2000) -> None:
        self.url = url
        self.token = token
        # Error messages name the gateway without its ``user:password@``; both the password
        # and the token are masked in anything clawwatch outputs.
        self.shown_url = url_without_userinfo(url)
        register_url_secrets(url)
        register_known_secret(token)
        self.timeout = timeout
        self.on_event = on_event
        self.events: deque[dict] = deque(maxlen=max_events)
        self.hello: dict = {}
        self._ws = None
        self._cond = threading.Condition()
        self._responses: dict[str, dict] = {}
        self._failure: GatewayError | None = None
        self._reader: threading.Thread | None = None
        self._socket_owner: ClientConnection | None = None

    @property
    def closed(self) -> bool:
        return self._ws is None or self._failure is not None

    def open(self) -> dict:
        """Connect and authenticate; returns the ``hello-ok`` payload or raises GatewayError."""
        if not self.url:
            raise GatewaySetupError("no gateway URL (set --gateway, $OPENCLAW_GATEWAY_URL or "
                                    "gateway.port in openclaw.json)")
        options = {"open_timeout": self.timeout, "close_timeout": 0.5,
                   "max_size": MAX_FRAME_BYTES, "user_agent_header": f"clawwatch/{__version__}"}
        if _CONNECT_TAKES_PROXY:
            options["proxy"] = None  # a loopback gateway must not go through $HTTPS_PROXY
        options["create_connection"] = self._new_socket_owner
        problem = gateway_url_problem(self.url)
        if problem:
            raise GatewaySetupError(redact_text(problem))
        try:
            self._ws = ws_connect(self.url, **options).__enter__()
        except InvalidURI as exc:
            raise GatewaySetupError(f"bad gateway URL {self.shown_url!r}: "
                                    f"{redact_text(str(exc))}") from None
        except TimeoutError:
            raise GatewayUnavailable(f"{self.shown_url}: no WebSocket handshake within "
                                     f"{self.timeout:g} s") from None
        except ConnectionRefusedError:
            raise GatewayUnavailable(f"{self.shown_url}: connection refused (is the gateway "
                                     "running?)") from None
        except InvalidHandshake as exc:
            raise GatewayProtocolError(f"{self.shown_url}: not a gateway WebSocket "
                                       f"({redact_text(str(exc))})") from None
        except (OSError, WebSocketException) as exc:
            raise GatewayUnavailable(f"{self.shown_url}: cannot connect "
                                     f"({redact_text(str(exc))})") from None
        try:
            self._handshake()
        except BaseException:
            with self._cond:
                self._failure = self._failure or GatewayUnavailable("handshake failed")
            self.close()
            raise
        return self.hello

    def _new_socket_owner(self, *args: Any, **kwargs: Any) -> ClientConnection:
        """websockets' connection object, made as soon as the TCP connection is: kept so
        that ``abort`` can close its socket during the WebSocket handshake too."""
        owner = ClientConnection(*args, **kwargs)
        self._socket_owner = owner
        if self._failure is not None:       # aborted while the TCP connection was made
            owner.close_socket()
        return owner

    def _handshake(self) -> None:
        try:
            raw = self._ws.recv(timeout=self.timeout)
        except TimeoutError:
            raise GatewayUnavailable(f"{self.shown_url}: no connect.challenge within "
                                     f"{self.timeout:g} s (stalled)") from None
        except ConnectionClosed as exc:
            raise _closed_error(exc) from None
        frame = _parse(raw)
        if frame is None or frame.get("event") != "connect.challenge":
            raise GatewayProtocolError(f"{self.shown_url}: expected connect.challenge, got "
                                       f"{_preview(raw)}")
        self._reader = threading.Thread(target=self._read_frames, daemon=True,
                                        name="clawwatch-gateway-reader")
        self._reader.start()
        params = {
            "minProtocol": PROTOCOL, "maxProtocol": PROTOCOL,
            "client": {"id": "gateway-client", "version": f"clawwatch-{__version__}",
                       "platform": "linux", "mode": "backend"},
            "role": "operator", "scopes": list(OPERATOR_SCOPES), "caps": ["tool-events"],
            "auth": {"token": self.token or ""}, "userAgent": f"clawwatch/{__version__}",
        }
        try:
            self.hello = self.call("connect", params, timeout=self.timeout) or {}
        except GatewayRpcError as exc:
            raise _connect_error(exc.error) from None

    def _read_frames(self) -> None:
        failure: GatewayError
        try:
            for raw in self._ws:
                frame = _parse(raw)
                if frame is None:
                    failure = GatewayProtocolError(f"garbage frame from the gateway: "
                                                   f"{_preview(raw)}")
                    break
                self._dispatch(frame)
            else:
                failure = GatewayUnavailable("connection closed by the gateway")
        except ConnectionClosed as exc:
            failure = _closed_error(exc)
        except (OSError, WebSocketException) as exc:
            failure = GatewayUnavailable(f"connection lost ({exc})")
        with self._cond:
            self._failure = self._failure or failure
            self._cond.notify_all()
        if isinstance(failure, GatewayProtocolError):
            self._close_socket(hard=True)

    def _dispatch(self, frame: dict) -> None:
        kind = frame.get("type")
        if kind == "res":
            with self._cond:
                self._responses[str(frame.get("id"))] = frame
                self._cond.notify_all()
        elif kind == "event":
            self.events.append(frame)
            if self.on_event is not None:
                try:
                    self.on_event(frame)
                except Exception:  # a broken listener must not kill the reader
                    pass

    def call(self, method: str, params: dict | None = None, *, timeout: float | None = None
             ) -> Any:
        """Send one request and return its payload (raises GatewayError, never blocks longer
        than ``timeout``)."""
        timeout = self.timeout if timeout is None else timeout
        if self._ws is None:
            raise GatewayUnavailable("not connected")
        request_id = str(uuid.uuid4())
        with self._cond:
            if self._failure is not None:
                raise self._failure
        try:
            self._ws.send(json.dumps({"type": "req", "id": request_id, "method": method,
                                      "params": params or {}}))
        except ConnectionClosed as exc:
            raise _closed_error(exc) from None
        except (OSError, WebSocketException) as exc:
            raise GatewayUnavailable(f"{method}: cannot send ({exc})") from None
        deadline = time.monotonic() + timeout
        with self._cond:
            while request_id not in self._responses:
                if self._failure is not None:
                    failure = self._failure
                    raise type(failure)(f"{method}: {failure}", code=failure.code)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self._failure = GatewayUnavailable(f"stalled: {method} unanswered")
                    raise GatewayUnavailable(f"{method}: no response within {timeout:g} s")
                self._cond.wait(remaining)
            frame = self._responses.pop(request_id)
        if not frame.get("ok"):
            raise GatewayRpcError(method, frame.get("error"))
        return frame.get("payload")

    def _close_socket(self, *, hard: bool) -> None:
        """Close gracefully (a close handshake of at most ``close_timeout``), or at once
        (``hard``: a stalled or broken peer would only make us wait)."""
        ws = self._ws
        if ws is None:
            return
        try:
            if hard and hasattr(ws, "close_socket"):
                ws.close_socket()
            elif hard:
                ws.socket.close()
            else:
                ws.close()
        except Exception:
            pass

    def abort(self, reason: str) -> None:
        """End the connection now, from any thread: a ``call`` waiting on it raises, an
        ``open`` in progress fails (``reason`` is the error either gives)."""
        with self._cond:
            self._failure = self._failure or GatewayUnavailable(reason)
            self._cond.notify_all()
        owner = self._socket_owner
        if owner is not None:
            owner.close_socket()

    def close(self) -> None:
        with self._cond:
            healthy = self._failure is None
            self._failure = self._failure or GatewayUnavailable("connection closed")
            self._cond.notify_all()
        self._close_socket(hard=not healthy)
        if self._reader is not None and self._reader is not threading.current_thread():
            self._reader.join(timeout=2)


def _parse(raw: Any) -> dict | None:
    if isinstance(raw, bytes):
        return None
    try:
        frame = untrusted_json.loads(raw)
    except ValueError:
        return None
    return frame if isinstance(frame, dict) else None


def _preview(raw: Any) -> str:
    return repr(raw[:80]) if isinstance(raw, (str, bytes)) else repr(raw)


class GatewayClient:
    """Calls with reconnection: bounded attempts, exponential backoff, one shared connection.

    The worst case of ``call`` is about ``attempts * (connect_timeout + call timeout)`` plus
    the backoff sleeps; thread-safe (calls are serialised). ``cancel`` (or ``close``, from
    any thread) ends a call in flight within moments, whatever it waits for (the WebSocket
    handshake, a response, the backoff; a TCP connect still pending ends at its time-out),
    and fails every later one.
    """

    def __init__(self, url: str | None, token: str | None, *, connect_timeout: float = 5.0,
                 call_timeout: float = 5.0, attempts: int = 3, backoff: float = 0.25,
                 max_backoff: float = 2.0, on_event: Callable[[dict], None] | None = None
                 ) -> None:
        self.url = url or ""
        self.token = token
        register_url_secrets(self.url)
        register_known_secret(token)
        self.connect_timeout = connect_timeout
        self.call_timeout = call_timeout
        self.attempts = max(1, attempts)
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.on_event = on_event
        self._lock = threading.RLock()
        self._conn: GatewayConnection | None = None
        self._cancelled = threading.Event()
        self.last_error: str | None = None

    def connection(self) -> GatewayConnection:
        """The open connection, (re)connecting once if needed."""
        with self._lock:
            if self._conn is None or self._conn.closed:
                if self._conn is not None:
                    self._conn.close()
                    self._conn = None
                conn = GatewayConnection(self.url, self.token, timeout=self.connect_timeout,
                                         on_event=self.on_event)
                self._conn = conn               # reachable by ``cancel`` while it opens
                try:
                    self._raise_if_cancelled()
                    conn.open()
                except GatewayError:
                    self._conn = None
                    raise
            return self._conn

    def _raise_if_cancelled(self) -> None:
        if self._cancelled.is_set():
            raise GatewayUnavailable(CANCELLED)

    def call(self, method: str, params: dict | None = None, *, timeout: float | None = None,
             attempts: int | None = None) -> Any:
        attempts = self.attempts if attempts is None else max(1, attempts)
        delay = self.backoff
        with self._lock:
            for attempt in range(1, attempts + 1):
                try:
                    self._raise_if_cancelled()
                    return self.connection().call(method, params, timeout=timeout
                                                  or self.call_timeout)
                except GatewayError as exc:
                    if self._cancelled.is_set():
                        raise GatewayUnavailable(f"{method}: {CANCELLED}") from None
                    self.last_error = redact(str(exc), self.token)
                    if isinstance(exc, GatewayRpcError) and not exc.retryable:
                        raise
                    if self._conn is not None and (self._conn.closed or exc.retryable):
                        self._conn.close()
                        self._conn = None
                    if not exc.retryable or attempt == attempts:
                        if attempt > 1 and not isinstance(exc, GatewayRpcError):
                            raise type(exc)(f"{exc} (after {attempt} attempts)",
                                            code=exc.code) from None
                        raise
                if self._cancelled.wait(delay):
                    raise GatewayUnavailable(f"{method}: {CANCELLED}")
                delay = min(delay * 2, self.max_backoff)
        raise AssertionError("unreachable")

    # ---------------------------------------------------------------- methods

    def sessions_list(self, **params: Any) -> list[dict]:
        payload = self.call("sessions.list", params)
        rows = payload.get("sessions") if isinstance(payload, dict) else payload
        return [row for row in rows or [] if isinstance(row, dict)]

    def session_row(self, session_key: str) -> dict | None:
        return next((row for row in self.sessions_list() if row.get("key") == session_key),
                    None)

    def chat_abort(self, session_key: str, run_id: str | None = None) -> dict:
        params = {"sessionKey": session_key, **({"runId": run_id} if run_id else {})}
        return self.call("chat.abort", params) or {}

    def sessions_abort(self, session_key: str, *, run_id: str | None = None,
                       clear_queued: bool = True) -> dict:
        params = {"key": session_key, "clearQueued": clear_queued,
                  **({"runId": run_id} if run_id else {})}
        return self.call("sessions.abort", params) or {}

    def send_stop(self, session_key: str) -> dict:
        """``chat.send "/stop"``; one idempotency key across retries, so a retry is no second
        message."""
        params = {"sessionKey": session_key, "message": "/stop",
                  "idempotencyKey": f"clawwatch-stop-{uuid.uuid4()}"}
        return self.call("chat.send", params) or {}

    def cancel(self) -> None:
        """End the call in flight (its connection is aborted) and fail every later one;
        never waits for the call, so any thread may use it."""
        self._cancelled.set()
        conn = self._conn
        if conn is not None:
            conn.abort(CANCELLED)

    def close(self) -> None:
        """Close the connection: politely when no call is in flight, else by ``cancel``;
        no call is made afterwards."""
        self._cancelled.set()
        if not self._lock.acquire(blocking=False):
            self.cancel()
            return
        try:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
        finally:
            self._lock.release()

"""One authenticated operator connection to the OpenClaw gateway, synchronous and never
hanging.

``GatewayConnection.open`` waits for ``connect.challenge`` and answers with ``connect``;
then a reader thread drains every frame: responses go to the waiting ``call`` (matched by
id), events go to ``on_event`` as they arrive, so events that precede the response to the
request that caused them are seen first. Nothing else of a frame is kept: a response no
call waits for is dropped, so a gateway cannot make clawwatch hold its frames. Every wait
has a time-out, and ``abort`` ends the connection from any thread, even during the
WebSocket handshake. A redirect answered to the upgrade is refused, and a close frame ends
the connection at once.
"""

from __future__ import annotations

import inspect
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI, WebSocketException
from websockets.frames import Frame, Opcode
from websockets.sync.client import ClientConnection
from websockets.sync.client import connect as ws_connect

from monitor.act.gateway_errors import (
    GatewayError,
    GatewayProtocolError,
    GatewayRpcError,
    GatewaySetupError,
    GatewayUnavailable,
    closed_error,
    connect_error,
)
from monitor.act.gateway_frames import (
    USER_AGENT,
    connect_params,
    parse_frame,
    preview,
    request_frame,
)
from monitor.act.gateway_url import gateway_url_problem, plaintext_token_problem
from monitor.redaction import (
    redact_text,
    register_known_secret,
    register_url_secrets,
    url_without_userinfo,
)

_CONNECT_TAKES_PROXY = "proxy" in inspect.signature(ws_connect).parameters
MAX_FRAME_BYTES = 64 * 1024 * 1024

#: websockets' own log of the gateway connections. It logs what its reader thread survives,
#: as ``unexpected internal error`` with a traceback (a socket closed hard while its reader
#: feeds a large frame does that), and with no logging set up Python writes such records to
#: stderr: on the terminal of ``clawwatch stop`` and ``watch``. Every failure reaches the
#: caller as a GatewayError already, so these records go nowhere.
WEBSOCKETS_LOG = logging.getLogger("clawwatch.gateway.websockets")
WEBSOCKETS_LOG.addHandler(logging.NullHandler())
WEBSOCKETS_LOG.propagate = False


class RedirectRefused(InvalidHandshake):
    """The gateway answered the upgrade with a redirect. websockets (15 and later) follows
    one to any host and port it names, and the token goes in the first frame, not in a
    header it would strip: so the token and the stop would go to that place. clawwatch
    connects to the URL it was given or not at all."""

    def __init__(self, status: int | None) -> None:
        super().__init__(f"it answered the upgrade with a redirect"
                         f"{f' (HTTP {status})' if status else ''}, which clawwatch does not "
                         "follow")


class _EndsOnCloseFrame(ClientConnection):
    """websockets' connection, which after the peer's close frame waits (without a time-out
    in its reader) for the peer to close TCP too: a gateway that sends its close frame
    (``1008 unauthorized: …``) and keeps the socket open held a call to its time-out and
    turned the reason into ``no response``. This one closes the socket once the close
    frame is answered, so the call ends at once with the close's code and reason."""

    def process_event(self, event: Any) -> None:
        super().process_event(event)
        if isinstance(event, Frame) and event.opcode is Opcode.CLOSE:
            self.close_socket()


class GatewayConnection:
    """One authenticated connection; use ``open()`` then ``call()``; always ``close()``."""

    def __init__(self, url: str, token: str | None, *, timeout: float = 5.0,
                 on_event: Callable[[dict], None] | None = None) -> None:
        self.url = url
        self.token = token
        # Error messages name the gateway without its ``user:password@``; both the password
        # and the token are masked in anything clawwatch outputs.
        self.shown_url = url_without_userinfo(url)
        register_url_secrets(url)
        register_known_secret(token)
        self.timeout = timeout
        self.on_event = on_event
        self.hello: dict = {}
        self._ws = None
        self._cond = threading.Condition()
        self._awaited: set[str] = set()          # ids of the requests a call waits on
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
                   "max_size": MAX_FRAME_BYTES, "user_agent_header": USER_AGENT,
                   "logger": WEBSOCKETS_LOG}
        if _CONNECT_TAKES_PROXY:
            options["proxy"] = None  # a loopback gateway must not go through $HTTPS_PROXY
        options["create_connection"] = self._new_socket_owner
        problem = (gateway_url_problem(self.url)
                   or plaintext_token_problem(self.url, self.token, os.environ))
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
        that ``abort`` can close its socket during the WebSocket handshake too. Only one is
        made: a second is websockets following a redirect (``RedirectRefused``)."""
        if self._socket_owner is not None:      # websockets follows a redirect
            rejection = getattr(self._socket_owner.protocol, "handshake_exc", None)
            response = getattr(rejection, "response", None)
            raise RedirectRefused(getattr(response, "status_code", None))
        owner = _EndsOnCloseFrame(*args, **kwargs)
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
            raise closed_error(exc) from None
        frame = parse_frame(raw)
        if frame is None or frame.get("event") != "connect.challenge":
            raise GatewayProtocolError(f"{self.shown_url}: expected connect.challenge, got "
                                       f"{preview(raw)}")
        self._reader = threading.Thread(target=self._read_frames, daemon=True,
                                        name="clawwatch-gateway-reader")
        self._reader.start()
        try:
            self.hello = self.call("connect", connect_params(self.token),
                                   timeout=self.timeout) or {}
        except GatewayRpcError as exc:
            raise connect_error(exc.error) from None

    def _read_frames(self) -> None:
        failure: GatewayError
        try:
            for raw in self._ws:
                frame = parse_frame(raw)
                if frame is None:
                    failure = GatewayProtocolError(f"garbage frame from the gateway: "
                                                   f"{preview(raw)}")
                    break
                self._dispatch(frame)
            else:
                failure = GatewayUnavailable("connection closed by the gateway")
        except ConnectionClosed as exc:
            failure = closed_error(exc)
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
                request_id = frame.get("id")
                if isinstance(request_id, str) and request_id in self._awaited:
                    self._responses[request_id] = frame
                    self._cond.notify_all()
        elif kind == "event":
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
            self._awaited.add(request_id)
        try:
            return self._await_response(method, params, request_id, timeout)
        finally:
            with self._cond:
                self._awaited.discard(request_id)
                self._responses.pop(request_id, None)

    def _await_response(self, method: str, params: dict | None, request_id: str,
                        timeout: float) -> Any:
        try:
            self._ws.send(request_frame(request_id, method, params))
        except ConnectionClosed as exc:
            raise closed_error(exc) from None
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
        if frame.get("ok") is not True:      # a "false" or a 1 is no success either
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

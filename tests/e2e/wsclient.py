"""A small synchronous OpenClaw gateway RPC client for the e2e tests.

Uses the ``websockets`` sync client. A reader thread drains every frame as it arrives: responses
go to the waiting ``call``; events are appended to ``events`` in arrival order, so events sent
while an RPC is still in flight (they can precede its response) are kept, and a busy gateway is
never stalled by a test that is not reading.

Frames (protocol 4): req ``{type:"req", id, method, params}``, res ``{type:"res", id, ok,
payload|error}``, event ``{type:"event", event, payload, seq?}``. The handshake answers the
``connect.challenge`` event with ``connect`` as ``gateway-client``/``backend`` using the shared
token, which on a loopback connection keeps the operator scopes without a device identity.
"""

from __future__ import annotations

import inspect
import json
import threading
import time
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

PROTOCOL = 4
#: No keepalive pings (recent websockets send them): their payloads come from the global
#: ``random``, and the session-long connection would draw from it while hypothesis tests run.
NO_KEEPALIVE = {"ping_interval": None} if "ping_interval" in inspect.signature(
    connect).parameters else {}
OPERATOR_SCOPES = ["operator.read", "operator.write", "operator.admin"]


class GatewayRpcError(RuntimeError):
    """The gateway answered ``ok: false``; ``error`` is its error object."""

    def __init__(self, method: str, error: Any):
        super().__init__(f"{method} failed: {json.dumps(error)[:500]}")
        self.error = error


class GatewayClient:
    """One authenticated operator connection; ``call`` for RPCs, ``events`` for pushed events."""

    def __init__(self, url: str, token: str, *, timeout: float = 10.0):
        self._stack = ExitStack()
        self._ws = self._stack.enter_context(
            connect(url, open_timeout=timeout, close_timeout=2, max_size=None, **NO_KEEPALIVE))
        self._cond = threading.Condition()
        self._responses: dict[str, dict] = {}
        self._closed_reason: str | None = None
        self.events: list[dict] = []
        try:
            challenge = json.loads(self._ws.recv(timeout=timeout))
            if challenge.get("event") != "connect.challenge":
                raise ConnectionError(f"expected connect.challenge, got {challenge!r:.200}")
            self._reader = threading.Thread(target=self._read_frames, daemon=True,
                                            name="gateway-ws-reader")
            self._reader.start()
            self.hello = self.call("connect", {
                "minProtocol": PROTOCOL, "maxProtocol": PROTOCOL,
                "client": {"id": "gateway-client", "version": "clawwatch-e2e",
                           "platform": "linux", "mode": "backend"},
                "role": "operator", "scopes": OPERATOR_SCOPES, "caps": ["tool-events"],
                "auth": {"token": token}, "userAgent": "clawwatch-e2e/1",
            }, timeout=timeout)
        except BaseException:
            self._stack.close()
            raise

    def _read_frames(self) -> None:
        try:
            for raw in self._ws:
                frame = json.loads(raw)
                with self._cond:
                    if frame.get("type") == "res":
                        self._responses[frame.get("id")] = frame
                    elif frame.get("type") == "event":
                        self.events.append(frame)
                    self._cond.notify_all()
        except (ConnectionClosed, OSError, ValueError) as exc:
            reason = f"{type(exc).__name__}: {exc}"
        else:
            reason = "connection closed"
        with self._cond:
            self._closed_reason = reason
            self._cond.notify_all()

    def call(self, method: str, params: dict | None = None, *, timeout: float = 30.0) -> Any:
        """Send one request and return its payload; raises GatewayRpcError on ``ok: false``."""
        request_id = str(uuid.uuid4())
        self._ws.send(json.dumps({"type": "req", "id": request_id, "method": method,
                                  "params": params or {}}))
        deadline = time.monotonic() + timeout
        with self._cond:
            while request_id not in self._responses:
                if self._closed_reason is not None:
                    raise ConnectionError(f"{method}: {self._closed_reason}")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"{method}: no response within {timeout} s")
                self._cond.wait(remaining)
            frame = self._responses.pop(request_id)
        if not frame.get("ok"):
            raise GatewayRpcError(method, frame.get("error"))
        return frame.get("payload")

    def wait_event(self, predicate: Callable[[dict], bool], *, timeout: float,
                   start: int = 0) -> dict | None:
        """The first event from index ``start`` on that satisfies ``predicate``, or None."""
        deadline = time.monotonic() + timeout
        index = start
        with self._cond:
            while True:
                while index < len(self.events):
                    if predicate(self.events[index]):
                        return self.events[index]
                    index += 1
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._closed_reason is not None:
                    return None
                self._cond.wait(remaining)

    def close(self) -> None:
        self._stack.close()

"""``GatewayClient``: calls to the OpenClaw gateway with reconnection, and the session
methods clawwatch uses to stop an agent (``sessions.list``, ``chat.abort``,
``sessions.abort``, ``chat.send "/stop"``).

Failures a retry can cure (refused, stalled, closed mid-call, gateway restart, garbage
frames) are retried with bounded attempts and backoff; auth failures and
``DEVICE_IDENTITY_REQUIRED`` raise at once so the caller can fall back to the ``openclaw``
CLI (``monitor.act.cli_call``).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from typing import Any

from monitor.act.gateway_connection import GatewayConnection
from monitor.act.gateway_errors import (
    GatewayError,
    GatewayProtocolError,
    GatewayRpcError,
    GatewayUnavailable,
    answer_object,
    json_kind,
    redact,
)
from monitor.redaction import register_known_secret, register_url_secrets

CANCELLED = "cancelled: clawwatch is stopping"


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
        """The session rows, each an object with a text ``key`` (other rows are skipped);
        raises GatewayProtocolError when the answer holds no array of rows."""
        payload = self.call("sessions.list", params)
        rows = payload.get("sessions") if isinstance(payload, dict) else payload
        if rows is None:
            return []
        if not isinstance(rows, list):
            raise GatewayProtocolError(f"sessions.list: the gateway's sessions are "
                                       f"{json_kind(rows)}, not an array")
        return [row for row in rows if isinstance(row, dict) and isinstance(row.get("key"), str)]

    def session_row(self, session_key: str) -> dict | None:
        return next((row for row in self.sessions_list() if row.get("key") == session_key),
                    None)

    def chat_abort(self, session_key: str, run_id: str | None = None) -> dict:
        params = {"sessionKey": session_key, **({"runId": run_id} if run_id else {})}
        return answer_object("chat.abort", self.call("chat.abort", params))

    def sessions_abort(self, session_key: str, *, run_id: str | None = None,
                       clear_queued: bool = True) -> dict:
        params = {"key": session_key, "clearQueued": clear_queued,
                  **({"runId": run_id} if run_id else {})}
        return answer_object("sessions.abort", self.call("sessions.abort", params))

    def send_stop(self, session_key: str) -> dict:
        """``chat.send "/stop"``; one idempotency key across retries, so a retry is no second
        message."""
        params = {"sessionKey": session_key, "message": "/stop",
                  "idempotencyKey": f"clawwatch-stop-{uuid.uuid4()}"}
        return answer_object("chat.send", self.call("chat.send", params))

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

"""The gateway RPC client and ``clawwatch stop`` against local servers that misbehave.

``FakeGateway`` speaks raw WebSocket over a real loopback socket (so it can also stall
before the upgrade, cut a frame in half, or send garbage), and protocol 4 on top. Every
fault must end in a clear error within a bounded time, never a hang.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import socket
import struct
import subprocess
import sys
import threading
import time

import pytest
from test_cli_agents_process import wait_for

from monitor.act.cli_call import cli_call
from monitor.act.cli_stop import stop_main
from monitor.act.gateway_client import GatewayClient
from monitor.act.gateway_connection import GatewayConnection
from monitor.act.gateway_errors import (
    DeviceIdentityRequired,
    GatewayAuthError,
    GatewayError,
    GatewayProtocolError,
    GatewayRpcError,
    GatewaySetupError,
    GatewayUnavailable,
    connect_error,
)
from monitor.act.runs import RunTracker

pytestmark = pytest.mark.timeout(60)

TOKEN = "fake-gateway-token-0123456789"
WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


class FakeGateway:
    """A loopback protocol-4 gateway with a ``behaviour`` (see ``_serve``)."""

    def __init__(self, behaviour: str = "ok", *, token: str = TOKEN,
                 redirect_to: str = "", flood: tuple[int, str] = (0, ""),
                 host: str = "127.0.0.1") -> None:
        self.behaviour = behaviour
        self.token = token
        self.redirect_to = redirect_to
        self.flood = flood          # (frames, text) sent before each answer of flood-…
        self.requests: list[tuple[str, dict]] = []
        self.connections = 0
        self._server = socket.create_server((host, 0))
        self.port = self._server.getsockname()[1]
        self.url = f"ws://{host}:{self.port}"
        self._stop = threading.Event()
        #: ``hold-call`` answers each call only once this is set.
        self.release = threading.Event()
        self._sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._stop.set()
        self._server.close()
        for sock in self._sockets:
            try:
                sock.close()
            except OSError:
                pass

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                sock, _ = self._server.accept()
            except OSError:
                return
            self._sockets.append(sock)
            self.connections += 1
            threading.Thread(target=self._connection, args=(sock, self.connections),
                             daemon=True).start()

    def _connection(self, sock: socket.socket, number: int) -> None:
        try:
            self._serve(sock, number)
        except (OSError, ConnectionError, ValueError):
            pass

    # ------------------------------------------------------------ wire helpers

    @staticmethod
    def _frame(payload: bytes, opcode: int = 0x1) -> bytes:
        size = len(payload)
        if size < 126:
            header = struct.pack("!BB", 0x80 | opcode, size)
        elif size < 65536:
            header = struct.pack("!BBH", 0x80 | opcode, 126, size)
        else:
            header = struct.pack("!BBQ", 0x80 | opcode, 127, size)
        return header + payload

    def _send(self, sock: socket.socket, obj) -> None:
        sock.sendall(self._frame(json.dumps(obj).encode()))

    def _close_frame(self, sock: socket.socket, code: int, reason: str) -> None:
        sock.sendall(self._frame(struct.pack("!H", code) + reason.encode(), opcode=0x8))

    @staticmethod
    def _exact(sock: socket.socket, count: int) -> bytes:
        data = b""
        while len(data) < count:
            chunk = sock.recv(count - len(data))
            if not chunk:
                raise ConnectionError("peer closed")
            data += chunk
        return data

    def _receive(self, sock: socket.socket) -> dict | None:
        """The next client text frame as JSON (None for a close frame)."""
        while True:
            first, second = self._exact(sock, 2)
            size = second & 0x7F
            if size == 126:
                size = struct.unpack("!H", self._exact(sock, 2))[0]
            elif size == 127:
                size = struct.unpack("!Q", self._exact(sock, 8))[0]
            mask = self._exact(sock, 4) if second & 0x80 else b"\0\0\0\0"
            data = bytes(b ^ mask[i % 4] for i, b in enumerate(self._exact(sock, size)))
            opcode = first & 0x0F
            if opcode == 0x8:
                return None
            if opcode == 0x1:
                return json.loads(data)

    @staticmethod
    def _read_upgrade_request(sock: socket.socket) -> bytes:
        request = b""
        while b"\r\n\r\n" not in request:
            chunk = sock.recv(4096)
            if not chunk:
                raise ConnectionError("no upgrade request")
            request += chunk
        return request

    def _upgrade(self, sock: socket.socket) -> None:
        request = self._read_upgrade_request(sock)
        key = next(line.split(b":", 1)[1].strip() for line in request.split(b"\r\n")
                   if line.lower().startswith(b"sec-websocket-key:"))
        accept = base64.b64encode(hashlib.sha1(key + WS_GUID.encode()).digest()).decode()
        sock.sendall(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                      f"Connection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n").encode())

    # -------------------------------------------------------------- behaviours

    def _serve(self, sock: socket.socket, number: int) -> None:
        behaviour = self.behaviour
        if behaviour == "stall-http":
            self._stop.wait(30)
            return
        if behaviour == "redirect":
            self._read_upgrade_request(sock)
            sock.sendall(f"HTTP/1.1 302 Found\r\nLocation: {self.redirect_to}\r\n"
                         "Content-Length: 0\r\n\r\n".encode())
            self._stop.wait(30)
            return
        self._upgrade(sock)
        if behaviour == "garbage":
            sock.sendall(self._frame(b"<html>not a gateway</html>"))
            self._stop.wait(30)
            return
        if behaviour == "token-cut-in-first-frame":     # the preview's cut halves it
            sock.sendall(self._frame(("A" * 60 + self.token + " not json").encode()))
            self._stop.wait(30)
            return
        if behaviour == "stall-challenge":
            self._stop.wait(30)
            return
        self._send(sock, {"type": "event", "event": "connect.challenge",
                          "payload": {"nonce": "n-1", "ts": 1}})
        connect = self._receive(sock)
        if connect is None:
            return
        self.requests.append((connect["method"], connect["params"]))
        token = connect["params"].get("auth", {}).get("token")
        if behaviour == "close-and-linger":      # a close frame, the socket left open
            self._close_frame(sock, 1008, "unauthorized: gateway token mismatch")
            self._stop.wait(30)
            return
        if behaviour == "device-identity":
            return self._reject(sock, connect, "NOT_PAIRED", "device identity required",
                                "DEVICE_IDENTITY_REQUIRED")
        if token != self.token:
            return self._reject(sock, connect, "INVALID_REQUEST",
                                "unauthorized: gateway token mismatch (provide gateway auth "
                                "token)", "AUTH_TOKEN_MISMATCH")
        self._send(sock, {"type": "res", "id": connect["id"], "ok": True,
                          "payload": {"type": "hello-ok", "protocol": 4}})
        while True:
            request = self._receive(sock)
            if request is None:
                return
            self.requests.append((request["method"], request["params"]))
            if behaviour == "stall-call":
                continue
            if behaviour == "hold-call":
                self.release.wait(30)
            if behaviour == "close-mid-frame" or (behaviour == "restart" and number == 1):
                sock.sendall(b"\x81\x7e\x01\x00" + b'{"type":"res","id":')
                sock.shutdown(socket.SHUT_RDWR)
                sock.close()
                return
            if behaviour == "token-in-error-code":      # the cut would halve the token
                self._send(sock, {"type": "res", "id": request["id"], "ok": False, "error": {
                    "code": "E" * 80 + self.token, "message": "no",
                    "details": {"code": "D" * 90 + self.token}}})
                continue
            if behaviour == "long-error-code":
                self._send(sock, {"type": "res", "id": request["id"], "ok": False, "error": {
                    "code": "C" * 1_000_000, "message": "M" * 1_000_000}})
                continue
            if behaviour == "token-cut-in-garbage-frame":
                sock.sendall(self._frame(("{" * 60 + self.token).encode(), opcode=0x2))
                continue
            if behaviour == "garbage-after-connect":
                sock.sendall(self._frame(b"\x00\x01 definitely { not json"))
                continue
            self._answer(sock, request)

    def _crafted_answer(self, method: str):
        """The payload a wrong-typed behaviour answers ``method`` with, or None."""
        if self.behaviour == "array-answer":
            return [1, 2, 3]
        if self.behaviour == "sessions-not-array":
            return {"aborted": False} if method == "chat.abort" else {"sessions": 7}
        if self.behaviour == "many-long-runs":
            return {"aborted": True, "runIds": [f"run-{n}-\x1b]0;x\x07{'R' * 300}"
                                                for n in range(10_000)]}
        if self.behaviour in ("busy-unaborted", "busy-ended"):
            return {"chat.abort": {"aborted": False},
                    "sessions.list": {"sessions": [{"key": "agent:main:busy",
                                                    "hasActiveRun": True}]},
                    "sessions.abort": {"abortedRunId": None, "status": "busy"
                                       if self.behaviour == "busy-unaborted" else "no-active-run"},
                    }.get(method, {"ok": True})
        if self.behaviour == "abort-claimed-run-goes-on":
            return {"chat.abort": {"aborted": True, "runIds": ["run-1"]},
                    "sessions.list": {"sessions": [{"key": "agent:main:busy",
                                                    "hasActiveRun": True}]},
                    }.get(method, {"ok": True})
        if self.behaviour == "rows-keyed-by-objects":
            if method != "sessions.list":
                return {"ok": True}
            return {"sessions": [{"key": {"k": 1}, "hasActiveRun": True},
                                 {"key": ["x"], "hasActiveRun": True},
                                 {"key": "agent:main:busy", "hasActiveRun": True}]}
        return None

    def _reject(self, sock, connect: dict, code: str, message: str, detail: str) -> None:
        self._send(sock, {"type": "res", "id": connect["id"], "ok": False,
                          "error": {"code": code, "message": message,
                                    "details": {"code": detail}}})
        self._close_frame(sock, 1008, message)

    def _answer(self, sock: socket.socket, request: dict) -> None:
        method, params = request["method"], request["params"]
        if self.behaviour == "flood-before-answer":
            count, text = self.flood
            for number in range(count):
                self._send(sock, {"type": "event", "event": "flood", "payload": text})
                self._send(sock, {"type": "res", "id": f"stray-{number}", "ok": True,
                                  "payload": text})
        if self.behaviour == "ok-as-text":          # JSON's "false" is a string: truthy
            self._send(sock, {"type": "res", "id": request["id"], "ok": "false",
                              "error": {"code": "UNAVAILABLE"}, "payload": {"aborted": "no"}})
            return
        crafted = self._crafted_answer(method)
        if crafted is not None:
            self._send(sock, {"type": "res", "id": request["id"], "ok": True,
                              "payload": crafted})
            return
        key = params.get("sessionKey") or params.get("key")
        idle = isinstance(key, str) and key.endswith(":idle")
        if method in ("chat.abort", "chat.send"):
            if not idle:
                # The run's end arrives before the reply, as on the real gateway.
                self._send(sock, {"type": "event", "event": "agent", "seq": 7, "payload": {
                    "runId": "run-1", "sessionKey": key, "stream": "lifecycle",
                    "data": {"phase": "end", "status": "cancelled", "aborted": True}}})
            payload = {"ok": True, "aborted": not idle, "runIds": [] if idle else ["run-1"]}
        elif method == "sessions.list":
            payload = {"sessions": [{"key": "agent:main:idle", "hasActiveRun": False}]}
        elif method == "sessions.abort":
            payload = {"ok": True, "abortedRunId": None, "status": "no-active-run"}
        else:
            self._send(sock, {"type": "res", "id": request["id"], "ok": False,
                              "error": {"code": "INVALID_REQUEST",
                                        "message": f"unknown method: {method}"}})
            return
        self._send(sock, {"type": "res", "id": request["id"], "ok": True, "payload": payload})


@pytest.fixture
def fake_gateway(request):
    gateways: list[FakeGateway] = []

    def make(behaviour: str = "ok", **kwargs) -> FakeGateway:
        gateway = FakeGateway(behaviour, **kwargs)
        gateways.append(gateway)
        return gateway

    yield make
    for gateway in gateways:
        gateway.close()


def refused_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"ws://127.0.0.1:{port}"


def fast_client(url: str, token: str = TOKEN, **kwargs) -> GatewayClient:
    options = {"connect_timeout": 0.5, "call_timeout": 0.5, "attempts": 2, "backoff": 0.05}
    return GatewayClient(url, token, **{**options, **kwargs})


# ------------------------------------------------------------------- the happy path

def test_abort_keeps_the_event_that_arrives_before_the_reply(fake_gateway):
    gateway = fake_gateway("ok")
    tracker = RunTracker()
    client = fast_client(gateway.url, on_event=tracker.feed)
    try:
        payload = client.chat_abort("agent:main:loop")
        assert payload == {"ok": True, "aborted": True, "runIds": ["run-1"]}
        assert tracker.wait_run_ends(["run-1"], timeout=0) == {
            "run-1": {"phase": "end", "status": "cancelled", "aborted": True,
                      "sessionKey": "agent:main:loop"}}
        method, params = gateway.requests[0]
        assert method == "connect"
        assert params["client"] == {"id": "gateway-client", "version": params["client"]["version"],
                                    "platform": "linux", "mode": "backend"}
        assert params["role"] == "operator" and params["minProtocol"] == 4
        assert set(params["scopes"]) == {"operator.read", "operator.write", "operator.admin"}
        assert params["auth"] == {"token": TOKEN}
        assert gateway.requests[1] == ("chat.abort", {"sessionKey": "agent:main:loop"})
    finally:
        client.close()


def test_stop_text_sends_slash_stop_with_an_idempotency_key(fake_gateway):
    gateway = fake_gateway("ok")
    client = fast_client(gateway.url)
    try:
        assert client.send_stop("agent:main:x")["aborted"] is True
    finally:
        client.close()
    method, params = gateway.requests[-1]
    assert method == "chat.send" and params["message"] == "/stop"
    assert params["sessionKey"] == "agent:main:x" and params["idempotencyKey"]


def test_a_gateway_restart_mid_call_is_retried_on_a_new_connection(fake_gateway):
    gateway = fake_gateway("restart")
    client = fast_client(gateway.url, attempts=3)
    try:
        assert client.chat_abort("agent:main:loop")["aborted"] is True
    finally:
        client.close()
    assert gateway.connections == 2
    assert [m for m, _ in gateway.requests].count("chat.abort") == 2


# ------------------------------------------------------------------------- faults

FAULTS = [
    # (behaviour, exception, words the message must contain)
    ("refused", GatewayUnavailable, "connection refused"),
    ("stall-http", GatewayUnavailable, "no WebSocket handshake"),
    ("stall-challenge", GatewayUnavailable, "no connect.challenge"),
    ("stall-call", GatewayUnavailable, "no response within"),
    ("close-mid-frame", GatewayUnavailable, "connection"),
    ("garbage", GatewayProtocolError, "expected connect.challenge"),
    ("garbage-after-connect", GatewayProtocolError, "garbage frame"),
    ("bad-token", GatewayAuthError, "rejected the token"),
    ("device-identity", DeviceIdentityRequired, "device identity"),
]


@pytest.mark.parametrize(("behaviour", "error", "words"), FAULTS, ids=[f[0] for f in FAULTS])
def test_each_fault_is_a_clear_error_in_bounded_time(fake_gateway, behaviour, error, words):
    url = refused_url() if behaviour == "refused" else fake_gateway(
        "ok" if behaviour == "bad-token" else behaviour).url
    token = "wrong-token" if behaviour == "bad-token" else TOKEN
    client = fast_client(url, token)
    started = time.monotonic()
    try:
        with pytest.raises(error) as caught:
            client.chat_abort("agent:main:loop")
    finally:
        client.close()
    elapsed = time.monotonic() - started
    # two attempts of at most 0.5 s connect + 0.5 s call, plus backoff and slack
    assert elapsed < 4.0, f"{behaviour} took {elapsed:.1f} s"
    message = str(caught.value)
    assert words in message, message
    assert token not in message
    if not error.retryable:
        assert "attempts" not in message, "auth failures must not be retried"


STALLS = [
    # (behaviour, what shows the call is waiting there)
    ("stall-http", lambda gateway: gateway.connections),
    ("stall-challenge", lambda gateway: gateway.connections),
    ("stall-call", lambda gateway: ("chat.abort", {"sessionKey": "agent:main:loop"})
     in gateway.requests),
]


@pytest.mark.parametrize(("behaviour", "waiting"), STALLS, ids=[s[0] for s in STALLS])
def test_close_from_another_thread_ends_a_stalled_call_at_once(fake_gateway, behaviour,
                                                               waiting):
    """What ``watch`` and ``clawwatch stop`` do when told to stop while a call waits (in
    the WebSocket handshake, for the challenge, for the response): the call fails within
    moments, though its time-outs allow minutes, and no later call is made."""
    gateway = fake_gateway(behaviour)
    client = GatewayClient(gateway.url, TOKEN, connect_timeout=60, call_timeout=60)
    failures: list[Exception] = []

    def call() -> None:
        try:
            client.chat_abort("agent:main:loop")
        except GatewayUnavailable as exc:
            failures.append(exc)

    caller = threading.Thread(target=call)
    caller.start()
    wait_for(lambda: waiting(gateway), f"the call to wait ({behaviour})")
    started = time.monotonic()
    client.close()
    caller.join(timeout=10)
    assert not caller.is_alive() and time.monotonic() - started < 0.5
    assert "cancelled: clawwatch is stopping" in str(failures[0])
    with pytest.raises(GatewayUnavailable, match="cancelled"):
        client.sessions_list()
    assert gateway.connections == 1


def test_a_redirect_is_refused_and_the_token_goes_nowhere_else(fake_gateway):
    """The token travels in the first frame: a followed redirect would hand it, and the
    stop, to whatever host the answer names (websockets may open the TCP connection to
    it before clawwatch refuses; nothing is sent on it)."""
    elsewhere = fake_gateway("ok")
    gateway = fake_gateway("redirect", redirect_to=f"{elsewhere.url}/other")
    client = fast_client(gateway.url)
    try:
        with pytest.raises(GatewayProtocolError) as caught:
            client.chat_abort("agent:main:loop")
    finally:
        client.close()
    assert "redirect (HTTP 302), which clawwatch does not follow" in str(caught.value)
    assert elsewhere.requests == []


def non_loopback_address() -> str:
    """An IPv4 address of this machine that is not loopback (the test skips without one)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.254", 9))
            address = probe.getsockname()[0]
        except OSError:
            address = ""
    if not address or address.startswith("127."):
        pytest.skip("no non-loopback IPv4 address")
    return address


def test_the_token_is_not_sent_in_the_clear_to_a_host_other_than_loopback(
        fake_gateway, monkeypatch):
    """Over ``ws://`` to another host the token in the first frame is readable by anyone on
    the path: refused before connecting, as OpenClaw's clients do, unless its break-glass
    variable is set."""
    monkeypatch.delenv("OPENCLAW_ALLOW_INSECURE_PRIVATE_WS", raising=False)
    gateway = fake_gateway("ok", host=non_loopback_address())
    client = fast_client(gateway.url)
    try:
        with pytest.raises(GatewaySetupError) as caught:
            client.chat_abort("agent:main:loop")
    finally:
        client.close()
    assert "refusing to send the gateway token in the clear" in str(caught.value)
    assert TOKEN not in str(caught.value)
    assert gateway.connections == 0 and gateway.requests == []
    with_password = gateway.url.replace("ws://", "ws://operator:url-password-0123456789@")
    client = fast_client(with_password, token=None)
    try:
        with pytest.raises(GatewaySetupError, match="in the clear") as caught:
            client.chat_abort("agent:main:loop")
    finally:
        client.close()
    assert "url-password" not in str(caught.value) and gateway.connections == 0

    monkeypatch.setenv("OPENCLAW_ALLOW_INSECURE_PRIVATE_WS", "1")
    client = fast_client(gateway.url)
    try:
        assert client.chat_abort("agent:main:loop")["aborted"] is True
    finally:
        client.close()


@pytest.mark.parametrize("behaviour", ["token-cut-in-first-frame",
                                       "token-cut-in-garbage-frame"])
def test_a_frame_that_echoes_the_token_shows_none_of_it(fake_gateway, behaviour):
    """A bad frame is quoted by its first 80 characters: redacted before the cut, else a
    token the cut halves shows its first characters (no longer known as the token)."""
    client = fast_client(fake_gateway(behaviour).url, attempts=1)
    try:
        with pytest.raises(GatewayProtocolError) as caught:
            client.chat_abort("agent:main:loop")
    finally:
        client.close()
    assert "«redacted»" in str(caught.value)
    assert TOKEN[:8] not in str(caught.value) and TOKEN[:8] not in client.last_error


def test_a_close_frame_ends_the_call_at_once_with_its_reason(fake_gateway):
    """A gateway that closes with a reason but leaves TCP open: the reason is the error
    (here a rejected token, which is not retried and lets ``stop`` use the CLI), not a
    call that waits out its time-out."""
    gateway = fake_gateway("close-and-linger")
    client = GatewayClient(gateway.url, TOKEN, connect_timeout=30, call_timeout=30)
    started = time.monotonic()
    try:
        with pytest.raises(GatewayAuthError, match="rejected the token"):
            client.chat_abort("agent:main:loop")
    finally:
        client.close()
    assert time.monotonic() - started < 2 and gateway.connections == 1


def test_what_websockets_logs_about_a_connection_never_reaches_the_root_logger(fake_gateway,
                                                                             caplog):
    """websockets logs an ``unexpected internal error`` with its traceback when a socket
    closed hard races its reader (a flood of large frames and a call timing out did it);
    a record that reaches the root logger with no handler set up is printed on stderr by
    Python's last resort (pytest's ``caplog`` stands at the root here)."""
    gateway = fake_gateway("ok")
    conn = GatewayConnection(gateway.url, TOKEN, timeout=1.0)
    conn.open()
    try:
        try:
            raise EOFError("stream ended")
        except EOFError:
            conn._ws.logger.error("unexpected internal error", exc_info=True)
    finally:
        conn.close()
    assert [record for record in caplog.records if "websockets" in record.name] == []


def test_auth_failure_is_not_retried(fake_gateway):
    gateway = fake_gateway("ok")
    client = fast_client(gateway.url, "wrong-token", attempts=5)
    with pytest.raises(GatewayAuthError):
        client.sessions_list()
    client.close()
    assert gateway.connections == 1


def test_connection_reports_the_close_reason_of_a_rejected_connect(fake_gateway):
    gateway = fake_gateway("device-identity")
    conn = GatewayConnection(gateway.url, TOKEN, timeout=1.0)
    with pytest.raises(DeviceIdentityRequired) as caught:
        conn.open()
    assert "--method cli" in str(caught.value)
    assert conn.closed


# ------------------------------------------------------------------ clawwatch stop

def stop_args(key: str, url: str | None, tmp_path, **extra) -> argparse.Namespace:
    return argparse.Namespace(session_key=key, kill=False, method=extra.get("method"),
                              state_dir=str(tmp_path / "state"), profile=None, log=None,
                              gateway=url, config=None, json=True, timeout=1.0)


def stop_env(tmp_path, token: str = TOKEN) -> dict:
    return {"HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "xdg"),
            "OPENCLAW_GATEWAY_TOKEN": token, "PATH": "/usr/bin:/bin"}


def run_stop(args, env) -> tuple[int, list[dict], str, float]:
    out, err = io.StringIO(), io.StringIO()
    started = time.monotonic()
    code = stop_main(args, out=out, err=err, env=env)
    lines = [json.loads(line) for line in out.getvalue().splitlines() if line.strip()]
    return code, lines, err.getvalue(), time.monotonic() - started


def test_stop_exits_0_and_audits_an_aborted_run(fake_gateway, tmp_path):
    gateway = fake_gateway("ok")
    code, lines, err, _ = run_stop(stop_args("agent:main:loop", gateway.url, tmp_path),
                                   stop_env(tmp_path))
    assert code == 0, err
    assert lines[0]["type"] == "action" and lines[0]["ok"] is True
    assert lines[0]["action"] == "abort" and "aborted run run-1" in lines[0]["detail"]
    assert "ended (end status=cancelled" in lines[0]["detail"]
    audit = [json.loads(line) for line in
             (tmp_path / "xdg" / "clawwatch" / "audit.jsonl").read_text().splitlines()]
    assert [entry["event"] for entry in audit] == ["attempt", "result"]
    assert audit[1]["key"] == "agent:main:loop" and audit[1]["ok"] is True


def test_stop_exits_0_on_an_idle_session(fake_gateway, tmp_path):
    gateway = fake_gateway("ok")
    code, lines, err, _ = run_stop(stop_args("agent:main:idle", gateway.url, tmp_path),
                                   stop_env(tmp_path))
    assert code == 0, err
    assert "no active run (session idle)" in lines[0]["detail"]
    assert [m for m, _ in gateway.requests] == ["connect", "chat.abort", "sessions.list"]


def test_a_token_in_an_error_code_is_masked_before_the_code_is_cut(fake_gateway, tmp_path):
    gateway = fake_gateway("token-in-error-code")
    code, lines, err, _ = run_stop(stop_args("agent:main:loop", gateway.url, tmp_path),
                                   stop_env(tmp_path))
    audit = (tmp_path / "xdg" / "clawwatch" / "audit.jsonl").read_text()
    assert code == 1 and "E" * 80 in json.dumps(lines)
    for text in (json.dumps(lines), err, audit):
        assert TOKEN[:12] not in text


@pytest.mark.parametrize(("behaviour", "code", "said"), [
    ("busy-unaborted", 1, "neither chat.abort nor sessions.abort aborted it (sessions.abort "
                          "status busy)"),
    ("ok-as-text", 1, "chat.abort"),
    ("busy-ended", 0, "no active run (session idle)")])
def test_stop_succeeds_only_on_what_the_gateway_says_it_did(fake_gateway, tmp_path, behaviour,
                                                            code, said):
    """An answer is a success only as the protocol writes one (``ok: true``, ``aborted:
    true``, a run id that is text), and a run the gateway still lists as active after both
    aborts is a failure: ``--kill`` and ``--act auto`` rely on the outcome. A run that ended
    between the listing and ``sessions.abort`` leaves the session idle, as asked."""
    gateway = fake_gateway(behaviour)
    result = run_stop(stop_args("agent:main:busy", gateway.url, tmp_path), stop_env(tmp_path))
    assert result[0] == code, result
    assert result[1][0]["ok"] is (code == 0) and said in json.dumps(result[1]), result[1]


@pytest.mark.parametrize("behaviour", ["refused", "stall-call", "garbage", "bad-token"])
def test_stop_exits_1_with_an_error_line_when_the_gateway_fails(fake_gateway, tmp_path,
                                                                behaviour):
    url = refused_url() if behaviour == "refused" else fake_gateway(
        "ok" if behaviour == "bad-token" else behaviour).url
    env = stop_env(tmp_path, "wrong-token" if behaviour == "bad-token" else TOKEN)
    code, lines, _, elapsed = run_stop(stop_args("agent:main:loop", url, tmp_path), env)
    assert code == 1
    assert [line["type"] for line in lines] == ["action", "error"]
    assert lines[0]["ok"] is False and lines[1]["message"].startswith("stop agent:main:loop:")
    assert "wrong-token" not in json.dumps(lines)
    # 3 attempts of at most 1 s connect + 1 s call, plus backoff (0.25 + 0.5 s) and slack
    assert elapsed < 8, f"{behaviour}: {elapsed:.1f} s"


@pytest.mark.parametrize(("behaviour", "words"), [
    ("array-answer", "chat.abort: the gateway answered with an array, not an object"),
    ("sessions-not-array", "sessions.list: the gateway's sessions are a number, not an array"),
], ids=["array-answer", "sessions-not-array"])
def test_stop_exits_1_naming_an_answer_of_the_wrong_type(fake_gateway, tmp_path, behaviour,
                                                         words):
    gateway = fake_gateway(behaviour)
    code, lines, err, _ = run_stop(stop_args("agent:main:loop", gateway.url, tmp_path),
                                   stop_env(tmp_path))
    assert code == 1 and err == ""
    assert [line["type"] for line in lines] == ["action", "error"]
    assert words in lines[0]["detail"]
    audit = (tmp_path / "xdg" / "clawwatch" / "audit.jsonl").read_text().splitlines()
    assert [json.loads(entry)["event"] for entry in audit] == ["attempt", "result"]


@pytest.mark.parametrize(("behaviour", "code", "words"), [
    ("many-long-runs", 0, "and 9995 more"),
    ("long-error-code", 1, "chat.abort failed: " + "C" * 100 + ": " + "M" * 300),
], ids=["many-long-runs", "long-error-code"])
def test_stop_prints_one_short_line_for_an_answer_of_any_size(fake_gateway, tmp_path,
                                                              behaviour, code, words):
    """10,000 run ids of 300 characters, or an error code and message of 1 MB each."""
    gateway = fake_gateway(behaviour)
    args = stop_args("agent:main:loop", gateway.url, tmp_path)
    args.json = False
    out, err = io.StringIO(), io.StringIO()
    assert stop_main(args, out=out, err=err, env=stop_env(tmp_path)) == code
    (line,) = (out.getvalue() + err.getvalue()).splitlines()
    assert words in line and "\x1b" not in line
    assert len(line) < 8000, len(line)


def test_stop_fails_when_the_gateway_claims_an_abort_but_the_run_goes_on(fake_gateway, tmp_path):
    """``chat.abort`` answers ``aborted: true`` for run-1, yet no end event comes and the
    session still lists an active run: the stop did not happen, so it is no success, in
    the exit code, the output and the audit log."""
    gateway = fake_gateway("abort-claimed-run-goes-on")
    code, lines, err, elapsed = run_stop(stop_args("agent:main:busy", gateway.url, tmp_path),
                                         stop_env(tmp_path))
    assert code == 1, err
    assert lines[0]["ok"] is False
    assert "still lists an active run" in lines[0]["detail"]
    audit = (tmp_path / "xdg" / "clawwatch" / "audit.jsonl").read_text().splitlines()
    assert json.loads(audit[-1])["ok"] is False
    assert elapsed < 10


def test_stop_exits_2_without_a_gateway_url(tmp_path):
    args = stop_args("agent:main:loop", None, tmp_path)
    code, lines, err, _ = run_stop(args, stop_env(tmp_path))
    assert code == 2 and lines == []
    assert "no gateway URL" in err


@pytest.mark.parametrize(("gateway", "env_url", "reason"), [
    ("ws://127.0.0.1:99999", None, "the port is not a number from 1 to 65535"),
    ("ws://op:hunter2-hunter2@127.0.0.1:99999", None, "the port is not a number"),
    ("http://x:1", None, "scheme isn't ws or wss"),
    (None, "garbage", "scheme isn't ws or wss"),
], ids=["port", "port-with-password", "http", "env-garbage"])
def test_stop_exits_2_naming_a_gateway_url_it_cannot_connect_to(tmp_path, gateway, env_url,
                                                                 reason):
    env = {**stop_env(tmp_path), **({"OPENCLAW_GATEWAY_URL": env_url} if env_url else {})}
    code, lines, err, _ = run_stop(stop_args("agent:main:loop", gateway, tmp_path), env)
    assert code == 2 and lines == []
    (line,) = err.splitlines()
    assert line.startswith("clawwatch stop: bad gateway URL ") and reason in line
    assert "ws://HOST:PORT" in line and "hunter2" not in line


def test_stop_exits_2_when_openclaw_json_names_no_port(tmp_path):
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "openclaw.json").write_text('{"gateway": {"port": 99999}}')
    code, lines, err, _ = run_stop(stop_args("agent:main:loop", None, tmp_path),
                                   stop_env(tmp_path))
    assert code == 2 and lines == []
    assert "no gateway URL" in err and "gateway.port '99999'" in err


def test_stop_exits_2_for_cli_method_without_the_openclaw_cli(fake_gateway, tmp_path):
    gateway = fake_gateway("ok")
    args = stop_args("agent:main:loop", gateway.url, tmp_path, method="cli")
    code, _, err, _ = run_stop(args, {**stop_env(tmp_path), "PATH": str(tmp_path)})
    assert code == 2 and "openclaw CLI" in err


FAKE_CLI = """#!/bin/sh
printf '%s\\n' "$@" > "$0.argv"
printf '%s|%s\\n' "$OPENCLAW_GATEWAY_URL" "$OPENCLAW_GATEWAY_TOKEN" > "$0.env"
echo 'some log line the CLI prints first'
echo '{"ok": true, "aborted": true, "runIds": ["run-cli"]}'
"""


def fake_cli(tmp_path) -> str:
    path = tmp_path / "bin" / "openclaw"
    path.parent.mkdir()
    path.write_text(FAKE_CLI)
    path.chmod(0o755)
    return str(path)


def test_device_identity_falls_back_to_the_cli_without_the_token_in_argv(fake_gateway,
                                                                         tmp_path):
    gateway = fake_gateway("device-identity")
    cli = fake_cli(tmp_path)
    env = {**stop_env(tmp_path), "OPENCLAW_BIN": cli}
    code, lines, err, elapsed = run_stop(stop_args("agent:main:loop", gateway.url, tmp_path),
                                         env)
    assert code == 0, err
    detail = lines[0]["detail"]
    assert detail.startswith("RPC refused (the gateway requires a signed device identity")
    assert "via the CLI: aborted run run-cli via openclaw gateway call chat.abort" in detail
    argv = open(cli + ".argv").read().splitlines()
    assert argv[:5] == ["gateway", "call", "chat.abort", "--json", "--params"]
    assert json.loads(argv[5]) == {"sessionKey": "agent:main:loop"}
    assert TOKEN not in " ".join(argv)
    assert open(cli + ".env").read().strip() == f"{gateway.url}|{TOKEN}"
    assert elapsed < 5


def test_cli_method_reports_the_cli_error(tmp_path):
    cli = tmp_path / "openclaw"
    cli.write_text("#!/bin/sh\necho '{\"ok\":false,\"error\":{\"type\":\"gateway_unreachable\","
                   "\"message\":\"connect ECONNREFUSED\"}}'\nexit 1\n")
    cli.chmod(0o755)
    env = {**stop_env(tmp_path), "OPENCLAW_BIN": str(cli)}
    code, lines, _, _ = run_stop(stop_args("agent:main:loop", "ws://127.0.0.1:9", tmp_path,
                                           method="cli"), env)
    assert code == 1
    assert "gateway_unreachable: connect ECONNREFUSED" in lines[0]["detail"]
    assert lines[1]["type"] == "error"


def test_cli_output_full_of_braces_is_read_in_bounded_time(tmp_path):
    """What the CLI prints before its JSON (log lines echoing what the gateway sent) may be a
    megabyte of ``{``: each was tried as the document's start, parsing the rest each time."""
    cli = tmp_path / "openclaw"
    cli.write_text("#!/bin/sh\nhead -c 1000000 /dev/zero | tr '\\0' '{'\necho\n"
                   "echo '{\"ok\":false,\"error\":{\"type\":\"bad\",\"message\":\"no\"}}'\n"
                   "exit 1\n")
    cli.chmod(0o755)
    started = time.monotonic()
    with pytest.raises(GatewayError, match="bad: no"):
        cli_call("chat.abort", {"sessionKey": "k"}, openclaw_bin=str(cli), env={})
    assert time.monotonic() - started < 5


def test_cli_output_without_end_is_kept_to_its_tail(tmp_path):
    """A CLI that prints 138 MB of log lines before its answer: only the end is held (the
    answer still read), and the error says the output was cut. Measured in a child Python,
    whose peak memory is its own: ``VmHWM`` of its address space, not ``ru_maxrss``, which
    execve keeps from the forking test process (over 100 MB late in the suite)."""
    cli = tmp_path / "openclaw"
    cli.write_text("#!/bin/sh\nyes 'gateway log line {' | head -n 6000000\n"
                   "echo '{\"ok\":false,\"error\":{\"type\":\"bad\",\"message\":\"no\"}}'\n"
                   "exit 1\n")
    cli.chmod(0o755)
    probe = ("import sys\n"
             "from monitor.act.cli_call import cli_call\n"
             "from monitor.act.gateway_errors import GatewayError\n"
             "try:\n"
             "    cli_call('chat.abort', {'sessionKey': 'k'}, openclaw_bin=sys.argv[1], env={})\n"
             "except GatewayError as exc:\n"
             "    print(exc)\n"
             "print(next(line.split()[1] for line in open('/proc/self/status')\n"
             "           if line.startswith('VmHWM:')))\n")
    done = subprocess.run([sys.executable, "-c", probe, str(cli)], capture_output=True,
                          text=True, timeout=60)
    error, peak_kib = done.stdout.splitlines()
    assert int(peak_kib) < 100_000, f"the child peaked at {int(peak_kib) // 1024} MiB"
    assert "bad: no" in error and "its output was cut" in error, done.stderr


def wait_until(condition, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def listening_controller(url: str, token: str):
    from monitor.act.controller import GatewayActionController
    from monitor.discovery import Discovered

    found = Discovered(None, None, {}, None, [], url, token)
    return GatewayActionController(found, None, env={})


def test_listener_subscribes_and_survives_a_gateway_without_those_methods(fake_gateway):
    gateway = fake_gateway("ok")
    controller = listening_controller(gateway.url, TOKEN)
    controller.start_listening()
    try:
        assert wait_until(lambda: ("sessions.subscribe", {}) in gateway.requests)
        assert wait_until(lambda: controller._listener is not None
                          and controller.client._conn is not None)
        time.sleep(0.3)
        assert controller.listen_error is None and gateway.connections == 1
    finally:
        started = time.monotonic()
        controller.close()
        assert time.monotonic() - started < 3


def test_listener_skips_session_rows_keyed_by_no_text(fake_gateway):
    gateway = fake_gateway("rows-keyed-by-objects")
    controller = listening_controller(gateway.url, TOKEN)
    controller.start_listening()
    try:
        assert wait_until(lambda: ("sessions.messages.subscribe", {"key": "agent:main:busy"})
                          in gateway.requests)
        assert controller._listener.is_alive() and controller.listen_error is None
        assert [m for m, _ in gateway.requests].count("sessions.messages.subscribe") == 1
    finally:
        controller.close()


def test_listener_stops_on_a_rejected_token_and_says_why(fake_gateway):
    gateway = fake_gateway("ok")
    controller = listening_controller(gateway.url, "wrong-token")
    controller.start_listening()
    try:
        assert wait_until(lambda: controller.listen_error is not None)
        assert "rejected the token" in controller.listen_error
        assert wait_until(lambda: not controller._listener.is_alive())
        assert gateway.connections == 1
    finally:
        controller.close()


def test_listener_stops_on_a_bad_url_and_says_why():
    controller = listening_controller("ws://127.0.0.1:99999", TOKEN)
    controller.start_listening()
    try:
        assert wait_until(lambda: controller.listen_error is not None)
        assert "bad gateway URL 'ws://127.0.0.1:99999'" in controller.listen_error
        assert wait_until(lambda: not controller._listener.is_alive())
    finally:
        controller.close()


def test_a_gateway_error_message_is_redacted_before_it_is_cut():
    message = "x" * 290 + " ghp_" + "G" * 36 + " and more"
    for error in (GatewayRpcError("chat.abort", {"code": "E", "message": message}),
                  connect_error({"code": "E", "message": message})):
        assert "ghp_G" not in str(error) and "«redact" in str(error)

"""The demo's stand-in for the OpenClaw gateway: a token-checked WebSocket RPC endpoint on
127.0.0.1 and real exec child processes, so ``clawwatch demo`` really stops and kills.

It speaks the subset of protocol 4 that ``monitor.act`` uses, with the frame shapes of
the real gateway (shared/openclaw-lab/README.md): ``connect.challenge`` → ``connect``
(a wrong token is refused with ``AUTH_TOKEN_MISMATCH`` and close code 1008), ``health``,
``sessions.list``, ``sessions.subscribe``, ``sessions.messages.subscribe``, ``chat.abort``,
``sessions.abort`` and ``chat.send "/stop"``. An abort ends the simulated run
(``Simulator.end_session``: no more transcript rows, the row says killed /
``abortedLastRun``), sends the run's ``agent`` lifecycle ``end`` event before the reply,
and kills the session's foreground exec in flight, as OpenClaw does; a background exec
outlives the abort (only a kill ends it).

The exec children are harmless ``sleep`` shells spawned by this process, each a
process-group leader with ``OPENCLAW_SHELL=exec`` in its environment: this process plays
the gateway (``gateway_pid``). Their owners are announced the way OpenClaw announces
them: ``agent`` tool ``update`` events with ``partialResult.details.pid`` (re-sent every
second to the session's subscribers, like a command printing output) and, for
background execs, a ``running`` ``task_runs`` row in ``<state>/state/openclaw.sqlite``.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import os
import secrets
import signal
import threading
import time
import uuid
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from monitor.demo.exec_shells import ExecChild, ExecShells, to_ms
from monitor.demo.sim.simulator import Simulator

PROTOCOL = 4
SERVER_VERSION = "2026.9.6-clawwatch-demo"
TICK_SECONDS = 1.0
START_TIMEOUT = 10.0
METHODS = ("health", "sessions.list", "sessions.subscribe", "sessions.messages.subscribe",
           "chat.abort", "sessions.abort", "chat.send")


@dataclass(eq=False)
class _Client:
    ws: ServerConnection
    authed: bool = False
    watching: set[str] = field(default_factory=set)


class DemoGateway:
    """The endpoint (a daemon thread running an asyncio loop) plus the exec children."""

    def __init__(self, simulator: Simulator, state_dir: str | Path, *,
                 token: str | None = None, host: str = "127.0.0.1") -> None:
        self.simulator = simulator
        self.state_dir = Path(state_dir)
        self.token = token or secrets.token_urlsafe(24)
        self.host = host
        self.port = 0
        self.execs = ExecShells(self.state_dir)
        self._clients: set[_Client] = set()
        self._seq = 0
        self._announced: set[str] = set()       # run ids whose lifecycle start was sent
        self._finished: set[str] = set()        # run ids whose lifecycle end was sent
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopped: asyncio.Event | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve_forever, daemon=True,
                                        name="clawwatch-demo-gateway")
        self._start_error: BaseException | None = None
        self._closed = False

    @property
    def url(self) -> str:
        return f"ws://{self.host}:{self.port}"

    @property
    def pid(self) -> int:
        """The process that plays the gateway (the exec children's parent)."""
        return os.getpid()

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> DemoGateway:
        self._thread.start()
        if not self._ready.wait(START_TIMEOUT) or self._start_error is not None:
            raise RuntimeError(f"demo gateway did not start: {self._start_error}")
        return self

    def _serve_forever(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # reported to start(); the thread just ends
            self._start_error = exc
            self._ready.set()

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopped = asyncio.Event()
        async with serve(self._handle, self.host, 0, max_size=4 * 1024 * 1024) as server:
            self.port = server.sockets[0].getsockname()[1]
            self._ready.set()
            ticker = asyncio.create_task(self._tick_forever())
            await self._stopped.wait()
            ticker.cancel()
            with suppress(asyncio.CancelledError):
                await ticker

    def close(self) -> None:
        """Stop serving and end every child (SIGTERM, then SIGKILL); idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._loop is not None and self._stopped is not None:
            with suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._stopped.set)
        self._thread.join(timeout=5)
        self.execs.end_all()

    # ------------------------------------------------------------------ children

    def spawn_exec(self, session_key: str, command: str, *, background: bool) -> ExecChild:
        """Start ``command`` as an exec shell of ``session_key``'s current run."""
        run_id = self.simulator.session(session_key).run_id
        return self.execs.spawn(session_key, run_id, command, background=background)

    def live_children(self, session_key: str | None = None) -> list[ExecChild]:
        return self.execs.live(session_key)

    # ------------------------------------------------------------------ aborting

    def abort(self, session_key: str, run_id: str | None = None
              ) -> tuple[str | None, list[ExecChild]]:
        """End the session's active run (``run_id`` when given must be it) and kill its
        foreground exec in flight; (the aborted run id or None, the children killed)."""
        try:
            session = self.simulator.session(session_key)
        except KeyError:
            return None, []
        if session.ended or (run_id and run_id != session.run_id):
            return None, []
        if not self.simulator.end_session(session_key, status="killed", aborted=True):
            return None, []
        killed = [child for child in self.live_children(session_key)
                  if not child.background and child.run_id == session.run_id]
        for child in killed:
            child.signal_group(signal.SIGKILL)
        return session.run_id, killed

    # ------------------------------------------------------------------ frames

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def _agent(self, session_key: str, run_id: str, stream: str, data: dict) -> dict:
        session_id = self.simulator.session(session_key).session_id
        seq = self._next_seq()
        return {"type": "event", "event": "agent", "seq": seq, "payload": {
            "runId": run_id, "sessionKey": session_key, "sessionId": session_id,
            "agentId": self.simulator.agent_id, "stream": stream, "data": data, "seq": seq,
            "ts": to_ms(time.time()), "isHeartbeat": False}}

    def _tool_update(self, child: ExecChild) -> dict:
        tail = "waiting...\n"
        return self._agent(child.session_key, child.run_id, "tool", {
            "phase": "update", "name": "exec", "toolCallId": child.tool_call_id,
            "partialResult": {"content": [{"type": "text", "text": tail}], "details": {
                "status": "running", "sessionId": child.process_session, "pid": child.pid,
                "startedAt": to_ms(child.create_time), "cwd": str(self.state_dir),
                "tail": tail}}})

    def _aborted_frames(self, session_key: str, run_id: str, reason: str,
                        killed: list[ExecChild]) -> tuple[list[dict], list[dict]]:
        """(frames for every client, frames for the session's subscribers) of an abort."""
        now = to_ms(time.time())
        started = self.simulator.session(session_key).started_at or time.time()
        everyone = [
            {"type": "event", "event": "chat", "seq": self._next_seq(), "payload": {
                "runId": run_id, "sessionKey": session_key,
                "agentId": self.simulator.agent_id, "state": "aborted", "stopReason": reason}},
            self._agent(session_key, run_id, "lifecycle", {
                "phase": "end", "status": "cancelled", "aborted": True, "stopReason": reason,
                "startedAt": to_ms(started), "endedAt": now})]
        watchers = [self._agent(session_key, run_id, "tool", {
            "phase": "result", "name": "exec", "toolCallId": child.tool_call_id,
            "isError": True, "result": {"content": [{"type": "text", "text": "Aborted"}],
                                        "details": {}}}) for child in killed]
        self._finished.add(run_id)
        return everyone, watchers

    async def _send(self, client: _Client, frame: dict) -> None:
        with suppress(ConnectionClosed):
            await client.ws.send(json.dumps(frame))

    async def _broadcast(self, frames: list[dict], session_key: str | None = None) -> None:
        """To every authenticated client, or only to ``session_key``'s subscribers."""
        for client in list(self._clients):
            if client.authed and (session_key is None or session_key in client.watching):
                for frame in frames:
                    await self._send(client, frame)

    async def _tick_forever(self) -> None:
        """Once a second: collect exited children, announce run starts and ends, and
        re-send each live exec's pid to its session's subscribers."""
        while True:
            await asyncio.sleep(TICK_SECONDS)
            self.execs.reap()
            for session in self.simulator.sessions:
                if session.started and session.run_id not in self._announced:
                    self._announced.add(session.run_id)
                    await self._broadcast([self._agent(session.key, session.run_id,
                                                       "lifecycle", {"phase": "start"})])
                if session.ended and session.run_id not in self._finished:
                    self._finished.add(session.run_id)
                    await self._broadcast([self._agent(
                        session.key, session.run_id, "lifecycle",
                        {"phase": "end", "status": session.status, "aborted": False})])
            for child in self.live_children():
                await self._broadcast([self._tool_update(child)], child.session_key)

    # ------------------------------------------------------------------ requests

    async def _handle(self, ws: ServerConnection) -> None:
        client = _Client(ws)
        await self._send(client, {"type": "event", "event": "connect.challenge", "payload": {
            "nonce": str(uuid.uuid4()), "ts": to_ms(time.time())}})
        try:
            async for raw in ws:
                try:
                    frame = json.loads(raw)
                except (TypeError, ValueError):
                    await ws.close(1008, "invalid frame")
                    return
                if not isinstance(frame, dict) or frame.get("type") != "req":
                    continue
                if not client.authed:
                    if not await self._connect(client, frame):
                        return
                    self._clients.add(client)
                    continue
                await self._request(client, frame)
        except ConnectionClosed:
            pass
        finally:
            self._clients.discard(client)

    async def _reply(self, client: _Client, frame: dict, payload: Any = None,
                     error: dict | None = None) -> None:
        response = {"type": "res", "id": frame.get("id"), "ok": error is None}
        response["error" if error else "payload"] = error or payload
        await self._send(client, response)

    async def _connect(self, client: _Client, frame: dict) -> bool:
        params = frame.get("params") if isinstance(frame.get("params"), dict) else {}
        if frame.get("method") != "connect":
            await self._reply(client, frame, error={
                "code": "INVALID_REQUEST", "message": "first request must be connect"})
            await client.ws.close(1008, "first request must be connect")
            return False
        if not params.get("minProtocol", 0) <= PROTOCOL <= params.get("maxProtocol", 0):
            await self._reply(client, frame, error={
                "code": "INVALID_REQUEST", "message": "protocol mismatch",
                "details": {"code": "PROTOCOL_MISMATCH", "expectedProtocol": PROTOCOL}})
            await client.ws.close(1008, "protocol mismatch")
            return False
        auth = params.get("auth") if isinstance(params.get("auth"), dict) else {}
        given = str(auth.get("token") or "")
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            message = "unauthorized: gateway token mismatch (provide gateway auth token)"
            await self._reply(client, frame, error={
                "code": "INVALID_REQUEST", "message": message,
                "details": {"code": "AUTH_TOKEN_MISMATCH"}})
            await client.ws.close(1008, message)
            return False
        client.authed = True
        scopes = params.get("scopes") or []
        await self._reply(client, frame, {
            "type": "hello-ok", "protocol": PROTOCOL,
            "server": {"version": SERVER_VERSION, "connId": str(uuid.uuid4())},
            "features": {"methods": list(METHODS), "events": ["connect.challenge", "agent",
                                                             "chat", "sessions.changed"]},
            "auth": {"method": "token", "role": "operator", "scopes": scopes}})
        return True

    async def _request(self, client: _Client, frame: dict) -> None:
        method = frame.get("method")
        params = frame.get("params") if isinstance(frame.get("params"), dict) else {}
        if method == "health":
            await self._reply(client, frame, {"ok": True, "ts": to_ms(time.time())})
        elif method == "sessions.list":
            await self._reply(client, frame, {"sessions": self.session_rows()})
        elif method == "sessions.subscribe":
            await self._reply(client, frame, {"subscribed": True})
        elif method == "sessions.messages.subscribe":
            key = str(params.get("key") or "")
            client.watching.add(key)
            await self._reply(client, frame, {"subscribed": True, "key": key})
        elif method == "chat.abort":
            run_id = await self._abort(str(params.get("sessionKey") or ""),
                                       params.get("runId"), "rpc")
            await self._reply(client, frame, {"ok": True, "aborted": run_id is not None,
                                              "runIds": [run_id] if run_id else []})
        elif method == "sessions.abort":
            key = str(params.get("key") or "") or self._key_of(params.get("runId"))
            run_id = await self._abort(key, params.get("runId"), "rpc")
            await self._reply(client, frame, {
                "ok": True, "abortedRunId": run_id,
                "status": "aborted" if run_id else "no-active-run"})
        elif method == "chat.send" and str(params.get("message") or "").strip() == "/stop":
            run_id = await self._abort(str(params.get("sessionKey") or ""), None, "stop")
            await self._reply(client, frame, {"ok": True, "aborted": run_id is not None,
                                              "runIds": [run_id] if run_id else []})
        elif method == "chat.send":
            await self._reply(client, frame, error={
                "code": "INVALID_REQUEST",
                "message": "the clawwatch demo gateway only accepts the /stop message"})
        else:
            await self._reply(client, frame, error={
                "code": "INVALID_REQUEST", "message": f"unknown method: {method}"})

    def _key_of(self, run_id: Any) -> str:
        return next((s.key for s in self.simulator.sessions if run_id and s.run_id == run_id),
                    "")

    async def _abort(self, session_key: str, run_id: Any, reason: str) -> str | None:
        """Abort and send its events (before the reply, as the real gateway does)."""
        aborted, killed = self.abort(session_key, str(run_id) if run_id else None)
        if aborted is None:
            return None
        everyone, watchers = self._aborted_frames(session_key, aborted, reason, killed)
        await self._broadcast(everyone)
        await self._broadcast(watchers, session_key)
        return aborted

    def session_rows(self) -> list[dict]:
        """``sessions.list`` rows (the current generation of each key)."""
        latest = {s.key: s for s in self.simulator.sessions}
        rows = []
        for session in latest.values():
            active = session.started and not session.ended
            rows.append({
                "key": session.key, "sessionId": session.session_id, "kind": "direct",
                "status": session.status, "hasActiveRun": active,
                "activeRunIds": [session.run_id] if active else [],
                "lastRunId": session.run_id, "abortedLastRun": session.aborted,
                "inputTokens": session.input_tokens, "outputTokens": session.output_tokens,
                "totalTokens": session.total_tokens,
                "updatedAt": to_ms(session.ended_at or time.time())})
        return rows


"""A wall-clock limit on one HTTP exchange made with httpx.

httpx's ``timeout`` bounds each connect, write and read, not the exchange: a receiver that
sends its answer a byte at a time, each byte within the timeout, holds the caller for as long
as it likes. A ``Deadline`` learns the sockets the exchange connects from httpcore's ``trace``
request extension and shuts them down when its time is up (or when ``cut()`` is called), which
ends a read blocked on them at once. It only sees new connections: the client must not reuse a
kept-alive one (``httpx.Limits(max_keepalive_connections=0)``).
"""

from __future__ import annotations

import socket
import threading

#: httpcore's trace events that return a new stream: a TCP connection made ("connection.…",
#: "socks.…" through a SOCKS proxy), and TLS started on it. TLS takes the TCP socket over
#: (its object is detached, no longer shutting anything down), so the TLS socket is kept too.
_NEW_STREAM = (".connect_tcp.complete", ".start_tls.complete")


class Deadline:
    """``with Deadline(seconds) as deadline:`` make the request with
    ``extensions={"trace": deadline.trace}``; ``expired`` tells afterwards whether it was cut."""

    def __init__(self, seconds: float) -> None:
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._expired = False
        self._timer = threading.Timer(max(0.0, seconds), self.cut)
        self._timer.daemon = True

    def __enter__(self) -> Deadline:
        self._timer.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._timer.cancel()

    def trace(self, event: str, info: dict) -> None:
        """httpcore's ``trace`` callback: keeps the socket of each connection opened and of
        each TLS session started (shut at once when the time is already up)."""
        if not event.endswith(_NEW_STREAM):
            return
        stream = info.get("return_value")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if not isinstance(sock, socket.socket):
            return
        with self._lock:
            self._sockets.append(sock)
            if self._expired:
                _shut(sock)

    def cut(self) -> None:
        """End the exchange now: its sockets are shut down, and any it opens later."""
        with self._lock:
            self._expired = True
            for sock in self._sockets:
                _shut(sock)

    @property
    def expired(self) -> bool:
        with self._lock:
            return self._expired


def _shut(sock: socket.socket) -> None:
    """Shut ``sock`` down both ways (nothing when it is closed already: a closed socket object
    has no descriptor, so this never reaches a file that reused its number)."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass

"""The HTTP server behind ``--metrics``: ``prometheus_client``'s WSGI app on a server that no
client can hold.

``prometheus_client.start_http_server`` gives every connection a thread and waits on it for
ever: a client that connects and sends half a request (slowloris) keeps a thread and a
descriptor until it goes away, so a few hundred of them (anyone on the host can connect to
loopback) exhaust the descriptors ``watch`` needs to open transcripts and scan processes. Here
at most ``MAX_CONNECTIONS`` are served at once (one more is closed as soon as it is accepted),
and a connection still open ``CONNECTION_SECONDS`` after it was accepted is shut down, whatever
it is doing (sending slowly, or not reading the response). A client's failure is its own:
nothing is written to stderr for it.
"""

from __future__ import annotations

import io
import math
import socket
import threading
import time
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

#: Connections served at once; Prometheus scrapes one at a time.
MAX_CONNECTIONS = 16
#: How long a connection may stay open (Prometheus's default scrape timeout is 10 s).
CONNECTION_SECONDS = 10.0
#: How often the server looks for connections past their time (its accept loop's poll).
CHECK_SECONDS = 0.25


class _QuietHandler(WSGIRequestHandler):
    """One request per connection; no request log, and no traceback for a client that
    went away or was cut off."""

    def log_message(self, format, *args):
        pass

    def get_stderr(self):
        return io.StringIO()


class BoundedWSGIServer(WSGIServer):
    """A thread per connection, for at most ``max_connections`` connections, each shut
    down ``connection_seconds`` after it was accepted."""

    daemon_threads = True
    request_queue_size = 64     # a burst of connections waits to be accepted, not dropped
    max_connections = MAX_CONNECTIONS
    connection_seconds = CONNECTION_SECONDS

    def __init__(self, *args, **kwargs) -> None:
        self._lock = threading.Lock()
        #: socket -> when it is to be shut down (inf once it was)
        self._open: dict[socket.socket, float] = {}
        super().__init__(*args, **kwargs)   # closes the socket when it cannot bind

    def process_request(self, request, client_address) -> None:
        with self._lock:
            full = len(self._open) >= self.max_connections
            if not full:
                self._open[request] = time.monotonic() + self.connection_seconds
        if full:
            self.shutdown_request(request)
            return
        thread = threading.Thread(target=self._serve, args=(request, client_address),
                                  daemon=True)
        thread.start()

    def _serve(self, request, client_address) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:
            pass            # the client's failure (a reset, a cut connection) is its own
        finally:
            self.shutdown_request(request)

    def shutdown_request(self, request) -> None:
        # Under the lock: ``service_actions`` never shuts down a descriptor number that a
        # close here has freed for another file.
        with self._lock:
            self._open.pop(request, None)
            super().shutdown_request(request)

    def service_actions(self) -> None:
        """Shut down the connections past their time: their threads then end."""
        now = time.monotonic()
        with self._lock:
            for request, deadline in self._open.items():
                if deadline <= now:
                    self._open[request] = math.inf
                    _shut(request)

    def handle_error(self, request, client_address) -> None:
        pass

    def server_close(self) -> None:
        super().server_close()
        with self._lock:
            for request in self._open:
                _shut(request)

    @property
    def connections(self) -> int:
        """Connections being served now."""
        with self._lock:
            return len(self._open)


def _shut(request: socket.socket) -> None:
    try:
        request.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def serve(app, host: str, port: int, *, max_connections: int = MAX_CONNECTIONS,
          connection_seconds: float = CONNECTION_SECONDS
          ) -> tuple[BoundedWSGIServer, threading.Thread]:
    """Serve the WSGI ``app`` on ``host:port`` (IPv4 or IPv6) from a daemon thread; raises
    ``OSError`` when it cannot listen there."""
    family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                flags=socket.AI_PASSIVE)[0][0]
    server_class = type("BoundedWSGIServer", (BoundedWSGIServer,), {
        "address_family": family, "max_connections": max_connections,
        "connection_seconds": connection_seconds})
    httpd = make_server(host, port, app, server_class, handler_class=_QuietHandler)
    thread = threading.Thread(target=httpd.serve_forever, args=(CHECK_SECONDS,),
                              name="clawwatch-metrics", daemon=True)
    thread.start()
    return httpd, thread

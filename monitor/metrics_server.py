"""The ``--metrics HOST:PORT`` endpoint: the listen address, the ``prometheus_client``
collector that writes a ``MetricsHub``'s snapshot as Prometheus/OpenMetrics series, and the
HTTP server that serves it at ``/metrics``, one page at a time (on loopback, only to a
request whose ``Host`` names loopback).

``prometheus_client`` is imported only when an exporter is started, so a monitor without
``--metrics`` (and the config loader, which checks ``metrics.listen``) never loads it.
"""

from __future__ import annotations

import threading

from monitor import __version__
from monitor.compiled import build_label
from monitor.loopback import is_loopback_name
from monitor.metrics import DEFAULT_LOOKBACK_SECONDS, DEFAULT_MAX_SESSIONS, MetricsHub
from monitor.metrics_http import serve
from monitor.snapshot import STATES

DEFAULT_LISTEN = "127.0.0.1:9464"


class MetricsListenError(ValueError):
    """A ``--metrics`` / ``metrics.listen`` value that cannot be listened on."""


def parse_listen(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) -> ``(host, port)``; a bare ``PORT`` means
    loopback. An empty host is refused: listening on every interface must be spelled
    ``0.0.0.0:PORT`` (or ``[::]:PORT``)."""
    text = (text or "").strip()
    if text.isdigit():
        host, port_text = "127.0.0.1", text
    elif text.startswith("["):
        host, sep, port_text = text[1:].partition("]:")
        if not sep:
            raise MetricsListenError(f"{text!r}: expected [IPV6]:PORT")
    else:
        host, sep, port_text = text.rpartition(":")
        if not sep:
            raise MetricsListenError(f"{text!r}: expected HOST:PORT, e.g. {DEFAULT_LISTEN}")
        if ":" in host:
            raise MetricsListenError(f"{text!r}: write an IPv6 address as [ADDR]:PORT")
    if not host:
        raise MetricsListenError(f"{text!r}: name the host (127.0.0.1:PORT for loopback, "
                                 "0.0.0.0:PORT for every interface)")
    if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise MetricsListenError(f"{text!r}: the port must be a number from 0 to 65535")
    return host, int(port_text)


def check_listen(value: str | None) -> str | None:
    """For the config loader: an error message, or None."""
    if value is None:
        return None
    try:
        parse_listen(value)
    except MetricsListenError as exc:
        return str(exc)
    return None


class ClawwatchCollector:
    """A ``prometheus_client`` collector reading a fresh ``MetricsSnapshot`` per scrape."""

    def __init__(self, hub: MetricsHub) -> None:
        self.hub = hub

    def describe(self):
        return []

    def collect(self):
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        def counters(name: str, documentation: str, labels: list[str], values: dict):
            """A counter family with a sample per item of ``values``, in label order (a tuple
            key holds several label values)."""
            family = CounterMetricFamily(name, documentation, labels=labels)
            for key, value in sorted(values.items()):
                family.add_metric(list(key) if isinstance(key, tuple) else [key], value)
            return family

        snap = self.hub.snapshot()
        build = GaugeMetricFamily("clawwatch_build_info",
                                  "clawwatch version and build: compiled or pure (always 1)",
                                  labels=["version", "build"])
        build.add_metric([__version__, build_label()], 1)
        yield build

        yield counters("clawwatch_findings", "Findings reported, by detector, level and agent",
                       ["detector", "level", "agent"], snap.findings)

        yield counters("clawwatch_actions", "Stops and kills performed (ok: whether they worked)",
                       ["action", "ok"], snap.actions)
        yield counters("clawwatch_dry_run_actions",
                       "Actions the policy would have taken (actions.mode dry-run)", ["action"],
                       snap.dry_run_actions)

        sessions = GaugeMetricFamily("clawwatch_sessions", "Known sessions by state",
                                     labels=["state"])
        for name in STATES:
            sessions.add_metric([name], snap.states.get(name, 0))
        yield sessions
        yield GaugeMetricFamily(
            "clawwatch_active_sessions",
            "Sessions with an event within metrics.session_lookback_seconds, not ended",
            value=snap.active)
        yield GaugeMetricFamily(
            "clawwatch_sessions_aggregated",
            "Active sessions beyond metrics.max_sessions, summed into session_key=\"_other\"",
            value=snap.other_count)

        per_session = [*snap.sessions, *([snap.other] if snap.other else [])]
        def session_gauge(name: str, documentation: str):
            return GaugeMetricFamily(name, documentation, labels=["session_key", "agent"])

        level = session_gauge("clawwatch_session_level", "Worst current finding of an active "
                              "session: 0 ok, 1 warning, 2 critical")
        tokens = session_gauge("clawwatch_session_tokens",
                               "Tokens an active session used (input + output + cache)")
        burn = session_gauge("clawwatch_session_burn_tokens_per_minute",
                             "An active session's token burn over the burn_rate window")
        budget = session_gauge("clawwatch_session_token_budget",
                               "An active session's token budget (budgets.session_tokens)")
        calls = session_gauge("clawwatch_session_tool_calls", "Tool calls an active session made")
        for sample in per_session:
            labels = [sample.session_key, sample.agent]
            level.add_metric(labels, sample.level)
            tokens.add_metric(labels, sample.tokens)
            burn.add_metric(labels, round(sample.burn_per_minute, 3))
            calls.add_metric(labels, sample.tool_calls)
            if sample.budget:
                budget.add_metric(labels, sample.budget)
        yield from (level, tokens, burn, budget, calls)

        yield counters("clawwatch_tokens", "Tokens used by every known session, by agent",
                       ["agent"], snap.tokens)
        yield counters("clawwatch_tool_calls", "Tool calls made in every known session, by agent",
                       ["agent"], snap.tool_calls)

        count = GaugeMetricFamily("clawwatch_sources", "Sources read, by kind", labels=["kind"])
        events = CounterMetricFamily("clawwatch_source_events", "Events read, by source kind",
                                     labels=["kind"])
        errors = CounterMetricFamily("clawwatch_source_errors",
                                     "Records or files that could not be read, by source kind",
                                     labels=["kind"])
        backlog = GaugeMetricFamily("clawwatch_source_backlog_bytes",
                                    "Bytes known readable but not read yet, by source kind",
                                    labels=["kind"])
        last = GaugeMetricFamily("clawwatch_source_last_event_timestamp_seconds",
                                 "When clawwatch last read an event from a source of this "
                                 "kind (Unix time)", labels=["kind"])
        for source in snap.sources:
            count.add_metric([source.kind], source.sources)
            events.add_metric([source.kind], source.events)
            errors.add_metric([source.kind], source.errors)
            backlog.add_metric([source.kind], source.backlog_bytes)
            if source.last_event is not None:
                last.add_metric([source.kind], source.last_event)
        yield from (count, events, errors, backlog, last)

        yield CounterMetricFamily("clawwatch_polls", "Steps of the live loop", value=snap.polls)
        poll = GaugeMetricFamily("clawwatch_last_poll_timestamp_seconds",
                                 "When the live loop last finished a step (Unix time)")
        if snap.last_poll is not None:
            poll.add_metric([], snap.last_poll)
        yield poll
        yield GaugeMetricFamily("clawwatch_scrape_build_seconds",
                                "Time taken to read the state for this scrape",
                                value=snap.build_seconds)


def one_at_a_time(app):
    """``app`` answering one request at a time: a page is written under the GIL, so many
    clients scraping at once took the CPU, and the snapshot lock, from the live loop."""
    lock = threading.Lock()

    def serialized(environ, start_response):
        with lock:
            return app(environ, start_response)
    return serialized


REFUSED_HOST = (b"clawwatch: this endpoint listens on loopback and answers only a request whose "
                b"Host header is localhost or a loopback address (a web page could otherwise "
                b"read it by pointing its own name at 127.0.0.1). A reverse proxy must send "
                b"Host: 127.0.0.1:PORT (nginx does by default; Caddy: header_up Host "
                b"{upstream_hostport}).\n")


def loopback_hosts_only(app):
    """``app`` refusing (403) a request whose ``Host`` header names anything but a loopback
    address or ``localhost``. For an endpoint on loopback: a web page the user opens can point
    its own name at 127.0.0.1 (DNS rebinding) and then read ``/metrics``, session keys and
    agents, as its own origin; the browser still sends the page's name as ``Host``."""

    def guarded(environ, start_response):
        if not is_loopback_host(environ.get("HTTP_HOST")):
            start_response("403 Forbidden", [("Content-Type", "text/plain; charset=utf-8")])
            return [REFUSED_HOST]
        return app(environ, start_response)
    return guarded


def is_loopback_host(header: str | None) -> bool:
    """Whether a ``Host`` header (``NAME[:PORT]``, ``[IPV6]:PORT``) names ``localhost`` or a
    loopback address; True without one (no browser sends a request without it)."""
    if header is None:
        return True
    text = header.strip()
    if text.startswith("["):
        name = text[1:].partition("]")[0]
    else:
        name = text.rpartition(":")[0] if text.count(":") == 1 else text
    return is_loopback_name(name)


def listens_on_loopback(host: str) -> bool:
    return is_loopback_host(f"[{host}]" if ":" in host else host)


class MetricsServer:
    """The HTTP endpoint (``/metrics``) of one hub (``metrics_http``: no client can hold
    it); ``close()`` stops it."""

    def __init__(self, hub: MetricsHub, listen: str) -> None:
        from prometheus_client import CollectorRegistry, make_wsgi_app
        from prometheus_client.gc_collector import GCCollector
        from prometheus_client.platform_collector import PlatformCollector
        from prometheus_client.process_collector import ProcessCollector

        host, port = parse_listen(listen)
        self.hub = hub
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        self.registry.register(ClawwatchCollector(hub))
        try:
            app = one_at_a_time(make_wsgi_app(self.registry))
            if listens_on_loopback(host):
                app = loopback_hosts_only(app)
            self.httpd, self.thread = serve(app, host, port)
        except OSError as exc:
            raise MetricsListenError(f"{listen}: cannot listen: {exc.strerror or exc}") \
                from None
        self.host, self.port = host, self.httpd.server_address[1]

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


def start_metrics(monitor, listen: str, *, max_sessions: int = DEFAULT_MAX_SESSIONS,
                  lookback_seconds: float = DEFAULT_LOOKBACK_SECONDS
                  ) -> tuple[MetricsHub, MetricsServer]:
    """A hub on ``monitor`` and its endpoint on ``listen`` (raises ``MetricsListenError``)."""
    hub = MetricsHub(monitor, max_sessions=max_sessions, lookback_seconds=lookback_seconds)
    return hub, MetricsServer(hub, listen)

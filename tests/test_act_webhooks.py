"""Webhook delivery against a real local HTTP server: payloads, templates, retries, no blocking."""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from msgspec.structs import replace

from monitor.act.webhooks import WebhookNotifier, render
from monitor.config.sections import WebhookConfig
from monitor.records import ActionRecord, FindingRecord, as_json

pytestmark = pytest.mark.timeout(60)

CRITICAL = FindingRecord(ts="2026-01-01T00:00:00.000Z", key="agent:main:loop",
                         session_id="s-1", detector="generic_repeat", level="critical",
                         count=20, tool="exec", at_call=21,
                         message='CRITICAL: Called exec "ls" 20 times')
WARNING = replace(CRITICAL, level="warning", count=10)
ACTION = ActionRecord(ts="2026-01-01T00:00:01.000Z", key="agent:main:loop", action="abort",
                      trigger="generic_repeat", ok=True,
                      detail="aborted run r-1 via chat.abort in 40 ms", pids=[],
                      session_id="s-1", level="critical")


class Receiver:
    """A local HTTP server; ``statuses`` are answered in order (then 200)."""

    def __init__(self, statuses: list[int] | None = None, stall: threading.Event | None = None):
        self.statuses = list(statuses or [])
        self.requests: list[tuple[str, dict, bytes]] = []
        self.stall = stall
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                receiver.requests.append((self.path, dict(self.headers), body))
                if receiver.stall is not None:
                    receiver.stall.wait(10)
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook/SECRET-PART"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                         daemon=True).start()

    def close(self) -> None:
        if self.stall is not None:
            self.stall.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    made = []

    def make(*args, **kwargs) -> Receiver:
        made.append(Receiver(*args, **kwargs))
        return made[-1]

    yield make
    for item in made:
        item.close()


def notifier_for(*webhooks: WebhookConfig, **kwargs) -> WebhookNotifier:
    return WebhookNotifier(webhooks, backoff=0.01, **kwargs)


def test_generic_json_payload_is_the_record(receiver):
    server = receiver()
    notifier = notifier_for(WebhookConfig(url=server.url))
    assert notifier.notify(CRITICAL)
    assert notifier.flush(10)
    notifier.close()
    ((path, headers, body),) = server.requests
    assert path == "/hook/SECRET-PART"
    assert headers["Content-Type"] == "application/json"
    assert json.loads(body) == {"source": "clawwatch", **as_json(CRITICAL)}
    assert notifier.delivered == 1 and notifier.failed == 0


def test_server_errors_are_retried_with_backoff_until_delivered(receiver):
    server = receiver([500, 503])
    notifier = notifier_for(WebhookConfig(url=server.url, retries=3))
    notifier.notify(ACTION)
    assert notifier.flush(10)
    notifier.close()
    bodies = [body for _, _, body in server.requests]
    assert len(bodies) == 3 and len(set(bodies)) == 1
    assert json.loads(bodies[0])["action"] == "abort"
    assert (notifier.delivered, notifier.failed) == (1, 0)


def test_delivery_gives_up_after_the_retries_and_reports_without_the_secret(receiver):
    server = receiver([500] * 10)
    notifier = notifier_for(WebhookConfig(url=server.url, retries=2))
    notifier.notify(CRITICAL)
    assert notifier.flush(10)
    notifier.close()
    assert len(server.requests) == 3
    assert notifier.failed == 1
    (error,) = notifier.drain_errors()
    assert "HTTP 500" in error and "SECRET" not in error


def test_a_client_error_is_not_retried_but_429_is(receiver):
    rejecting = receiver([400])
    throttling = receiver([429])
    notifier = notifier_for(WebhookConfig(url=rejecting.url, retries=3),
                            WebhookConfig(url=throttling.url, retries=3))
    notifier.notify(CRITICAL)
    assert notifier.flush(10)
    notifier.close()
    assert len(rejecting.requests) == 1
    assert len(throttling.requests) == 2


def test_refused_connections_are_retried_then_reported():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    notifier = notifier_for(WebhookConfig(url=f"http://127.0.0.1:{port}/x", retries=1,
                                          timeout_seconds=1.0))
    notifier.notify(CRITICAL)
    assert notifier.flush(10)
    notifier.close()
    (error,) = notifier.drain_errors()
    assert "ConnectError" in error and notifier.failed == 1


def test_min_level_filters_findings_but_never_actions(receiver):
    server = receiver()
    notifier = notifier_for(WebhookConfig(url=server.url, min_level="critical"))
    assert not notifier.notify(WARNING)
    assert notifier.notify(ACTION)
    assert notifier.flush(10)
    notifier.close()
    assert [json.loads(body)["type"] for _, _, body in server.requests] == ["action"]


def test_ntfy_and_slack_templates(receiver):
    ntfy, slack = receiver(), receiver()
    notifier = notifier_for(WebhookConfig(url=ntfy.url, template="ntfy"),
                            WebhookConfig(url=slack.url, template="slack"))
    notifier.notify(CRITICAL)
    assert notifier.flush(10)
    notifier.close()
    (_, headers, body), = ntfy.requests
    assert body.decode() == CRITICAL.message
    assert headers["Title"] == "clawwatch critical: generic_repeat on agent:main:loop"
    assert headers["Priority"] == "urgent" and headers["Content-Type"].startswith("text/plain")
    (_, headers, body), = slack.requests
    assert json.loads(body) == {"text": "*clawwatch critical: generic_repeat on "
                                        "agent:main:loop*\n" + CRITICAL.message}


def test_the_slack_template_cannot_mention_link_or_reverse_from_data():
    """Slack reads ``<!channel>`` as a mention of everyone and ``<URL|label>`` as a link
    showing only its label; a session key or finding text carrying them pinged the channel
    and offered a disguised link, and a right-to-left override reached the channel raw."""
    record = replace(CRITICAL, key="agent:main:<!channel>",
                     message="Called <https://evil.example/login|Re-authenticate> & "
                             "\u202egnp.exe <!everyone>\nsecond line")
    text = json.loads(render("slack", record)[0])["text"]
    assert text == ("*clawwatch critical: generic_repeat on agent:main:&lt;!channel&gt;*\n"
                    "Called &lt;https://evil.example/login|Re-authenticate&gt; &amp; "
                    "&lt;U+202E&gt;gnp.exe &lt;!everyone&gt;\nsecond line")


def test_custom_templates_substitute_fields_and_escape_json():
    body, headers = render('{"title": "{detector} x{count}", "msg": "{message}"}', CRITICAL)
    assert headers["Content-Type"] == "application/json"
    assert json.loads(body) == {"title": "generic_repeat x20", "msg": CRITICAL.message}
    body, headers = render("{level}: {key} {action}", ACTION)
    assert body.decode() == "action: agent:main:loop abort"
    assert headers["Content-Type"].startswith("text/plain")


def test_notify_never_blocks_and_drops_when_the_queue_is_full(receiver):
    stall = threading.Event()
    server = receiver(stall=stall)
    notifier = notifier_for(WebhookConfig(url=server.url, timeout_seconds=5.0), queue_size=2)
    started = time.monotonic()
    results = [notifier.notify(CRITICAL) for _ in range(6)]
    assert time.monotonic() - started < 0.5
    assert results.count(False) >= 3 and notifier.dropped == results.count(False)
    stall.set()
    assert notifier.flush(15)
    notifier.close()
    assert len(server.requests) == results.count(True)


def test_close_is_bounded_with_a_stalled_receiver(receiver):
    server = receiver(stall=threading.Event())
    notifier = notifier_for(WebhookConfig(url=server.url, timeout_seconds=5.0, retries=5))
    notifier.notify(CRITICAL)
    started = time.monotonic()
    notifier.close(timeout=0.5)
    assert time.monotonic() - started < 3.0


# ------------------------------------------------ issue 10 item 5: one bad record, not all


def test_a_non_ascii_session_key_is_delivered_and_the_next_one_too(receiver):
    """ntfy puts the key in the ``Title`` header: ``agent:main:café`` used to raise
    UnicodeEncodeError in the worker thread, which died (no delivery ever after)."""
    server = receiver()
    notifier = notifier_for(WebhookConfig(url=server.url, template="ntfy"))
    notifier.notify(replace(CRITICAL, key="agent:main:café"))
    notifier.notify(replace(CRITICAL, key="agent:main:plain"))
    assert notifier.flush(10)
    notifier.close()
    assert (notifier.delivered, notifier.failed) == (2, 0)
    titles = [headers["Title"] for _, headers, _ in server.requests]
    assert titles[1] == "clawwatch critical: generic_repeat on agent:main:plain"
    from email.header import decode_header, make_header
    assert str(make_header(decode_header(titles[0]))) == \
        "clawwatch critical: generic_repeat on agent:main:café"
    assert titles[0].isascii()


def test_a_lone_surrogate_in_a_finding_is_sent_escaped_by_every_template():
    """JSON can carry a lone surrogate (``"\\udc80"``) into a session key or a message;
    UTF-8 cannot encode it, and the ntfy body, its Title and plain templates used to raise."""
    record = replace(CRITICAL, key="agent:main:odd\udc80", message="stuck \udc80 here")
    for template in (None, "ntfy", "slack", "{level}: {message}", '{"m": "{message}"}'):
        body, headers = render(template, record)
        assert b"udc80" in body.lower().replace(b"u+", b"u"), template
        assert all(value.isascii() for value in headers.values())
    assert render("ntfy", record)[0] == b"stuck <U+DC80> here"


#: What no text template, ntfy body or title may carry raw: C0 and C1 controls, line and
#: paragraph separators, bidi overrides.
RAW_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def test_text_templates_and_ntfy_show_control_and_bidi_characters_visibly():
    """A session key or message is data: in a text body or a notification title, an escape
    sequence, a C1 control or a right-to-left override reaches a chat room, a terminal or a
    phone as it is (``gnp.exe`` shown as ``exe.png``); JSON bodies escape them already."""
    from email.header import decode_header, make_header

    record = replace(CRITICAL,
                     key="agent:main:esc\x1b[2J\x1b]0;pwned\x07 csi\x9b31m rtl\u202egnp.exe",
                     message="line\u2028break \x00 nul \u202egnp.exe")
    body, _ = render("ALERT {key}: {message}", record)
    assert not RAW_CONTROL.search(body.decode()) and "<U+202E>gnp.exe" in body.decode()
    body, headers = render("ntfy", record)
    assert not RAW_CONTROL.search(body.decode())
    title = str(make_header(decode_header(headers["Title"])))
    assert not RAW_CONTROL.search(title) and "pwned" in title


def test_an_encoded_word_written_in_the_data_is_not_decoded_by_the_receiver():
    """An ASCII key was sent as it was, so ``=?utf-8?b?4oCuZ25wLmV4ZQ==?=`` in a session key
    reached ntfy's title as an encoded-word, which it decodes: a right-to-left override
    (or an escape sequence) the title's ``printable`` never saw."""
    import base64
    from email.header import decode_header, make_header

    word = f"=?utf-8?b?{base64.b64encode(chr(0x202E).encode() + b'gnp.exe').decode()}?="
    _, headers = render("ntfy", replace(CRITICAL, key=f"agent:main:x {word}"))
    assert headers["Title"].isascii()
    title = str(make_header(decode_header(headers["Title"])))
    assert title == f"clawwatch critical: generic_repeat on agent:main:x {word}"


def test_any_delivery_failure_is_reported_audited_and_the_worker_carries_on(receiver,
                                                                           tmp_path):
    from monitor.act.audit import AuditLog

    server = receiver()
    audit = AuditLog(str(tmp_path / "audit.jsonl"))
    notifier = notifier_for(WebhookConfig(url=server.url), audit=audit)
    notifier.notify(replace(CRITICAL, key="agent:main:broken", message=object()))
    notifier.notify(replace(CRITICAL, key="agent:main:fine"))
    assert notifier.flush(10)
    notifier.close()
    assert (notifier.delivered, notifier.failed) == (1, 1)
    assert [json.loads(body)["key"] for _, _, body in server.requests] == ["agent:main:fine"]
    assert notifier.last_error and "webhook http://127.0.0.1" in notifier.last_error
    [error] = notifier.drain_errors()
    assert error == notifier.last_error
    [entry] = audit.read()
    assert entry["event"] == "webhook-failed" and entry["key"] == "agent:main:broken"
    assert entry["ok"] is False and entry["error"]


def test_webhook_bodies_are_redacted(receiver):
    server = receiver()
    notifier = notifier_for(WebhookConfig(url=server.url, template="slack"),
                            WebhookConfig(url=server.url))
    notifier.notify(replace(CRITICAL, message="curl -u admin:Hunter2Hunter2 -H "
                                              "'Authorization: Bearer abcdefghijklmnop1234'"))
    assert notifier.flush(10)
    notifier.close()
    bodies = b"".join(body for _, _, body in server.requests).decode()
    assert len(server.requests) == 2
    assert "Hunter2Hunter2" not in bodies and "abcdefghijklmnop1234" not in bodies


# ------------------------------------------------ a receiver that answers hostilely


class HostileReceiver:
    """A raw TCP receiver: reads a request, then ``answer(connection)`` writes whatever it
    likes until the client goes away. ``requests`` is set when a request arrived."""

    def __init__(self, answer, tls=None) -> None:
        self.answer = answer
        self.tls = tls
        self.requests = threading.Event()
        self.sent = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        scheme = "http" if tls is None else "https"
        self.url = f"{scheme}://127.0.0.1:{self.listener.getsockname()[1]}/hook"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        with connection:
            try:
                if self.tls is not None:
                    connection = self.tls.wrap_socket(connection, server_side=True)
                connection.recv(65536)
                self.requests.set()
                self.answer(self, connection)
            except OSError:
                pass

    def send(self, connection: socket.socket, data: bytes) -> None:
        connection.sendall(data)
        self.sent += len(data)

    def close(self) -> None:
        self.listener.close()


def endless_body(receiver: HostileReceiver, connection: socket.socket) -> None:
    """200, then a chunked body that never ends (64 KiB every 10 ms)."""
    receiver.send(connection, b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
    chunk = b"10000\r\n" + b"x" * 0x10000 + b"\r\n"
    while True:
        receiver.send(connection, chunk)
        time.sleep(0.01)


def test_an_endless_answer_body_is_not_read():
    """The worker read the answer's whole body: a receiver answering 200 and then bytes for
    ever held it for ever, the memory growing (5 GB in 8 s at full speed), and no alert was
    delivered after it. The status is all clawwatch needs."""
    server = HostileReceiver(endless_body)
    try:
        notifier = notifier_for(WebhookConfig(url=server.url, timeout_seconds=2.0, retries=0))
        notifier.notify(CRITICAL)
        assert notifier.flush(5)
        notifier.close()
        assert (notifier.delivered, notifier.failed) == (1, 0)
        assert server.sent < 8 * 2**20
    finally:
        server.close()


def headers_byte_by_byte(receiver: HostileReceiver, connection: socket.socket) -> None:
    """A status line, then a header a byte every 0.2 s for ever: each read is quick."""
    receiver.send(connection, b"HTTP/1.1 200 OK\r\n")
    while True:
        receiver.send(connection, b"X")
        time.sleep(0.2)


def test_a_receiver_answering_a_byte_at_a_time_is_cut_at_the_timeout():
    """httpx's timeout bounds each read, not the answer: a receiver sending a byte within
    each timeout held the worker for ever, and every later alert waited behind it."""
    server = HostileReceiver(headers_byte_by_byte)
    try:
        notifier = notifier_for(WebhookConfig(url=server.url, timeout_seconds=1.0, retries=0))
        notifier.notify(CRITICAL)
        started = time.monotonic()
        assert notifier.flush(6)
        assert time.monotonic() - started < 4
        notifier.close()
        assert (notifier.delivered, notifier.failed) == (0, 1)
        assert "no whole answer within 1 s" in notifier.last_error
    finally:
        server.close()


def test_an_https_receiver_answering_a_byte_at_a_time_is_cut_too(tmp_path):
    """TLS takes the TCP socket over: shutting the detached TCP socket object down did
    nothing, so the time limit held for http:// webhooks only, not for Slack's or ntfy's."""
    import shutil
    import ssl
    import subprocess

    import httpx

    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True, timeout=60)
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(cert, key)
    server = HostileReceiver(headers_byte_by_byte, tls=tls)
    try:
        trusting = httpx.HTTPTransport(verify=ssl.create_default_context(cafile=str(cert)))
        notifier = notifier_for(WebhookConfig(url=server.url, timeout_seconds=1.0, retries=0),
                                transport=trusting)
        notifier.notify(CRITICAL)
        started = time.monotonic()
        assert notifier.flush(6)
        assert time.monotonic() - started < 4
        notifier.close()
        assert (notifier.delivered, notifier.failed) == (0, 1)
        assert "no whole answer within 1 s" in notifier.last_error
    finally:
        server.close()


def test_close_cuts_a_post_in_flight_so_the_worker_ends():
    """A post to a receiver that never finishes answering was left to the daemon worker,
    which went on holding its connection until the receiver let go."""
    server = HostileReceiver(headers_byte_by_byte)
    try:
        notifier = notifier_for(WebhookConfig(url=server.url, timeout_seconds=60.0, retries=0))
        notifier.notify(CRITICAL)
        assert server.requests.wait(5)
        started = time.monotonic()
        notifier.close(timeout=0.25)
        notifier._lanes[0].thread.join(1.0)
        assert time.monotonic() - started < 2
        assert not notifier.alive
    finally:
        server.close()


def test_a_redirect_is_not_followed_and_is_reported(receiver):
    """A receiver answering 307 sent the alert on to whatever host it named (from https to
    plain http too), and a 303 turned the POST into a bodiless GET whose 200 counted as
    delivered: the alert was lost with nothing said."""
    elsewhere = receiver()

    def redirect(server: HostileReceiver, connection: socket.socket) -> None:
        server.send(connection, f"HTTP/1.1 307 Temporary Redirect\r\nLocation: "
                                f"{elsewhere.url}\r\nContent-Length: 0\r\n\r\n".encode())

    server = HostileReceiver(redirect)
    try:
        notifier = notifier_for(WebhookConfig(url=server.url, retries=2))
        notifier.notify(CRITICAL)
        assert notifier.flush(10)
        notifier.close()
        assert (notifier.delivered, notifier.failed) == (0, 1)
        assert elsewhere.requests == []
        assert "HTTP 307 (a redirect, which clawwatch does not follow)" in notifier.last_error
    finally:
        server.close()


def test_config_check_does_not_show_a_webhook_password_in_a_misplaced_url(tmp_path):
    """A webhook URL written as a list (``url: [https://user:pass@host/…]``) is a type error,
    and the error showed the value, password and all, on stderr of ``config check``, of
    ``watch`` and of the dashboard."""
    import os
    import subprocess
    import sys

    config = tmp_path / "config.yaml"
    config.write_text("alerts:\n  webhooks:\n    - url: "
                      "['https://alerts:Hunter2Hunter2xyz@hooks.example.com/hook']\n")
    result = subprocess.run([sys.executable, "-m", "monitor", "config", "check", str(config)],
                            capture_output=True, text=True, timeout=60,
                            env={**os.environ, "CLAWWATCH_LOG_DIRS": "/nonexistent-cw"})
    assert result.returncode == 2
    assert "alerts.webhooks[0].url: must be a string" in result.stderr + result.stdout
    assert "Hunter2Hunter2xyz" not in result.stderr + result.stdout


def never_answers(receiver: HostileReceiver, connection: socket.socket) -> None:
    """Takes the request and says nothing until the client goes away."""
    connection.recv(1)


def test_a_receiver_that_never_answers_delays_no_other_webhook(receiver):
    """One worker served every webhook in turn: a receiver that took the POST and never
    answered held each alert for its timeout and retries (24 s with the defaults) before
    the next webhook, the phone's, was even tried."""
    silent = HostileReceiver(never_answers)
    good = receiver()
    try:
        notifier = notifier_for(WebhookConfig(url=silent.url, timeout_seconds=30.0),
                                WebhookConfig(url=good.url))
        assert notifier.notify(CRITICAL)
        assert silent.requests.wait(5)
        started = time.monotonic()
        while not good.requests and time.monotonic() - started < 10:
            time.sleep(0.02)
        assert len(good.requests) == 1
        assert time.monotonic() - started < 5
        notifier.close(timeout=0.25)
        for lane in notifier._lanes:
            lane.thread.join(2.0)
        assert not notifier.alive
        assert (notifier.delivered, notifier.failed) == (1, 1)
    finally:
        silent.close()


def test_config_check_does_not_show_a_webhook_password_in_a_key(tmp_path):
    """A key is data too: a webhook URL mis-indented into a key (``- https://u:p@host/x:``)
    is an unknown key, and the error named it whole, password and all; so did one at the top
    level, and an agent id."""
    import os
    import subprocess
    import sys

    url = "https://alerts:Hunter2Hunter2xyz@hooks.example.com/hook"
    config = tmp_path / "config.yaml"
    config.write_text(f"alerts:\n  webhooks:\n    - url:\n      {url}: 1\n"
                      f"'{url}/top':\n  a: 1\n"
                      f"agents:\n  '{url}/agent': 5\n")
    result = subprocess.run([sys.executable, "-m", "monitor", "config", "check", str(config)],
                            capture_output=True, text=True, timeout=60,
                            env={**os.environ, "CLAWWATCH_LOG_DIRS": "/nonexistent-cw"})
    shown = result.stderr + result.stdout
    assert result.returncode == 2
    assert shown.count("https://alerts:«redacted»@hooks.example.com/hook") == 3, shown
    assert "Hunter2Hunter2xyz" not in shown

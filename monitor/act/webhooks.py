"""Webhook alerts (httpx) on critical findings and on actions, sent from worker threads.

``notify(record)`` only puts the record on the bounded queue of every configured webhook
whose ``min_level`` it reaches (actions always; when a queue is full the record is dropped
there and counted), so the live loop never waits for the network. Each webhook has its own
worker, so a receiver that answers slowly or not at all delays only its own alerts. A
worker POSTs the record to its webhook, and retries connection errors, time-outs, 429 and
5xx with exponential backoff, up to ``retries`` more times. A redirect is a failure, not
followed: an alert goes to the configured URL or nowhere. Only the answer's status is read,
never its body, and an attempt takes ``timeout_seconds`` in all, however slowly the receiver
answers.

Bodies (``template``):

* null: the record as JSON, plus ``"source": "clawwatch"``;
* ``"ntfy"``: ntfy-style, the message as plain text with ``Title``, ``Priority`` and
  ``Tags`` headers;
* ``"slack"``: Slack-style, ``{"text": "…"}`` (the values shown as ``printable`` and
  Slack-escaped: no mention or link from data);
* anything else: the template with ``{detector}``, ``{level}``, ``{count}``, ``{tool}``,
  ``{key}``, ``{message}`` (also ``{action}``, ``{ok}``, ``{detail}``, ``{kind}``)
  replaced; a template that is JSON gets JSON-escaped values and is sent as JSON.

Every record is redacted (``monitor.records.redacted``) before it is rendered, and the
webhook URLs' secrets are registered so nothing clawwatch sends or prints repeats them.
Header values are ASCII on the wire: a non-ASCII ``Title`` (a session key ``agent:main:café``)
is sent as RFC 2047 encoded-words, which ntfy decodes. A delivery that fails in any way
(rendering, encoding, HTTP) is counted in ``failed``, kept in ``last_error`` and ``errors``
(the action loop turns those into ``error`` records: the dashboard's status line, ``watch``'s
output) and written to the audit log; the worker carries on with the next record.
"""

from __future__ import annotations

import base64
import json
import queue
import re
import threading
import time
from collections import deque
from collections.abc import Callable

import httpx

from monitor import __version__, untrusted_json
from monitor.act.http_deadline import Deadline
from monitor.display import printable
from monitor.records import ActionRecord, FindingRecord, Record, redacted
from monitor.records import as_json as record_json
from monitor.redaction import redact_text, register_url_secrets

LEVEL_RANK = {"warning": 1, "critical": 2, "action": 3}
_FIELD = re.compile(r"\{(detector|level|count|tool|key|message|action|ok|detail|kind|"
                    r"session_id|ts)\}")
MAX_BACKOFF = 8.0


def fields_of(record: FindingRecord | ActionRecord) -> dict[str, str]:
    """The template variables of a finding or action record."""
    if isinstance(record, ActionRecord):
        outcome = "ok" if record.ok else "FAILED"
        return {"kind": "action", "detector": record.trigger or "manual", "level": "action",
                "count": "0", "tool": "", "key": record.key, "action": record.action,
                "ok": str(record.ok).lower(), "detail": record.detail,
                "message": f"{record.action} {outcome}: {record.detail}",
                "session_id": record.session_id or "", "ts": record.ts or ""}
    return {"kind": "finding", "detector": record.detector, "level": record.level,
            "count": str(record.count), "tool": record.tool or "", "key": record.key or "",
            "message": record.message, "action": "", "ok": "", "detail": "",
            "session_id": record.session_id or "", "ts": record.ts or ""}


_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")


def header_value(text: str) -> str:
    """``text`` as an HTTP header value: control characters dropped, the other invisible and
    bidi characters shown (``printable``: a notification's title decodes the header), and
    when it is not ASCII, RFC 2047 encoded-words (UTF-8, base64, at most 45 bytes each, so
    each word stays within the RFC's 75 characters). ASCII holding ``=?`` is encoded too: the
    receiver would decode an encoded-word written in the data, and show what it hides (a
    right-to-left override, an escape sequence)."""
    text = printable(_CONTROL.sub(" ", text))
    if text.isascii() and "=?" not in text:
        return text
    words, chunk = [], b""
    for char in text:
        data = _utf8(char)
        if len(chunk) + len(data) > 45:
            words.append(chunk)
            chunk = b""
        chunk += data
    words.append(chunk)
    return " ".join(f"=?utf-8?b?{base64.b64encode(word).decode('ascii')}?=" for word in words)


def slack_text(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` for a Slack message: ``printable``, and ``&``, ``<``, ``>`` escaped as Slack
    asks, so data cannot write a mention (``<!channel>``) or a link whose label hides where it
    goes (``<https://evil|Re-authenticate>``)."""
    text = printable(text, keep_newlines=keep_newlines)
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def render(template: str | None, record: FindingRecord | ActionRecord
           ) -> tuple[bytes, dict[str, str]]:
    """(body, headers) for one webhook POST (the record redacted first)."""
    record = redacted(record)
    values = fields_of(record)
    headline = f"clawwatch {values['level']}: {values['detector']} on {values['key']}"
    if template is None:
        body = {"source": "clawwatch", **record_json(record)}
        return json.dumps(body, default=str).encode(), {"Content-Type": "application/json"}
    if template == "ntfy":
        urgent = values["level"] in ("critical", "action")
        return _utf8(printable(values["message"], keep_newlines=True)), {
            "Content-Type": "text/plain; charset=utf-8", "Title": header_value(headline[:200]),
            "Priority": "urgent" if urgent else "default",
            "Tags": "rotating_light" if urgent else "warning"}
    if template == "slack":
        text = f"*{slack_text(headline)}*\n{slack_text(values['message'], keep_newlines=True)}"
        return json.dumps({"text": text}).encode(), {"Content-Type": "application/json"}
    as_json = template.lstrip()[:1] in ("{", "[")

    def substitute(match: re.Match) -> str:       # JSON escapes what text shows visibly
        value = values[match.group(1)]
        return json.dumps(value)[1:-1] if as_json else printable(value)

    text = _FIELD.sub(substitute, template)
    if as_json:
        try:
            untrusted_json.loads(text)
        except ValueError:
            as_json = False
    content_type = "application/json" if as_json else "text/plain; charset=utf-8"
    return _utf8(text), {"Content-Type": content_type}


def _utf8(text: str) -> bytes:
    """``text`` as UTF-8; a lone surrogate (JSON can carry one) goes as its escape."""
    return text.encode("utf-8", "backslashreplace")


def _wanted(webhook, record: Record) -> bool:
    if isinstance(record, ActionRecord):
        return True
    return isinstance(record, FindingRecord) and \
        LEVEL_RANK.get(record.level, 0) >= LEVEL_RANK.get(webhook.min_level, 2)


class _Lane:
    """One webhook's queue, worker thread and client: a receiver that answers slowly or not
    at all delays only its own alerts, never another webhook's."""

    def __init__(self, webhook, queue_size: int, transport) -> None:
        self.webhook = webhook
        self.queue: queue.Queue = queue.Queue(maxsize=queue_size)
        self.deadline: Deadline | None = None       # the post in flight
        self.client = httpx.Client(transport=transport, follow_redirects=False,
                                   limits=httpx.Limits(max_keepalive_connections=0),
                                   headers={"User-Agent": f"clawwatch/{__version__}"})
        self.thread: threading.Thread | None = None


class WebhookNotifier:
    """Delivers records to ``webhooks`` (``WebhookConfig`` items), each from its own daemon
    thread."""

    def __init__(self, webhooks, *, queue_size: int = 200, backoff: float = 0.5,
                 transport: httpx.BaseTransport | None = None,
                 sleep: Callable[[float], bool] | None = None, audit=None) -> None:
        self.webhooks = tuple(webhooks)
        for webhook in self.webhooks:
            register_url_secrets(webhook.url)
        self.backoff = backoff
        self.audit = audit
        self.dropped = 0
        self.delivered = 0
        self.failed = 0
        self.last_error: str | None = None
        self.errors: deque[str] = deque(maxlen=100)
        self._stop = threading.Event()
        self._sleep = sleep or self._stop.wait
        self._pending = 0
        self._idle = threading.Condition()
        self._lanes = tuple(_Lane(webhook, queue_size, transport) for webhook in self.webhooks)
        for lane in self._lanes:
            lane.thread = threading.Thread(target=self._run, args=(lane,),
                                           name="clawwatch-webhooks", daemon=True)
            lane.thread.start()

    def notify(self, record: Record) -> bool:
        """Queue ``record`` for every webhook that wants it; False if none wants it or a
        full queue dropped it for one."""
        if not self.webhooks or self._stop.is_set():
            return False
        lanes = [lane for lane in self._lanes if _wanted_safely(lane.webhook, record)]
        if not lanes:
            return False
        queued = True
        for lane in lanes:
            with self._idle:
                self._pending += 1
            try:
                lane.queue.put_nowait(record)
            except queue.Full:
                with self._idle:
                    self.dropped += 1
                self.errors.append(f"webhook {_safe_url(lane.webhook.url)}: queue full: "
                                   "alert dropped")
                self._done()
                queued = False
        return queued

    def _done(self) -> None:
        with self._idle:
            self._pending -= 1
            self._idle.notify_all()

    def _run(self, lane: _Lane) -> None:
        while True:
            try:
                record = lane.queue.get(timeout=0.5)
            except queue.Empty:
                if self._stop.is_set():
                    return
                continue
            if record is None:
                return
            try:
                if not self._stop.is_set():
                    self._deliver(lane, record)
            finally:
                self._done()

    def _deliver(self, lane: _Lane, record: FindingRecord | ActionRecord) -> bool:
        try:
            return self._attempt(lane, record)
        except Exception as exc:  # a bad record or template must not end the worker
            self._failed(lane.webhook, record, f"{type(exc).__name__}: {exc}")
            return False

    def _failed(self, webhook, record, problem: str) -> None:
        with self._idle:
            self.failed += 1
        problem = redact_text(problem)
        message = f"webhook {_safe_url(webhook.url)}: {problem}"
        self.last_error = message
        self.errors.append(message)
        if self.audit is not None:
            trigger = record.detector if isinstance(record, FindingRecord) else record.trigger
            self.audit.append({"event": "webhook-failed", "key": record.key,
                               "action": "webhook", "mode": None, "trigger": trigger,
                               "ok": False, "detail": _safe_url(webhook.url),
                               "error": problem})

    def _attempt(self, lane: _Lane, record: FindingRecord | ActionRecord) -> bool:
        webhook = lane.webhook
        body, headers = render(webhook.template, record)
        delay = self.backoff
        problem = ""
        for attempt in range(1 + max(0, webhook.retries)):
            if attempt:
                if self._sleep(delay):
                    break
                delay = min(delay * 2, MAX_BACKOFF)
            try:
                status = self._post(lane, body, headers)
            except httpx.HTTPError as exc:
                problem = f"{type(exc).__name__}: {exc}"
                continue
            if status < 300:
                with self._idle:
                    self.delivered += 1
                return True
            problem = f"HTTP {status}"
            if 300 <= status < 400:
                problem += " (a redirect, which clawwatch does not follow)"
            if status != 429 and status < 500:
                break
        self._failed(webhook, record, problem)
        return False

    def _post(self, lane: _Lane, body: bytes, headers: dict[str, str]) -> int:
        """POST ``body`` to the lane's webhook: the answer's status. The answer's body is
        never read (an endless one cannot fill memory) and the exchange takes
        ``timeout_seconds`` in all, however slowly the receiver answers (``close()`` cuts it
        short)."""
        webhook = lane.webhook
        with Deadline(webhook.timeout_seconds) as deadline:
            lane.deadline = deadline
            try:
                with lane.client.stream("POST", webhook.url, content=body, headers=headers,
                                        timeout=webhook.timeout_seconds,
                                        extensions={"trace": deadline.trace}) as response:
                    return response.status_code
            except httpx.HTTPError:
                if deadline.expired:
                    raise httpx.TimeoutException(
                        f"no whole answer within {webhook.timeout_seconds:g} s") from None
                raise
            finally:
                lane.deadline = None

    def flush(self, timeout: float) -> bool:
        """Wait until everything queued so far was handled; False on time-out."""
        with self._idle:
            return self._idle.wait_for(lambda: self._pending <= 0, timeout)

    def drain_errors(self) -> list[str]:
        errors = []
        while self.errors:
            errors.append(self.errors.popleft())
        return errors

    @property
    def alive(self) -> bool:
        """Whether a worker is still running."""
        return any(lane.thread is not None and lane.thread.is_alive() for lane in self._lanes)

    def close(self, timeout: float = 1.0) -> None:
        """Deliver what is queued within ``timeout`` seconds in all, then stop: what is not
        delivered by then is given up (a post still waiting on its receiver is cut), so a
        stopping clawwatch ends in time."""
        deadline = time.monotonic() + timeout
        if self.alive:
            self.flush(timeout)
        self._stop.set()
        for lane in self._lanes:
            in_flight = lane.deadline
            if in_flight is not None:
                in_flight.cut()
            try:
                lane.queue.put_nowait(None)
            except queue.Full:
                pass
        for lane in self._lanes:
            lane.thread.join(timeout=max(0.0, deadline - time.monotonic()))
            if not lane.thread.is_alive():
                lane.client.close()


def _wanted_safely(webhook, record: Record) -> bool:
    """``_wanted``; False for a malformed record (no webhook wants it)."""
    try:
        return _wanted(webhook, record)
    except Exception:
        return False


def _safe_url(url: str) -> str:
    """Scheme, host and port only: webhook URLs often carry a secret in the path or query."""
    try:
        parsed = httpx.URL(url)
    except Exception:
        return "<bad url>"
    return f"{parsed.scheme}://{parsed.host}{':' + str(parsed.port) if parsed.port else ''}/…"

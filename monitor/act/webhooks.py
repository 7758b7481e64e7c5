"""Webhook alerts (httpx) on critical findings and on actions, sent from a worker thread.

``notify(record)`` only puts the record on a bounded queue (when it is full the record is
dropped and counted), so the live loop never waits for the network. The worker POSTs to
every configured webhook whose ``min_level`` the record reaches (actions always), and
retries connection errors, time-outs, 429 and 5xx with exponential backoff, up to
``retries`` more times.

Bodies (``template``):

* null: the record as JSON, plus ``"source": "clawwatch"``;
* ``"ntfy"``: ntfy-style, the message as plain text with ``Title``, ``Priority`` and
  ``Tags`` headers;
* ``"slack"``: Slack-style, ``{"text": "…"}``;
* anything else: the template with ``{detector}``, ``{level}``, ``{count}``, ``{tool}``,
  ``{key}``, ``{message}`` (also ``{action}``, ``{ok}``, ``{detail}``, ``{kind}``)
  replaced; a template that is JSON gets JSON-escaped values and is sent as JSON.
"""

from __future__ import annotations

import json
import queue
import re
import threading
from collections import deque
from collections.abc import Callable

import httpx

from monitor import __version__

LEVEL_RANK = {"warning": 1, "critical": 2, "action": 3}
_FIELD = re.compile(r"\{(detector|level|count|tool|key|message|action|ok|detail|kind|"
                    r"session_id|ts)\}")
MAX_BACKOFF = 8.0


def fields_of(record: dict) -> dict[str, str]:
    """The template variables of a finding or action record."""
    if record.get("type") == "action":
        outcome = "ok" if record.get("ok") else "FAILED"
        return {"kind": "action", "detector": str(record.get("trigger") or "manual"),
                "level": "action", "count": "0", "tool": "", "key": str(record.get("key", "")),
                "action": str(record.get("action", "")), "ok": str(bool(record.get("ok"))).lower(),
                "detail": str(record.get("detail", "")),
                "message": f"{record.get('action')} {outcome}: {record.get('detail', '')}",
                "session_id": str(record.get("session_id") or ""), "ts": str(record.get("ts", ""))}
    return {"kind": "finding", "detector": str(record.get("detector", "")),
            "level": str(record.get("level", "")), "count": str(record.get("count", "")),
            "tool": str(record.get("tool") or ""), "key": str(record.get("key", "")),
            "message": str(record.get("message", "")), "action": "", "ok": "", "detail": "",
            "session_id": str(record.get("session_id") or ""), "ts": str(record.get("ts", ""))}


def render(template: str | None, record: dict) -> tuple[bytes, dict[str, str]]:
    """(body, headers) for one webhook POST."""
    values = fields_of(record)
    headline = f"clawwatch {values['level']}: {values['detector']} on {values['key']}"
    if template is None:
        body = {"source": "clawwatch", **record}
        return json.dumps(body, default=str).encode(), {"Content-Type": "application/json"}
    if template == "ntfy":
        urgent = values["level"] in ("critical", "action")
        return values["message"].encode(), {
            "Content-Type": "text/plain; charset=utf-8", "Title": headline[:200],
            "Priority": "urgent" if urgent else "default",
            "Tags": "rotating_light" if urgent else "warning"}
    if template == "slack":
        text = f"*{headline}*\n{values['message']}"
        return json.dumps({"text": text}).encode(), {"Content-Type": "application/json"}
    as_json = template.lstrip()[:1] in ("{", "[")

    def substitute(match: re.Match) -> str:
        value = values[match.group(1)]
        return json.dumps(value)[1:-1] if as_json else value

    text = _FIELD.sub(substitute, template)
    if as_json:
        try:
            json.loads(text)
        except ValueError:
            as_json = False
    content_type = "application/json" if as_json else "text/plain; charset=utf-8"
    return text.encode(), {"Content-Type": content_type}


def _wanted(webhook, record: dict) -> bool:
    if record.get("type") == "action":
        return True
    return LEVEL_RANK.get(record.get("level"), 0) >= LEVEL_RANK.get(webhook.min_level, 2)


class WebhookNotifier:
    """Delivers records to ``webhooks`` (``WebhookConfig`` items) from a daemon thread."""

    def __init__(self, webhooks, *, queue_size: int = 200, backoff: float = 0.5,
                 transport: httpx.BaseTransport | None = None,
                 sleep: Callable[[float], bool] | None = None) -> None:
        self.webhooks = tuple(webhooks)
        self.backoff = backoff
        self.dropped = 0
        self.delivered = 0
        self.failed = 0
        self.errors: deque[str] = deque(maxlen=100)
        self._queue: queue.Queue = queue.Queue(maxsize=queue_size)
        self._stop = threading.Event()
        self._sleep = sleep or self._stop.wait
        self._pending = 0
        self._idle = threading.Condition()
        self._client = httpx.Client(transport=transport, follow_redirects=True,
                                    headers={"User-Agent": f"clawwatch/{__version__}"})
        self._thread = threading.Thread(target=self._run, name="clawwatch-webhooks",
                                        daemon=True)
        if self.webhooks:
            self._thread.start()

    def notify(self, record: dict) -> bool:
        """Queue ``record`` for every webhook that wants it; False if none or dropped."""
        if not self.webhooks or self._stop.is_set():
            return False
        if not any(_wanted(webhook, record) for webhook in self.webhooks):
            return False
        with self._idle:
            self._pending += 1
        try:
            self._queue.put_nowait(record)
        except queue.Full:
            self.dropped += 1
            self.errors.append("webhook queue full: alert dropped")
            self._done()
            return False
        return True

    def _done(self) -> None:
        with self._idle:
            self._pending -= 1
            self._idle.notify_all()

    def _run(self) -> None:
        while True:
            try:
                record = self._queue.get(timeout=0.5)
            except queue.Empty:
                if self._stop.is_set():
                    return
                continue
            if record is None:
                return
            try:
                for webhook in self.webhooks:
                    if _wanted(webhook, record) and not self._stop.is_set():
                        self._deliver(webhook, record)
            finally:
                self._done()

    def _deliver(self, webhook, record: dict) -> bool:
        body, headers = render(webhook.template, record)
        delay = self.backoff
        problem = ""
        for attempt in range(1 + max(0, webhook.retries)):
            if attempt:
                if self._sleep(delay):
                    break
                delay = min(delay * 2, MAX_BACKOFF)
            try:
                response = self._client.post(webhook.url, content=body, headers=headers,
                                             timeout=webhook.timeout_seconds)
            except httpx.HTTPError as exc:
                problem = f"{type(exc).__name__}: {exc}"
                continue
            if response.status_code < 300:
                self.delivered += 1
                return True
            problem = f"HTTP {response.status_code}"
            if response.status_code != 429 and response.status_code < 500:
                break
        self.failed += 1
        self.errors.append(f"webhook {_safe_url(webhook.url)}: {problem}")
        return False

    def flush(self, timeout: float) -> bool:
        """Wait until everything queued so far was handled; False on time-out."""
        with self._idle:
            return self._idle.wait_for(lambda: self._pending <= 0, timeout)

    def drain_errors(self) -> list[str]:
        errors = []
        while self.errors:
            errors.append(self.errors.popleft())
        return errors

    def close(self, timeout: float = 2.0) -> None:
        """Deliver what is queued within ``timeout`` seconds, then stop."""
        if self.webhooks and self._thread.is_alive():
            self.flush(timeout)
            self._stop.set()
            try:
                self._queue.put_nowait(None)
            except queue.Full:
                pass
            self._thread.join(timeout=1.0)
        self._client.close()


def _safe_url(url: str) -> str:
    """Scheme, host and port only: webhook URLs often carry a secret in the path or query."""
    try:
        parsed = httpx.URL(url)
    except Exception:
        return "<bad url>"
    return f"{parsed.scheme}://{parsed.host}{':' + str(parsed.port) if parsed.port else ''}/…"

"""End to end with a real Prometheus and a real Alertmanager (Debian packages).

``clawwatch demo --headless --metrics 127.0.0.1:PORT`` is scraped every second by a
Prometheus running the repo's rules (deploy/prometheus/clawwatch-rules.yml), which sends its
alerts to an Alertmanager routing everything to a webhook receiver in this test. The looping
demo sessions page, the healthy one never alerts, and stopping the demo raises the
exporter-down page. Every wait polls for its condition with a deadline; nothing sleeps to
synchronise.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from monitor.demo import DEMO_SCENARIOS, LOOPING
from tests.prom_tools import free_port, tool
from tests.test_demo import demo_env

ROOT = Path(__file__).resolve().parents[1]
RULES = ROOT / "deploy" / "prometheus" / "clawwatch-rules.yml"
KEYS = dict(DEMO_SCENARIOS)
RATE = "16"


class Webhook:
    """Alertmanager's webhook receiver: every alert of every notification, in order."""

    def __init__(self) -> None:
        self.alerts: list[dict] = []
        self.lock = threading.Lock()
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with hook.lock:
                    hook.alerts.extend(json.loads(body).get("alerts", []))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def firing(self, alertname: str) -> list[dict]:
        with self.lock:
            return [a for a in self.alerts
                    if a["status"] == "firing" and a["labels"].get("alertname") == alertname]

    def about(self, session_key: str) -> list[dict]:
        with self.lock:
            return [a for a in self.alerts if a["labels"].get("session_key") == session_key]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def get(url: str, timeout: float = 5.0) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, response.read()
    except OSError:
        return 0, b""


def wait_for(condition, timeout: float, what: str, interval: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = condition()
        if result:
            return result
        time.sleep(interval)
    result = condition()
    assert result, f"timed out after {timeout:.0f} s waiting for {what}"
    return result


class Processes:
    """Child processes, their output in files, all stopped at the end."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.procs: dict[str, subprocess.Popen] = {}

    def start(self, name: str, argv: list[str], **options) -> subprocess.Popen:
        out = open(self.tmp_path / f"{name}.out", "wb")     # closed by stop()
        err = open(self.tmp_path / f"{name}.err", "wb")
        proc = subprocess.Popen(argv, stdout=out, stderr=err, **options)
        proc._files = (out, err)
        self.procs[name] = proc
        return proc

    def log(self, name: str) -> str:
        path = self.tmp_path / f"{name}.err"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""

    def stop(self, name: str, timeout: float = 15) -> int:
        proc = self.procs[name]
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        for handle in proc._files:
            handle.close()
        return proc.returncode

    def close(self) -> None:
        for name in list(self.procs):
            self.stop(name)


def query(prometheus: str, expr: str) -> list[dict]:
    status, body = get(f"{prometheus}/api/v1/query?{urllib.parse.urlencode({'query': expr})}")
    assert status == 200, body
    return json.loads(body)["data"]["result"]


@pytest.mark.timeout(240)
def test_real_prometheus_and_alertmanager_page_for_the_looping_demo_sessions(tmp_path):
    prometheus_bin, alertmanager_bin = tool("prometheus"), tool("alertmanager")
    metrics_port, prometheus_port, alertmanager_port = free_port(), free_port(), free_port()
    hook = Webhook()
    procs = Processes(tmp_path)
    try:
        # Alertmanager: everything to the webhook, each session its own group, no waiting.
        am_config = tmp_path / "alertmanager.yml"
        am_config.write_text(yaml.safe_dump({
            "route": {"receiver": "hook", "group_by": ["alertname", "instance", "session_key"],
                      "group_wait": "1s", "group_interval": "1s", "repeat_interval": "1h"},
            "receivers": [{"name": "hook", "webhook_configs": [
                {"url": hook.url, "send_resolved": True}]}]}))
        procs.start("alertmanager", [
            alertmanager_bin, f"--config.file={am_config}",
            f"--storage.path={tmp_path / 'am-data'}",
            f"--web.listen-address=127.0.0.1:{alertmanager_port}",
            "--cluster.listen-address=", "--log.level=warn"])
        alertmanager = f"http://127.0.0.1:{alertmanager_port}"
        wait_for(lambda: get(f"{alertmanager}/-/ready")[0] == 200, 30,
                 f"Alertmanager to start: {procs.log('alertmanager')}")

        # The demo, its metrics on loopback.
        started = time.monotonic()
        demo = procs.start("demo", [
            sys.executable, "-m", "monitor", "demo", "--headless", "--json", "--rate", RATE,
            "--metrics", f"127.0.0.1:{metrics_port}"], env=demo_env(tmp_path), cwd=ROOT)
        metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
        wait_for(lambda: get(metrics_url)[0] == 200 or demo.poll() is not None, 30,
                 "the demo's metrics endpoint")
        assert demo.poll() is None, procs.log("demo")

        # Prometheus: scrape every second, evaluate the repo's rules every second.
        prom_config = tmp_path / "prometheus.yml"
        prom_config.write_text(yaml.safe_dump({
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s",
                       "scrape_timeout": "1s"},
            "rule_files": [str(RULES)],
            "alerting": {"alertmanagers": [
                {"static_configs": [{"targets": [f"127.0.0.1:{alertmanager_port}"]}]}]},
            "scrape_configs": [{"job_name": "clawwatch", "static_configs": [
                {"targets": [f"127.0.0.1:{metrics_port}"]}]}]}))
        procs.start("prometheus", [
            prometheus_bin, f"--config.file={prom_config}",
            f"--storage.tsdb.path={tmp_path / 'prom-data'}",
            f"--web.listen-address=127.0.0.1:{prometheus_port}", "--log.level=warn"])
        prometheus = f"http://127.0.0.1:{prometheus_port}"
        wait_for(lambda: get(f"{prometheus}/-/ready")[0] == 200, 30,
                 f"Prometheus to start: {procs.log('prometheus')}")
        wait_for(lambda: query(prometheus, 'up{job="clawwatch"} == 1'), 30,
                 "Prometheus to scrape the demo")

        # Every looping session pages, through Alertmanager, to the webhook.
        looping = {KEYS[scenario] for scenario in LOOPING}

        def paged() -> set[str]:
            return {a["labels"]["session_key"] for a in hook.firing("ClawwatchSessionCritical")}

        wait_for(lambda: looping <= paged(), 120,
                 f"a page for each looping session (got {paged()}; "
                 f"demo: {procs.log('demo')}; prometheus: {procs.log('prometheus')})")
        time_to_page = time.monotonic() - started
        assert time_to_page < 60, f"paged {time_to_page:.0f} s after the demo started"
        for alert in hook.firing("ClawwatchSessionCritical"):
            key = alert["labels"]["session_key"]
            assert alert["labels"]["severity"] == "page"
            assert f"clawwatch stop '{key}'" in alert["annotations"]["description"]
            assert key in alert["annotations"]["summary"]

        # The healthy session was watched to its end and never alerted, not even pending.
        assert query(prometheus, 'max_over_time(clawwatch_sessions{state="done"}[10m]) >= 1')
        healthy = KEYS["healthy"]
        assert hook.about(healthy) == []
        assert query(prometheus, f'count_over_time(ALERTS{{session_key="{healthy}"}}[10m])') \
            == []

        # Stopping the demo raises the exporter-down page.
        assert procs.stop("demo") == 0, procs.log("demo")
        stopped = time.monotonic()
        instance = f"127.0.0.1:{metrics_port}"
        wait_for(lambda: [a for a in hook.firing("ClawwatchExporterDown")
                          if a["labels"]["instance"] == instance], 90,
                 f"the exporter-down page ({procs.log('prometheus')})")
        down = hook.firing("ClawwatchExporterDown")[0]
        assert down["labels"]["severity"] == "page"
        assert instance in down["annotations"]["summary"]
        print(f"\npaged for {len(looping)} looping sessions {time_to_page:.1f} s after the "
              f"demo started; exporter-down paged {time.monotonic() - stopped:.1f} s after "
              "it stopped")
        assert hook.about(healthy) == []
    finally:
        procs.close()
        hook.close()


class SlackHook:
    """A Slack incoming webhook: the JSON body of every message posted to it."""

    def __init__(self) -> None:
        self.messages: list[dict] = []
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                hook.messages.append(json.loads(body))
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/services/T/B/x"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.timeout(120)
def test_the_example_slack_receiver_cannot_be_made_to_mention_or_link_by_a_session_key(
        tmp_path):
    """The rules put the session key (data) into the summary and description, and the
    example's Slack receiver sent them as they were: Slack reads ``<!channel>`` in a message
    as a mention of everyone, and ``<URL|label>`` as a link showing only its label. Its title
    and text escape ``&``, ``<`` and ``>`` as Slack asks. A real Alertmanager, the example's
    receiver pointed at a local hook."""
    alertmanager_bin = tool("alertmanager")
    port = free_port()
    slack = SlackHook()
    procs = Processes(tmp_path)
    try:
        config = yaml.safe_load((ROOT / "deploy" / "alertmanager" / "example.yml").read_text())
        config["route"]["group_wait"] = "0s"
        receiver = next(r for r in config["receivers"] if r["name"] == "slack-warnings")
        slack_config = receiver["slack_configs"][0]
        del slack_config["api_url_file"]
        slack_config["api_url"] = slack.url
        (tmp_path / "alertmanager.yml").write_text(yaml.safe_dump(config))
        procs.start("alertmanager", [
            alertmanager_bin, f"--config.file={tmp_path / 'alertmanager.yml'}",
            f"--storage.path={tmp_path / 'am-data'}", f"--web.listen-address=127.0.0.1:{port}",
            "--cluster.listen-address=", "--log.level=warn"])
        alertmanager = f"http://127.0.0.1:{port}"
        wait_for(lambda: get(f"{alertmanager}/-/ready")[0] == 200, 30,
                 f"Alertmanager to start: {procs.log('alertmanager')}")
        key = "agent:main:<!channel> <https://evil.example/x|open the runbook> & co"
        alert = [{"labels": {"alertname": "ClawwatchSessionWarning", "severity": "warning",
                             "session_key": key, "instance": "gw1:9464"},
                  "annotations": {"summary": f"Session {key} has had a warning",
                                  "description": f"Session {key} (agent main) has a warning"}}]
        request = urllib.request.Request(f"{alertmanager}/api/v2/alerts",
                                         data=json.dumps(alert).encode(), method="POST",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 200
        wait_for(lambda: slack.messages, 60,
                 f"the Slack message ({procs.log('alertmanager')})")
        [attachment] = slack.messages[0]["attachments"]
        shown = "agent:main:&lt;!channel&gt; &lt;https://evil.example/x|open the runbook&gt; " \
                "&amp; co"
        assert attachment["title"] == f"Session {shown} has had a warning"
        assert attachment["text"].strip() == f"Session {shown} (agent main) has a warning"
    finally:
        procs.close()
        slack.close()


@pytest.mark.timeout(120)
def test_real_prometheus_sees_no_counter_reset_when_agents_and_sessions_move(tmp_path,
                                                                           monkeypatch):
    """Prometheus scrapes an exporter whose agent ranking changes (one agent label, so the
    other agent is summed as ``_other``) and whose log-only session is adopted by its
    transcript: ``resets()`` over every clawwatch counter stays 0."""
    from monitor import metrics
    from monitor.metrics_server import MetricsServer
    from tests.test_metrics_over_time import (
        LOOP_LINE,
        NOW,
        DetectionEngine,
        GatewayNotice,
        MetricsHub,
        Monitor,
        SessionInfo,
        SourceSet,
        call,
        load_config,
        reply,
    )

    monkeypatch.setattr(metrics, "MAX_AGENTS", 1)
    prometheus_bin = tool("prometheus")
    prometheus_port = free_port()
    sources = SourceSet(state_dir=str(tmp_path / "state"), log_path=str(tmp_path / "gw.log"))
    monitor = Monitor(sources, DetectionEngine(load_config(None, {})))
    server = MetricsServer(MetricsHub(monitor), "127.0.0.1:0")
    procs = Processes(tmp_path)
    try:
        monitor.fold([SessionInfo("agent:a:1", "sa", "a"), SessionInfo("agent:b:1", "sb", "b"),
                      reply("sa", 100), call("sa", 1), reply("sb", 50), call("sb", 2),
                      call("sb", 3), GatewayNotice("WARN", "agents/loop-detection", LOOP_LINE,
                                                   NOW, session_key="agent:a:x",
                                                   agent_id="a")])
        prom_config = tmp_path / "prometheus.yml"
        prom_config.write_text(yaml.safe_dump({
            "global": {"scrape_interval": "1s", "scrape_timeout": "1s"},
            "scrape_configs": [{"job_name": "clawwatch", "static_configs": [
                {"targets": [f"127.0.0.1:{server.port}"]}]}]}))
        procs.start("prometheus", [
            prometheus_bin, f"--config.file={prom_config}",
            f"--storage.tsdb.path={tmp_path / 'prom-data'}",
            f"--web.listen-address=127.0.0.1:{prometheus_port}", "--log.level=warn"])
        prometheus = f"http://127.0.0.1:{prometheus_port}"
        wait_for(lambda: get(f"{prometheus}/-/ready")[0] == 200, 30,
                 f"Prometheus to start: {procs.log('prometheus')}")

        def scrapes() -> int:
            result = query(prometheus, 'count_over_time(up{job="clawwatch"}[10m])')
            return int(result[0]["value"][1]) if result else 0

        wait_for(lambda: scrapes() >= 2, 30, "Prometheus to scrape the exporter")
        # b outweighs a, and the log-only session's transcript arrives
        monitor.fold([reply("sb", 500), SessionInfo("agent:a:x", "sx", "a"), reply("sx", 1)])
        seen = scrapes()
        wait_for(lambda: scrapes() >= seen + 2, 30, "two more scrapes")
        for counter in ("clawwatch_tokens_total", "clawwatch_tool_calls_total",
                        "clawwatch_findings_total"):
            assert query(prometheus, counter), counter
            assert query(prometheus, f"resets({counter}[10m]) > 0") == [], counter
        assert query(prometheus, 'clawwatch_findings_total{agent="a"}')
    finally:
        procs.close()
        server.close()
        sources.close()

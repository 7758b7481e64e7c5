"""The audit log on a real full disk (a 16 KiB tmpfs; needs root to mount, skipped without).

A looping agent can fill the disk the monitor's state lives on. The stop must still be made
and said, the failure to audit it reported, and an entry the disk cut short must cost only
itself once space is back.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
from test_act_gateway import TOKEN, FakeGateway, run_stop, stop_args, stop_env

from monitor.act.audit import AuditLog
from monitor.act.controller import GatewayActionController
from monitor.act.loop import dashboard_action_hooks
from monitor.config import load_config
from monitor.discovery import Discovered
from monitor.records import ErrorRecord


@pytest.fixture
def full_disk(tmp_path) -> Path:
    """A mounted 16 KiB tmpfs; ``filler`` in it takes all the space (remove it to free)."""
    mount = tmp_path / "small"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(path: Path) -> None:
    """Fill the file system ``path`` is on (a file's last page keeps its free bytes)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"\0" * 1024)
    except OSError:
        pass
    finally:
        os.close(fd)


def test_an_entry_cut_short_by_a_full_disk_is_reported_and_costs_only_itself(full_disk):
    audit = AuditLog(str(full_disk / "clawwatch" / "audit.jsonl"))
    assert audit.append({"event": "attempt", "key": "agent:main:a", "n": 0})
    fill(full_disk / "filler")
    big = {"event": "result", "key": "agent:main:a", "detail": "x" * 3000, "error": "y" * 3000}
    assert audit.append(big) is False
    assert "of an entry written (is the disk full?)" in audit.last_error
    assert audit.append({"event": "result", "n": 2}) is False
    assert "No space left on device" in audit.last_error

    (full_disk / "filler").unlink()
    assert audit.append({"event": "result", "key": "agent:main:a", "n": 3})
    entries = audit.read()
    assert [entry.get("n") for entry in entries] == [0, 3]
    assert (full_disk / "clawwatch" / "audit.jsonl").read_bytes().count(b"\n") == 3


def test_stop_on_a_full_disk_still_stops_and_warns_that_it_was_not_audited(
        full_disk, tmp_path):
    gateway = FakeGateway("ok")
    env = {**stop_env(tmp_path), "XDG_STATE_HOME": str(full_disk)}
    fill(full_disk / "filler")
    try:
        code, lines, err, _ = run_stop(stop_args("agent:main:loop", gateway.url, tmp_path),
                                       env)
    finally:
        gateway.close()
    assert code == 0, err
    assert lines[0]["ok"] is True and "aborted run run-1" in lines[0]["detail"]
    assert f"clawwatch stop: warning: audit log {full_disk}/clawwatch/audit.jsonl: " \
           "No space left on device" in err


def test_the_dashboards_stop_key_on_a_full_disk_reaches_the_errors_pane(full_disk, tmp_path):
    """The dashboard's keys and its action loop write one audit log: the loop's next step
    reports the key's failed entry as an ``audit`` error (the pane shows it)."""
    gateway = FakeGateway("ok")
    config_path = tmp_path / "config.yaml"
    config_path.write_text(f"actions:\n  audit_log: {full_disk / 'audit.jsonl'}\n")
    config = load_config(str(config_path), env={})
    found = Discovered(str(tmp_path / "state"), None, {}, None, [], gateway.url, TOKEN)
    controller = GatewayActionController(found, config, env={}, url=gateway.url,
                                         rpc_timeout=1.0)
    hooks = dashboard_action_hooks(controller, found, config)
    fill(full_disk / "filler")
    try:
        result = hooks["controller"].stop("agent:main:loop")
        errors = hooks["after_step"](SimpleNamespace(), [])
    finally:
        for close in hooks["on_close"]:
            close()
        gateway.close()
    assert result.ok, result.detail
    (error,) = [record for record in errors if isinstance(record, ErrorRecord)]
    assert error.source == "audit" and "No space left on device" in error.message

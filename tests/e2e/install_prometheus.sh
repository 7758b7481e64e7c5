#!/usr/bin/env bash
# Install the real Prometheus and Alertmanager used by tests/test_prometheus_*.py (Debian's
# `prometheus` and `prometheus-alertmanager` packages: prometheus, promtool,
# prometheus-alertmanager, amtool).
#
#   tests/e2e/install_prometheus.sh         (idempotent; exits 0 when they are installed)
#
# Installs only as root with apt-get; otherwise it says so and exits 0, and those tests skip
# naming this script. On a host running systemd the packages' own services start too (CI
# containers have none); the tests never use them, they start their own on random ports.
set -euo pipefail

have() {
  command -v prometheus >/dev/null && command -v promtool >/dev/null \
    && command -v amtool >/dev/null \
    && { command -v prometheus-alertmanager >/dev/null || command -v alertmanager >/dev/null; }
}

if have; then
  echo "prometheus, alertmanager: already installed"
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "install_prometheus.sh: not root or no apt-get: install prometheus and" \
       "prometheus-alertmanager yourself; the Prometheus tests skip until then" >&2
  exit 0
fi
echo "installing prometheus prometheus-alertmanager (apt-get) ..."
export DEBIAN_FRONTEND=noninteractive
if apt-get update -qq && apt-get install -y -qq --no-install-recommends \
    prometheus prometheus-alertmanager >/dev/null && have; then
  echo "ok: $(prometheus --version 2>&1 | head -1)"
else
  echo "install_prometheus.sh: apt-get could not install prometheus prometheus-alertmanager;" \
       "the Prometheus tests will skip" >&2
fi

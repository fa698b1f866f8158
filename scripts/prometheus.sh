#!/usr/bin/env bash
# Installs the Prometheus server the observability tests start (tests/observe,
# tests/training/test_trainer_prometheus.py): Debian's `prometheus` package. The tests run the
# binary themselves (their own config, data folder and loopback port), so the package's system
# services are stopped and disabled. Idempotent: nothing happens when the binary is there.
#
#   sudo bash scripts/prometheus.sh
set -euo pipefail
if command -v prometheus >/dev/null; then
  exit 0
fi
echo "[prometheus] installing Debian's prometheus"
apt-get -o DPkg::Lock::Timeout=600 update -qq
DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq prometheus
if command -v systemctl >/dev/null; then
  systemctl disable --now prometheus prometheus-node-exporter >/dev/null 2>&1 || true
fi

#!/usr/bin/env bash
# Installs the browser the web tests (tests/web) and `make screenshots` drive: Debian's chromium,
# launched by path through Playwright (Playwright's own browser download cannot work where only
# the package registries are reachable). Idempotent: nothing happens when chromium is there.
#
#   sudo bash scripts/browser.sh
set -euo pipefail
if command -v chromium >/dev/null; then
  exit 0
fi
echo "[browser] installing chromium"
apt-get -o DPkg::Lock::Timeout=600 update -qq
DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq chromium

#!/usr/bin/env bash
# System packages the browser tests need: Debian's chromium (driven by Playwright, no browser
# download) and CJK fonts so Chinese text renders. Needs root (as on CI); idempotent.
set -euo pipefail
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
dpkg -s fonts-noto-cjk >/dev/null 2>&1 || need+=(fonts-noto-cjk)
if [ ${#need[@]} -eq 0 ]; then
  echo "system packages present: chromium, fonts-noto-cjk"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "missing system packages: ${need[*]}; run: sudo apt-get install -y ${need[*]}" >&2
  exit 1
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
echo "installed: ${need[*]}"

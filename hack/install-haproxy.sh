#!/usr/bin/env bash
# HAProxy comes from Debian. Installs it when missing (CI runs as root).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
if command -v haproxy >/dev/null 2>&1; then
  exit 0
fi
if [[ "$(id -u)" != 0 ]]; then
  log "haproxy is missing: run 'sudo apt-get install -y haproxy'"
  exit 1
fi
log "installing haproxy from Debian"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq haproxy >/dev/null
# The package starts a service on some systems; the tests run their own.
systemctl stop haproxy 2>/dev/null || service haproxy stop 2>/dev/null || true

#!/usr/bin/env bash
# The Debian packages the test bed uses: haproxy (the proxy eksa-metrics
# renders), iproute2 and util-linux (ip, unshare, nsenter: the simulated hosts
# of the end-to-end tests live in network namespaces). Installs what is
# missing (CI runs as root).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
missing=()
for pair in haproxy:haproxy ip:iproute2 unshare:util-linux nsenter:util-linux; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair#*:}")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
if [[ "$(id -u)" != 0 ]]; then
  log "missing: ${missing[*]}: run 'sudo apt-get install -y ${missing[*]}'"
  exit 1
fi
log "installing ${missing[*]} from Debian"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq "${missing[@]}" >/dev/null
# The haproxy package starts a service on some systems; the tests run their own.
systemctl stop haproxy 2>/dev/null || service haproxy stop 2>/dev/null || true

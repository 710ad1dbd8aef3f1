#!/usr/bin/env bash
# Shared helpers for the hack/ build scripts.
#
# Every test binary is built from the Go module proxy at a pinned version into
# a per-machine cache (outside the checkout, so a fresh clone on the same
# machine reuses it), then copied into bin/. A build is skipped when the cached
# binary's stamp (version + the build recipe's hash) matches.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${ROOT}/bin"
CACHE="${EKSA_METRICS_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/eksa-metrics}"
mkdir -p "${BIN}" "${CACHE}"

log() { printf '[hack] %s\n' "$*" >&2; }

# recipe_hash FILE...: a short hash of the scripts that define a build.
recipe_hash() { cat "$@" | sha256sum | cut -c1-16; }

# cached NAME STAMP: true when ${CACHE}/NAME exists with the given stamp.
cached() { [[ -f "${CACHE}/$1.stamp" && "$(cat "${CACHE}/$1.stamp")" == "$2" ]]; }

# record_phase FILE...: when TESTBED_MANIFEST is set (hack/testbed.sh
# integration), add the bin/-relative FILEs to it: the list of what the
# integration phase has built, which the integration tests hold themselves to
# (test/framework.Binary, EKSA_METRICS_PHASE_MANIFEST).
record_phase() {
  [[ -n "${TESTBED_MANIFEST:-}" ]] || return 0
  printf '%s\n' "$@" >>"${TESTBED_MANIFEST}"
}

# install_file SRC DEST: copy SRC to bin/DEST when they differ, atomically (a
# test may be reading DEST while another phase installs it again).
install_file() {
  mkdir -p "$(dirname "${BIN}/$2")"
  if ! cmp -s "$1" "${BIN}/$2"; then
    rm -f "${BIN}/$2.tmp"
    cp "$1" "${BIN}/$2.tmp" && chmod u+w "${BIN}/$2.tmp" && mv "${BIN}/$2.tmp" "${BIN}/$2"
  fi
  record_phase "$2"
}

# install_from_cache NAME DEST...: copy cached files into bin/ when they differ.
install_from_cache() {
  local name=$1; shift
  local f
  for f in "$@"; do
    install_file "${CACHE}/${name}/${f}" "${f}"
  done
}

# gomod_dir NAME: a clean scratch module directory for a build.
gomod_dir() {
  local d="${CACHE}/work/$1"
  rm -rf "${d}" && mkdir -p "${d}"
  printf '%s' "${d}"
}

# begin_build NAME STAMP FILE...: when the cache holds NAME with STAMP, copy
# its FILEs into bin/ and exit; else create the scratch module directory, cd
# into it and set WORK and OUT (where the build puts the FILEs).
begin_build() {
  local name=$1 stamp=$2; shift 2
  if cached "${name}" "${stamp}"; then
    install_from_cache "${name}" "$@"
    exit 0
  fi
  WORK="$(gomod_dir "${name}")"
  OUT="${CACHE}/${name}"
  rm -rf "${OUT}" && mkdir -p "${OUT}"
  cd "${WORK}"
}

# finish_build NAME STAMP FILE...: record the stamp and copy the FILEs into bin/.
finish_build() {
  local name=$1 stamp=$2; shift 2
  printf '%s' "${stamp}" > "${CACHE}/${name}.stamp"
  install_from_cache "${name}" "$@"
}

# upstream MODULE VERSION: download a module and set UPSTREAM_GOMOD (its
# go.mod), UPSTREAM_DIR (its files) and GO_DIRECTIVE (its go line).
upstream() {
  local json
  json="$(go mod download -json "$1@$2")"
  UPSTREAM_GOMOD="$(sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p' <<<"${json}")"
  UPSTREAM_DIR="$(sed -n 's/^\t"Dir": "\(.*\)",$/\1/p' <<<"${json}")"
  [[ -f "${UPSTREAM_GOMOD}" && -d "${UPSTREAM_DIR}" ]] || { log "cannot download $1@$2"; exit 1; }
  GO_DIRECTIVE="$(sed -n 's/^go \(.*\)$/\1/p' "${UPSTREAM_GOMOD}" | head -n1)"
}

# version_ldflags VERSION RELEASE: the -X flags of prometheus/common/version,
# which Prometheus and its operator print (no build date: reproducible).
version_ldflags() {
  local v=github.com/prometheus/common/version
  printf -- '-X %s.Version=%s -X %s.Revision=%s -X %s.Branch=HEAD -X %s.BuildUser=eksa-metrics@testbed -X %s.BuildDate=19700101-00:00:00' \
    "${v}" "$2" "${v}" "$1" "${v}" "${v}" "${v}"
}

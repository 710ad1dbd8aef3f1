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

# install_from_cache NAME DEST...: copy cached files into bin/ when they differ.
install_from_cache() {
  local name=$1; shift
  local f
  for f in "$@"; do
    mkdir -p "$(dirname "${BIN}/${f}")"
    if ! cmp -s "${CACHE}/${name}/${f}" "${BIN}/${f}"; then
      cp "${CACHE}/${name}/${f}" "${BIN}/${f}.tmp" && mv "${BIN}/${f}.tmp" "${BIN}/${f}"
    fi
  done
}

# gomod_dir NAME: a clean scratch module directory for a build.
gomod_dir() {
  local d="${CACHE}/work/$1"
  rm -rf "${d}" && mkdir -p "${d}"
  printf '%s' "${d}"
}

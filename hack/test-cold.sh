#!/usr/bin/env bash
# make test-cold: make test as a new machine runs it. Clones the committed
# HEAD (not the work tree) into a new directory with ../shared beside it,
# and runs make test there with an empty test-bed cache, Go build cache and
# Go module cache, then prints the wall time. Run it before you push a change
# to hack/, to the test phases or to what a test needs: a warm cache hides a
# test that reads what a later phase builds.
#
# COLD_DIR: where to put the clone and the caches (default: a new temporary
# directory, removed afterwards). With COLD_DIR set they are kept, so that
# `cd $COLD_DIR/eksa-metrics && COLD_DIR=$COLD_DIR hack/test-cold.sh warm`
# runs the same clone again on the caches the cold run filled.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

mode="${1:-cold}"
[[ "${mode}" == cold || "${mode}" == warm ]] || { log "usage: $0 [cold|warm]"; exit 2; }
keep=${COLD_DIR:+1}
dir="${COLD_DIR:-$(mktemp -d)}"
if [[ "${mode}" == cold ]]; then
  [[ ! -e "${dir}" || -z "$(ls -A "${dir}")" ]] || { log "COLD_DIR ${dir} is not empty: a cold run starts from nothing"; exit 2; }
  mkdir -p "${dir}"
  git clone -q "${ROOT}" "${dir}/eksa-metrics"
  if [[ -d "${ROOT}/../shared" ]]; then
    ln -s "$(cd "${ROOT}/../shared" && pwd)" "${dir}/shared"
  else
    log "no ../shared beside the checkout: the tests that read its fixtures will skip"
  fi
else
  [[ -d "${dir}/eksa-metrics" && -d "${dir}/cache" ]] || { log "warm: COLD_DIR=${dir} holds no cold run"; exit 2; }
fi
cleanup() {
  [[ -n "${keep}" ]] && return 0
  chmod -R u+w "${dir}" 2>/dev/null || true # the Go module cache is read-only
  rm -rf "${dir}"
}
trap cleanup EXIT

mkdir -p "${dir}/cache/eksa-metrics" "${dir}/cache/go-build" "${dir}/cache/go-mod"
log "${mode} make test in ${dir}/eksa-metrics ($(git -C "${dir}/eksa-metrics" rev-parse --short HEAD))"
start=${SECONDS}
rc=0
(
  cd "${dir}/eksa-metrics"
  EKSA_METRICS_CACHE="${dir}/cache/eksa-metrics" GOCACHE="${dir}/cache/go-build" GOMODCACHE="${dir}/cache/go-mod" \
    make --no-print-directory test
) || rc=$?
log "${mode} make test: exit ${rc} after $(( (SECONDS - start) / 60 ))m$(( (SECONDS - start) % 60 ))s"
exit "${rc}"

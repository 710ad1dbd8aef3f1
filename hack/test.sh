#!/usr/bin/env bash
# make test after the unit tests: builds what the integration tests run, then
# runs them while the rest of the test bed (what only the end-to-end tests
# start: the older Kubernetes, the agents) builds beside them at a lower
# priority (the integration tests mostly wait on API servers, about one core
# of two), then runs the end-to-end tests. On a warm cache the second build
# only copies from it.
#
# The integration tests run with EKSA_METRICS_PHASE_MANIFEST: a test that asks
# for a test-bed file the first phase did not install fails at once, with a
# message naming the file (test/framework.Binary), instead of passing on a
# machine whose cache already holds it and failing on a new one.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "${ROOT}"

phases=()
phase_start=${SECONDS}
# phase NAME: record how long the phase that just ended took.
phase() {
  phases+=("$(printf '%-40s %4ds' "$1" $(( SECONDS - phase_start )))")
  phase_start=${SECONDS}
}
report() {
  local p
  for p in "${phases[@]}"; do log "phase: ${p}"; done
  log "hack/test.sh: ${SECONDS}s"
}
rest="$(mktemp)"
trap 'rm -f "${rest}"; report' EXIT

hack/testbed.sh integration
phase "integration test bed"
make --no-print-directory image
printf '%s\n' eksa-metrics-image.tar >>"${BIN}/.testbed-integration"
phase "image"

nice -n 10 hack/testbed.sh >"${rest}" 2>&1 &
testbed=$!
integration=0
EKSA_METRICS_PHASE_MANIFEST="${BIN}/.testbed-integration" make --no-print-directory integration-tests || integration=$?
phase "integration tests (rest of the test bed beside)"
if ! wait "${testbed}"; then
  cat "${rest}" >&2
  log "the rest of the test bed did not build"
  exit 1
fi
phase "rest of the test bed, after the integration tests"
(( integration == 0 )) || exit "${integration}"
make --no-print-directory e2e-tests
phase "end-to-end tests"

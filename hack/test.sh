#!/usr/bin/env bash
# make test after the unit tests: builds what the integration tests run, then
# runs them while the rest of the test bed (what only the end-to-end tests
# start: the older Kubernetes, the agents) builds beside them at a lower
# priority (the integration tests mostly wait on API servers, about one core
# of two), then runs the end-to-end tests. On a warm cache the second build
# only copies from it.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "${ROOT}"

hack/testbed.sh integration
make --no-print-directory image

rest="$(mktemp)"
trap 'rm -f "${rest}"' EXIT
nice -n 10 hack/testbed.sh >"${rest}" 2>&1 &
testbed=$!
integration=0
make --no-print-directory integration-tests || integration=$?
if ! wait "${testbed}"; then
  cat "${rest}" >&2
  log "the rest of the test bed did not build"
  exit 1
fi
(( integration == 0 )) || exit "${integration}"
make --no-print-directory e2e-tests

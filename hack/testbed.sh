#!/usr/bin/env bash
# Builds (or takes from the cache) every binary the integration and
# end-to-end tests run, two builds at a time (the longest first, so that the
# short ones fill the gaps), then installs the Debian packages and copies the
# CRDs. A build's output is shown when it fails.
#
# usage: hack/testbed.sh [integration]
#   integration: only what the integration tests run (the newest Kubernetes,
#   not the agents only the end-to-end tests start), so that make test can
#   run them while the rest builds. It lists what it installed in
#   bin/.testbed-integration (one bin/-relative path a line), and hack/test.sh
#   has the integration tests fail on a binary that is not in that list
#   (test/framework.Binary): what the second phase builds may not be there yet.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Pinned versions of the test bed. test/framework/versions.go lists the same
# Kubernetes versions for the tests; a unit test keeps the two equal.
KUBE_VERSIONS=(v1.37.2 v1.34.4)
ETCD_VERSION=v3.6.8
KUBE_RBAC_PROXY_VERSION=v0.19.1
CLUSTER_API_VERSION=v1.13.2
PROMETHEUS_VERSION=v0.316.0
PROMETHEUS_OPERATOR_VERSION=v0.93.1 # the newest whose pkg/client the module proxy serves (v0.94 and v0.95: 403)
CONTROLLER_TOOLS_VERSION=v0.21.0 # the one built on Kubernetes 0.36, like the rest
CERT_MANAGER_VERSION=v1.20.2 # the release EKS Anywhere v0.26 ships
# The agents that are not a Prometheus server: the OpenTelemetry Collector
# (core, its v1 modules, contrib: one release) and VictoriaMetrics' vmagent.
OTELCOL_VERSION=v0.165.0
OTELCOL_CONTRIB_VERSION=v0.165.1
OTELCOL_STABLE_VERSION=v1.71.0
VMAGENT_VERSION=v1.151.0
JOBS="${TESTBED_JOBS:-2}"

GROUP="${1:-all}"
[[ "${GROUP}" == all || "${GROUP}" == integration ]] || { log "usage: $0 [integration]"; exit 2; }
if [[ "${GROUP}" == integration ]]; then
  export TESTBED_MANIFEST="${BIN}/.testbed-integration"
  : >"${TESTBED_MANIFEST}"
else
  unset TESTBED_MANIFEST
fi
builds=("build-kubernetes.sh ${KUBE_VERSIONS[0]}")
[[ "${GROUP}" == integration ]] || for v in "${KUBE_VERSIONS[@]:1}"; do builds+=("build-kubernetes.sh ${v}"); done
builds+=("build-prometheus.sh ${PROMETHEUS_VERSION}" "build-cluster-api.sh ${CLUSTER_API_VERSION}"
  "build-prometheus-operator.sh ${PROMETHEUS_OPERATOR_VERSION}" "build-etcd.sh ${ETCD_VERSION}"
  "build-cert-manager.sh ${CERT_MANAGER_VERSION}" "build-kube-rbac-proxy.sh ${KUBE_RBAC_PROXY_VERSION}"
  "build-controller-gen.sh ${CONTROLLER_TOOLS_VERSION}")
[[ "${GROUP}" == integration ]] || builds+=("build-otelcol.sh ${OTELCOL_VERSION} ${OTELCOL_CONTRIB_VERSION} ${OTELCOL_STABLE_VERSION}" "build-vmagent.sh ${VMAGENT_VERSION}")

LOGS="$(mktemp -d)"
trap 'rm -rf "${LOGS}"' EXIT
declare -A running=()
failed=0
reap() { # wait for one build, report a failure with its log
  local pid
  wait -n -p pid || true
  [[ -n "${pid:-}" && -n "${running[${pid}]:-}" ]] || return 0
  local b=${running[${pid}]} rc
  unset "running[${pid}]"
  rc=$(cat "${LOGS}/${pid}.rc")
  if [[ "${rc}" != 0 ]]; then
    log "FAILED: ${b}"; cat "${LOGS}/${pid}.log" >&2; failed=1
  elif [[ -s "${LOGS}/${pid}.log" ]]; then
    log "done: ${b} ($(( SECONDS - started[${pid}] ))s)"
  fi
}
declare -A started=()
for b in "${builds[@]}"; do
  while (( ${#running[@]} >= JOBS )); do reap; done
  read -r -a cmd <<<"${b}"
  ( n=${BASHPID}; "${ROOT}/hack/${cmd[0]}" "${cmd[@]:1}" >"${LOGS}/${n}.log" 2>&1; echo $? >"${LOGS}/${n}.rc" ) &
  running[$!]="${b}"
  started[$!]=${SECONDS}
done
while (( ${#running[@]} > 0 )); do reap; done
(( failed == 0 )) || exit 1
"${ROOT}/hack/install-packages.sh"
"${ROOT}/hack/fetch-crds.sh"

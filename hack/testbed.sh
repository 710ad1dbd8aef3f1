#!/usr/bin/env bash
# Builds (or takes from the cache) every binary the integration and
# end-to-end tests run, and checks that haproxy is installed.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Pinned versions of the test bed.
KUBE_VERSIONS=(v1.36.3 v1.34.4)
ETCD_VERSION=v3.6.8
KUBE_RBAC_PROXY_VERSION=v0.19.1
CLUSTER_API_VERSION=v1.13.2

"${ROOT}/hack/build-etcd.sh" "${ETCD_VERSION}"
"${ROOT}/hack/build-kube-rbac-proxy.sh" "${KUBE_RBAC_PROXY_VERSION}"
for v in "${KUBE_VERSIONS[@]}"; do
  "${ROOT}/hack/build-kubernetes.sh" "${v}"
done
"${ROOT}/hack/build-cluster-api.sh" "${CLUSTER_API_VERSION}"
"${ROOT}/hack/install-haproxy.sh"
"${ROOT}/hack/fetch-crds.sh"

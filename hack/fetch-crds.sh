#!/usr/bin/env bash
# Copies the real CRDs the tests install out of the Go modules that ship them:
# Cluster API's KubeadmControlPlane and prometheus-operator's ServiceMonitor
# PodMonitor and PrometheusRule, and EKS Anywhere's own (the Cluster and the provider
# objects it refers to). Output: bin/crds/<project>/*.yaml
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CAPI_VERSION="${CAPI_VERSION:-v1.13.2}"
PROMETHEUS_OPERATOR_VERSION="${PROMETHEUS_OPERATOR_VERSION:-v0.93.1}"
EKSA_VERSION="${EKSA_VERSION:-v0.26.1}"

module_dir() { go mod download -json "$1" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p'; }

cd "${ROOT}"
capi="$(module_dir "sigs.k8s.io/cluster-api@${CAPI_VERSION}")"
prom="$(module_dir "github.com/prometheus-operator/prometheus-operator@${PROMETHEUS_OPERATOR_VERSION}")"
# crds DIR FILE...: each FILE into bin/crds/DIR (atomically, when it differs).
crds() {
  local dir=$1 f; shift
  for f in "$@"; do install_file "${f}" "crds/${dir}/$(basename "${f}")"; done
}
crds cluster-api "${capi}/controlplane/kubeadm/config/crd/bases/controlplane.cluster.x-k8s.io_kubeadmcontrolplanes.yaml"
# The core CRDs the Cluster API manager itself needs (config/crd/bases).
crds cluster-api-core "${capi}"/config/crd/bases/*.yaml
for crd in servicemonitors podmonitors prometheusrules; do
  crds prometheus-operator "${prom}/example/prometheus-operator-crd/monitoring.coreos.com_${crd}.yaml"
done
eksa="$(module_dir "github.com/aws/eks-anywhere@${EKSA_VERSION}")"
crds eks-anywhere "${eksa}"/config/crd/bases/anywhere.eks.amazonaws.com_*.yaml

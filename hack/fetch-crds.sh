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
mkdir -p "${BIN}/crds/cluster-api" "${BIN}/crds/prometheus-operator"
install -m 0644 "${capi}/controlplane/kubeadm/config/crd/bases/controlplane.cluster.x-k8s.io_kubeadmcontrolplanes.yaml" "${BIN}/crds/cluster-api/"
# The core CRDs the Cluster API manager itself needs (config/crd/bases).
mkdir -p "${BIN}/crds/cluster-api-core"
install -m 0644 "${capi}"/config/crd/bases/*.yaml "${BIN}/crds/cluster-api-core/"
for crd in servicemonitors podmonitors prometheusrules; do
  install -m 0644 "${prom}/example/prometheus-operator-crd/monitoring.coreos.com_${crd}.yaml" "${BIN}/crds/prometheus-operator/"
done
eksa="$(module_dir "github.com/aws/eks-anywhere@${EKSA_VERSION}")"
mkdir -p "${BIN}/crds/eks-anywhere"
install -m 0644 "${eksa}"/config/crd/bases/anywhere.eks.amazonaws.com_*.yaml "${BIN}/crds/eks-anywhere/"

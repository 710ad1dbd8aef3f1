#!/usr/bin/env bash
# Builds the Prometheus Operator (cmd/operator of
# github.com/prometheus-operator/prometheus-operator) at a pinned version from
# the Go module proxy into bin/prometheus-operator, and copies every CRD of
# that release (example/prometheus-operator-crd/) into
# bin/crds/prometheus-operator-full/.
#
# The operator's go.mod replaces its own sub-modules (pkg/apis/monitoring,
# pkg/client) with local paths, which do not apply to a module that requires
# it: each becomes the version the operator's go.mod requires (published with
# a matching pkg/.../vX.Y.Z tag).
#
# usage: hack/build-prometheus-operator.sh [v0.93.1]
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

VERSION="${1:-v0.93.1}"
MODULE=github.com/prometheus-operator/prometheus-operator
NAME="prometheus-operator-${VERSION}"
STAMP="${VERSION} $(recipe_hash "${BASH_SOURCE[0]}" "${ROOT}/hack/lib.sh")"
CRDS=(alertmanagerconfigs alertmanagers podmonitors probes prometheusagents prometheuses prometheusrules scrapeconfigs servicemonitors thanosrulers)
FILES=(prometheus-operator)
for c in "${CRDS[@]}"; do FILES+=("crds/prometheus-operator-full/monitoring.coreos.com_${c}.yaml"); done
begin_build "${NAME}" "${STAMP}" "${FILES[@]}"
log "building prometheus-operator ${VERSION}"
upstream "${MODULE}" "${VERSION}"
# "MODULE/sub => ./sub" becomes "MODULE/sub => MODULE/sub <required version>".
REPLACES="$(sed -n 's#^[[:space:]]*\('"${MODULE}"'/[^ ]*\) => \./.*$#\1#p' "${UPSTREAM_GOMOD}" | while read -r sub; do
  printf '\t%s => %s %s\n' "${sub}" "${sub}" "$(awk -v m="${sub}" '$1 == m { print $2; exit }' "${UPSTREAM_GOMOD}")"
done)"
if grep -v "${MODULE}/" "${UPSTREAM_GOMOD}" | grep -q '=> *\.'; then
  log "${MODULE}@${VERSION} has a local replace this script does not handle"
  exit 1
fi
printf 'module eksa-metrics.invalid/testbed/prometheus-operator\n\ngo %s\n\nrequire %s %s\n\nreplace (\n%s\n)\n' "${GO_DIRECTIVE}" "${MODULE}" "${VERSION}" "${REPLACES}" > go.mod
printf 'package testbed\n' > doc.go
# version.Version also names the default config-reloader image tag.
go build -mod=mod -trimpath -ldflags "-s -w $(version_ldflags "${VERSION}" "$(tr -d '[:space:]' < "${UPSTREAM_DIR}/VERSION")")" \
  -o "${OUT}/prometheus-operator" "${MODULE}/cmd/operator"
mkdir -p "${OUT}/crds/prometheus-operator-full"
for c in "${CRDS[@]}"; do
  install -m 0644 "${UPSTREAM_DIR}/example/prometheus-operator-crd/monitoring.coreos.com_${c}.yaml" "${OUT}/crds/prometheus-operator-full/"
done
finish_build "${NAME}" "${STAMP}" "${FILES[@]}"

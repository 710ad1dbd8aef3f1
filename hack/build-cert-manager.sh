#!/usr/bin/env bash
# Builds a cert-manager controller (hack/cert-manager/main.go: the Certificate,
# CertificateRequest, CA and self-signed issuer controllers of the module
# github.com/cert-manager/cert-manager) at a pinned version into
# bin/cert-manager-controller, and copies the module's CRDs into
# bin/crds/cert-manager. The project's own cmd/controller is a module of its
# own that the Go module proxy does not serve.
#
# usage: hack/build-cert-manager.sh [v1.20.2]
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

VERSION="${1:-v1.20.2}"
NAME="cert-manager-${VERSION}"
MAIN="${ROOT}/hack/cert-manager/main.go"
STAMP="${VERSION} $(recipe_hash "${BASH_SOURCE[0]}" "${ROOT}/hack/lib.sh" "${MAIN}")"
FILES=(cert-manager-controller crds/cert-manager/certificates.yaml crds/cert-manager/certificaterequests.yaml
  crds/cert-manager/issuers.yaml crds/cert-manager/clusterissuers.yaml)
begin_build "${NAME}" "${STAMP}" "${FILES[@]}"
log "building the cert-manager controller ${VERSION}"
upstream github.com/cert-manager/cert-manager "${VERSION}"
printf 'module eksa-metrics.invalid/testbed/cert-manager\n\ngo %s\n\nrequire github.com/cert-manager/cert-manager %s\n' "${GO_DIRECTIVE}" "${VERSION}" > go.mod
# The file is kept out of this repository's own module by its build
# constraint; here it is the main package.
grep -v '^//go:build ignore$' "${MAIN}" > main.go
go mod tidy
grep -q "github.com/cert-manager/cert-manager ${VERSION}$" go.mod || { log "go mod tidy moved cert-manager off ${VERSION}"; exit 1; }
go build -trimpath -ldflags "-s -w" -o "${OUT}/cert-manager-controller" .
mkdir -p "${OUT}/crds/cert-manager"
for crd in certificates certificaterequests issuers clusterissuers; do
  install -m 0644 "${UPSTREAM_DIR}/deploy/crds/cert-manager.io_${crd}.yaml" "${OUT}/crds/cert-manager/${crd}.yaml"
done
finish_build "${NAME}" "${STAMP}" "${FILES[@]}"

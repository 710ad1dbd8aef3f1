#!/usr/bin/env bash
# Builds controller-gen (sigs.k8s.io/controller-tools) at a pinned version
# from the Go module proxy into bin/controller-gen: it generates the
# MetricsConfig CRD from the Go types (make crd).
#
# usage: hack/build-controller-gen.sh [v0.21.0]
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

VERSION="${1:-v0.21.0}"
NAME="controller-gen-${VERSION}"
STAMP="${VERSION} $(recipe_hash "${BASH_SOURCE[0]}" "${ROOT}/hack/lib.sh")"
begin_build "${NAME}" "${STAMP}" controller-gen
log "building controller-gen ${VERSION}"
printf 'module eksa-metrics.invalid/testbed/controller-gen\n\ngo 1.24\n\nrequire sigs.k8s.io/controller-tools %s\n' "${VERSION}" > go.mod
printf 'package testbed\n' > doc.go
go build -mod=mod -trimpath -ldflags "-s -w" -o "${OUT}/controller-gen" sigs.k8s.io/controller-tools/cmd/controller-gen
finish_build "${NAME}" "${STAMP}" controller-gen

#!/usr/bin/env bash
# Builds the Cluster API core manager (the repository root's main package of
# sigs.k8s.io/cluster-api) at a pinned version into bin/cluster-api-manager.
#
# usage: hack/build-cluster-api.sh [v1.13.2]
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

VERSION="${1:-v1.13.2}"
NAME="cluster-api-${VERSION}"
STAMP="${VERSION} $(recipe_hash "${BASH_SOURCE[0]}" "${ROOT}/hack/lib.sh")"
begin_build "${NAME}" "${STAMP}" cluster-api-manager
log "building the Cluster API manager ${VERSION}"
printf 'module eksa-metrics.invalid/testbed/cluster-api\n\ngo 1.24\n\nrequire sigs.k8s.io/cluster-api %s\n' "${VERSION}" > go.mod
printf 'package testbed\n' > doc.go
go build -mod=mod -trimpath -ldflags "-s -w" -o "${OUT}/cluster-api-manager" sigs.k8s.io/cluster-api
finish_build "${NAME}" "${STAMP}" cluster-api-manager

#!/usr/bin/env bash
# Builds kube-rbac-proxy at a pinned version from the Go module proxy into
# bin/kube-rbac-proxy.
#
# usage: hack/build-kube-rbac-proxy.sh [v0.19.1]
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

VERSION="${1:-v0.19.1}"
NAME="kube-rbac-proxy-${VERSION}"
STAMP="${VERSION} $(recipe_hash "${BASH_SOURCE[0]}" "${ROOT}/hack/lib.sh")"
begin_build "${NAME}" "${STAMP}" kube-rbac-proxy
log "building kube-rbac-proxy ${VERSION}"
printf 'module eksa-metrics.invalid/testbed/kube-rbac-proxy\n\ngo 1.24\n\nrequire github.com/brancz/kube-rbac-proxy %s\n' "${VERSION}" > go.mod
printf 'package testbed\n' > doc.go
go build -mod=mod -trimpath -ldflags "-s -w" -o "${OUT}/kube-rbac-proxy" github.com/brancz/kube-rbac-proxy/cmd/kube-rbac-proxy
finish_build "${NAME}" "${STAMP}" kube-rbac-proxy

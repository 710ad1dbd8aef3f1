#!/usr/bin/env bash
# Builds etcd at a pinned version from the Go module proxy into bin/etcd, with
# a tiny main package that calls etcdmain (what etcd's own binary does).
#
# usage: hack/build-etcd.sh [v3.6.8]
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

VERSION="${1:-v3.6.8}"
NAME="etcd-${VERSION}"
STAMP="${VERSION} $(recipe_hash "${BASH_SOURCE[0]}" "${ROOT}/hack/lib.sh")"
begin_build "${NAME}" "${STAMP}" etcd
log "building etcd ${VERSION}"
printf 'module eksa-metrics.invalid/testbed/etcd\n\ngo 1.24\n\nrequire go.etcd.io/etcd/server/v3 %s\n' "${VERSION}" > go.mod
cat > main.go <<'GO'
// Command etcd is etcd's own entry point, built from the Go module.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
go mod tidy
go build -trimpath -ldflags "-s -w" -o "${OUT}/etcd" .
finish_build "${NAME}" "${STAMP}" etcd

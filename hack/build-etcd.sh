#!/usr/bin/env bash
# Builds etcd at a pinned version from the Go module proxy into bin/etcd, with
# a tiny main package that calls etcdmain (what etcd's own binary does).
#
# usage: hack/build-etcd.sh [v3.6.8]
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

VERSION="${1:-v3.6.8}"
NAME="etcd-${VERSION}"
STAMP="${VERSION} $(recipe_hash "${BASH_SOURCE[0]}" "${ROOT}/hack/lib.sh")"
if cached "${NAME}" "${STAMP}"; then
  install_from_cache "${NAME}" etcd
  exit 0
fi
log "building etcd ${VERSION}"
WORK="$(gomod_dir "${NAME}")"
cd "${WORK}"
cat > go.mod <<MOD
module eksa-metrics.invalid/testbed/etcd

go 1.24

require go.etcd.io/etcd/server/v3 ${VERSION}
MOD
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
mkdir -p "${CACHE}/${NAME}"
go build -trimpath -ldflags "-s -w" -o "${CACHE}/${NAME}/etcd" .
printf '%s' "${STAMP}" > "${CACHE}/${NAME}.stamp"
install_from_cache "${NAME}" etcd
log "etcd ${VERSION} ready in bin/etcd"

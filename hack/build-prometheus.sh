#!/usr/bin/env bash
# Builds prometheus and promtool at a pinned version from the Go module proxy
# into bin/prometheus and bin/promtool, with one `go build` so that shared
# packages compile once.
#
# Prometheus 3.x is published as module versions v0.3MM.P (v0.316.0 is
# Prometheus 3.16.0); the release number comes from the module's VERSION file.
# Two build choices:
# - Not the release builds' builtinassets tag: it needs the React UI, which
#   npm builds and the module zip lacks. The UI pages answer with an error;
#   the HTTP API, /-/ready and /metrics, all the tests use, work.
# - Only the service discovery the tests configure (remove_all_sd with
#   enable_kubernetes_sd; static and file discovery are always in): the cloud
#   SDKs are most of the compile time.
#
# usage: hack/build-prometheus.sh [v0.316.0]
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

VERSION="${1:-v0.316.0}"
MODULE=github.com/prometheus/prometheus
NAME="prometheus-${VERSION}"
STAMP="${VERSION} $(recipe_hash "${BASH_SOURCE[0]}" "${ROOT}/hack/lib.sh")"
begin_build "${NAME}" "${STAMP}" prometheus promtool
log "building prometheus and promtool ${VERSION}"
upstream "${MODULE}" "${VERSION}"
if grep -q '^replace' "${UPSTREAM_GOMOD}"; then
  log "${MODULE}@${VERSION} has replace directives, which a requiring module does not inherit; teach this script about them"
  exit 1
fi
printf 'module eksa-metrics.invalid/testbed/prometheus\n\ngo %s\n\nrequire %s %s\n' "${GO_DIRECTIVE}" "${MODULE}" "${VERSION}" > go.mod
printf 'package testbed\n' > doc.go
go build -mod=mod -trimpath -tags remove_all_sd,enable_kubernetes_sd \
  -ldflags "-s -w $(version_ldflags "${VERSION}" "$(tr -d '[:space:]' < "${UPSTREAM_DIR}/VERSION")")" \
  -o "${OUT}/" "${MODULE}/cmd/prometheus" "${MODULE}/cmd/promtool"
finish_build "${NAME}" "${STAMP}" prometheus promtool

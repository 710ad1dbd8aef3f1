#!/usr/bin/env bash
# Builds VictoriaMetrics' vmagent (app/vmagent of
# github.com/VictoriaMetrics/VictoriaMetrics) at a pinned version from the Go
# module proxy into bin/vmagent. vmagent reads Prometheus scrape configs
# (-promscrape.config) and remote-writes (-remoteWrite.url), which is what
# the victoriametrics stack profile renders for.
#
# usage: hack/build-vmagent.sh [v1.151.0]
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

VERSION="${1:-v1.151.0}"
MODULE=github.com/VictoriaMetrics/VictoriaMetrics
NAME="vmagent-${VERSION}"
STAMP="${VERSION} $(recipe_hash "${BASH_SOURCE[0]}" "${ROOT}/hack/lib.sh")"
begin_build "${NAME}" "${STAMP}" vmagent
log "building vmagent ${VERSION}"
upstream "${MODULE}" "${VERSION}"
if grep -q '^replace' "${UPSTREAM_GOMOD}"; then
  log "${MODULE}@${VERSION} has replace directives, which a requiring module does not inherit; teach this script about them"
  exit 1
fi
printf 'module eksa-metrics.invalid/testbed/vmagent\n\ngo %s\n\nrequire %s %s\n' "${GO_DIRECTIVE}" "${MODULE}" "${VERSION}" > go.mod
printf 'package testbed\n' > doc.go
go build -mod=mod -trimpath \
  -ldflags "-s -w -X ${MODULE}/lib/buildinfo.Version=vmagent-${VERSION}" \
  -o "${OUT}/vmagent" "${MODULE}/app/vmagent"
finish_build "${NAME}" "${STAMP}" vmagent

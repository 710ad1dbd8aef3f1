#!/usr/bin/env bash
# Builds an OpenTelemetry Collector into bin/otelcol with the upstream
# builder (ocb, go.opentelemetry.io/collector/cmd/builder) at a pinned
# release: the prometheus receiver (what EKS Anywhere's ADOT package and the
# OpenTelemetry Operator's Target Allocator feed), the Prometheus remote-write
# exporter (how the e2e reads what the collector scraped) and the file, env
# and yaml config providers. Collector core modules are v1.x / v0.x of one
# release; contrib follows with its own patch number.
#
# The prometheus receiver registers Prometheus' service discovery through
# github.com/prometheus/prometheus/plugins, whose files honour the
# remove_all_sd / enable_<name>_sd build tags: like bin/prometheus, only the
# Kubernetes discovery the tests configure is compiled in (static, file and
# http discovery are imported directly), which leaves out the cloud SDKs,
# most of the compile time.
#
# usage: hack/build-otelcol.sh [v0.165.0 [v0.165.1 [v1.71.0]]]
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

VERSION="${1:-v0.165.0}"
CONTRIB="${2:-v0.165.1}"
STABLE="${3:-v1.71.0}"
NAME="otelcol-${VERSION}-${CONTRIB}"
STAMP="${VERSION} ${CONTRIB} ${STABLE} $(recipe_hash "${BASH_SOURCE[0]}" "${ROOT}/hack/lib.sh")"
begin_build "${NAME}" "${STAMP}" otelcol
log "building otelcol ${VERSION} (contrib ${CONTRIB})"
GOBIN="${WORK}/tools" go install go.opentelemetry.io/collector/cmd/builder@"${VERSION}"
C=github.com/open-telemetry/opentelemetry-collector-contrib
cat > builder-config.yaml <<YAML
dist:
  name: otelcol
  description: OpenTelemetry Collector for the eksa-metrics test bed
  version: ${VERSION#v}
  output_path: ${WORK}/dist
  build_tags: remove_all_sd,enable_kubernetes_sd
receivers:
  - gomod: ${C}/receiver/prometheusreceiver ${CONTRIB}
exporters:
  - gomod: ${C}/exporter/prometheusremotewriteexporter ${CONTRIB}
providers:
  - gomod: go.opentelemetry.io/collector/confmap/provider/envprovider ${STABLE}
  - gomod: go.opentelemetry.io/collector/confmap/provider/fileprovider ${STABLE}
  - gomod: go.opentelemetry.io/collector/confmap/provider/yamlprovider ${STABLE}
YAML
"${WORK}/tools/builder" --config=builder-config.yaml --ldflags="-s -w"
install -m 0755 "${WORK}/dist/otelcol" "${OUT}/otelcol"
finish_build "${NAME}" "${STAMP}" otelcol

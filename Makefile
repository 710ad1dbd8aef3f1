# eksa-metrics. `make help` lists the targets.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

GO       ?= go
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -s -w -X github.com/eksa-metrics/eksa-metrics/internal/cli.Version=$(VERSION)
UNIT_PKGS = ./cmd/... ./config/... ./internal/... ./pkg/... ./test/framework
# The packages with golden files (their tests named *Golden*; testutil.Golden's -update flag).
GOLDEN_PKGS = ./internal/cli ./pkg/render ./pkg/templates ./pkg/components ./pkg/spec
# controller-gen, pinned and cached like the test bed (hack/build-controller-gen.sh).
CONTROLLER_GEN ?= bin/controller-gen
FUZZTIME ?= 30s

.PHONY: help
help: ## Show this help
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z0-9_-]+:.*##/ {printf "  \033[36m%-14s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build bin/eksa-metrics (static: no cgo)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/eksa-metrics ./cmd/eksa-metrics

# The image: the static binary for linux/ARCH (the build above, when that is
# this machine) in a layer of its own, built without a container daemon or a
# base image (hack/image, internal/image). IMAGE names it in the archive.
ARCH     ?= $(shell $(GO) env GOARCH)
# IMAGE: the reference the archive names; hack/image defaults it to
# config.ImageRepository tagged with VERSION.
IMAGE    ?=
REVISION := $(shell git rev-parse HEAD 2>/dev/null || echo unknown)

.PHONY: image
image: ## Build the controller image as bin/eksa-metrics-image.tar (docker load, crane push, skopeo docker-archive:) and print its digest
	CGO_ENABLED=0 GOOS=linux GOARCH=$(ARCH) $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/image/linux-$(ARCH)/eksa-metrics ./cmd/eksa-metrics
	$(GO) run ./hack/image -binary bin/image/linux-$(ARCH)/eksa-metrics -arch $(ARCH) -version $(VERSION) -revision $(REVISION) $(if $(IMAGE),-tag $(IMAGE)) -o bin/eksa-metrics-image.tar

.PHONY: test
test: unit ## Run every test: unit, integration and end-to-end (what CI runs; the integration tests run while the end-to-end part of the test bed builds: hack/test.sh)
	hack/test.sh

.PHONY: test-cold
test-cold: ## make test as on a new machine: a clone of HEAD with empty test-bed, Go build and module caches (hack/test-cold.sh); run it when hack/ or the test phases change
	hack/test-cold.sh

.PHONY: unit
unit: ## Unit, golden and command tests (offline, seconds)
	$(GO) test -count=1 $(UNIT_PKGS)

.PHONY: testbed
testbed: ## Build (or take from the cache) etcd, Kubernetes 1.34 and 1.37, kube-rbac-proxy, Cluster API, cert-manager, Prometheus and the agents; install haproxy
	hack/testbed.sh

.PHONY: integration
integration: testbed image ## Tests against a real kube-apiserver and etcd with the real CRDs, and the image
	@$(MAKE) --no-print-directory integration-tests

# The integration tests alone, on the test bed as it is: two shards at once.
.PHONY: integration-tests
integration-tests:
	EKSA_METRICS_BIN=$(CURDIR)/bin hack/test-shards.sh ./test/integration/ 35m 'run=^TestController' 'skip=^TestController'

.PHONY: e2e
e2e: testbed ## Start the real components with what generate renders and scrape them
	@$(MAKE) --no-print-directory e2e-tests

# The end-to-end tests alone, on the test bed as it is.
.PHONY: e2e-tests
e2e-tests:
	EKSA_METRICS_BIN=$(CURDIR)/bin $(GO) test -count=1 -timeout 40m ./test/e2e/...

.PHONY: bench
bench: build testbed ## Benchmarks: in-process (render, kustomize build, validate fleets, verify), whole processes, the controller on a fleet of Clusters with API servers of their own, the day-two transition pairs
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 1s $(UNIT_PKGS)
	hack/bench.sh
	EKSA_METRICS_BIN=$(CURDIR)/bin $(GO) test -run '^$$' -bench 'ControllerFleet$$|Transitions$$' -benchtime 1x -timeout 60m ./test/integration/

.PHONY: fuzz
fuzz: ## Run each fuzz target for FUZZTIME (default 30s)
	$(GO) test -run '^$$' -fuzz '^FuzzLoad$$' -fuzztime $(FUZZTIME) ./pkg/spec
	$(GO) test -run '^$$' -fuzz '^FuzzMergeFeatureGates$$' -fuzztime $(FUZZTIME) ./pkg/kubeadm
	$(GO) test -run '^$$' -fuzz '^FuzzSetMetricsBindAddress$$' -fuzztime $(FUZZTIME) ./pkg/kubeproxy
	$(GO) test -run '^$$' -fuzz '^FuzzWriteDir$$' -fuzztime $(FUZZTIME) ./pkg/output

.PHONY: lint
lint: ## gofmt and go vet
	@out=$$(gofmt -l cmd config internal pkg test hack); if [[ -n "$$out" ]]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

.PHONY: verify
verify: lint ## lint, go.mod tidy, and golden files up to date
	$(GO) mod tidy && git diff --exit-code go.mod go.sum
	$(GO) test -count=1 -run Golden $(GOLDEN_PKGS)
	$(MAKE) generate && git diff --exit-code pkg/apis config

.PHONY: update-golden
update-golden: ## Rewrite golden files from the current renderer
	$(GO) test -count=1 -run Golden $(GOLDEN_PKGS) -args -update

.PHONY: generate
generate: ## Regenerate the API types' DeepCopy and the MetricsConfig CRD in config/crd (controller-gen, pinned)
	hack/build-controller-gen.sh
	$(CONTROLLER_GEN) object paths=./pkg/apis/...
	$(CONTROLLER_GEN) crd paths=./pkg/apis/... output:crd:dir=config/crd

.PHONY: clean
clean: ## Remove bin/ (the build cache in ~/.cache/eksa-metrics stays)
	rm -rf bin/

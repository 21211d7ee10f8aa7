# otelcol-relay. `make run` and `make test` are the two commands that matter; see README.md.
SHELL := /bin/bash
.DEFAULT_GOAL := build

GO        ?= go
# The toolchain is go.mod's `toolchain` line (a patch release with the standard
# library's security fixes, fetched from the module proxy once), even where the
# machine's go.env says GOTOOLCHAIN=local: make vuln fails on an unpatched one.
export GOTOOLCHAIN := auto
# One compile configuration for every go command here (build, lint, vet, the
# suites): cgo off, as the shipped binary is, and -trimpath. A package's compile
# cache entry depends on both, so before this a fresh machine compiled the whole
# dependency graph twice (the binary's way, then the tests' and golangci-lint's).
# The race detector needs cgo: hack/test.sh turns it on for that run only.
# Without DWARF: the binary is stripped (-s -w) and tests do not read it; it was
# compile time for nothing. GOFLAGS=... on the command line replaces all three.
export CGO_ENABLED := 0
export GOFLAGS := -trimpath -gcflags=all=-dwarf=false $(GOFLAGS)
# The compiler's GC target for the builds and the suites' compiles (hack/test.sh
# gives the test binaries, and so the relays they start, the caller's GOGC back).
# Cold, at 400 the compiler spent 5-10% fewer CPU-seconds on client-go and gRPC
# than at its default, for a heap it can afford; a cold CI run is CPU-bound.
# COMPILE_GOGC= leaves the default.
COMPILE_GOGC ?= 400
BUILD_ENV  = $(if $(COMPILE_GOGC),GOGC=$(COMPILE_GOGC))
BIN       := $(CURDIR)/bin
RELAY     := $(BIN)/otelcol-relay
# git describe on a tagged checkout; otherwise VERSION plus the commit.
VERSION   ?= $(shell git describe --tags --match 'v*' --dirty 2>/dev/null || \
               echo "$$(cat VERSION)-dev+$$(git rev-parse --short HEAD 2>/dev/null || echo unknown)")
REVISION  ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS   := -s -w -X main.version=$(VERSION)
# Prometheus's build tags: of its service discoveries, the prometheus receiver
# keeps kubernetes and dns (file and http always stay). The cloud SDKs the others
# link (AWS, Azure, GCE, OCI, Linode, ...) were a fifth of the binary and 23 MiB
# of RSS at idle; a scrape config that names one is refused at start, naming it.
BUILDTAGS := remove_all_sd,enable_kubernetes_sd,enable_dns_sd
# podman or docker, whichever is present.
CONTAINER ?= $(shell command -v podman 2>/dev/null || command -v docker 2>/dev/null)
# runc, not crun: crun fails here on hybrid cgroups and rlimits.
CONTAINER_FLAGS ?= $(if $(findstring podman,$(CONTAINER)),--runtime runc)
# The repository the manifests name (deploy/components/image, the one place for it).
DEPLOY_IMAGE := $(shell sed -n 's/^ *newName: *//p' deploy/components/image/kustomization.yaml)
IMAGE_REPO ?= $(DEPLOY_IMAGE)
IMAGE     ?= $(IMAGE_REPO):$(subst +,_,$(VERSION))
# `latest` moves only when HEAD is exactly a clean release tag.
RELEASE_TAG := $(shell git describe --tags --match 'v*' --exact-match --dirty 2>/dev/null | grep -v -- '-dirty$$')
# The architectures of the image's manifest list; the binaries are cross-compiled
# (CGO_ENABLED=0) and the Dockerfile has no RUN step, so nothing is emulated.
PLATFORMS ?= linux/amd64 linux/arm64
HOST_PLATFORM := $(shell $(GO) env GOOS)/$(shell $(GO) env GOARCH)
# File times and the creation date in the image come from the commit, not the
# clock. make image reuses podman's layer cache, and a cached layer keeps the
# file times of the build that made it; make release builds in a storage of its
# own, so the same commit gives the same image digest there (TestRelease).
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
TEST_TIMEOUT ?= 60m
ifneq ($(filter release sign,$(MAKECMDGOALS)),)
ifeq ($(shell [[ '$(VERSION)' =~ ^v[0-9]+\.[0-9]+\.[0-9]+$$ ]] && echo ok),)
$(error make $(filter release sign,$(MAKECMDGOALS)): VERSION="$(VERSION)" is not a release version: make release VERSION=vX.Y.Z on the checkout of tag vX.Y.Z)
endif
endif
comma := ,

.PHONY: print-image print-version release-check release sign build generate check-generate dashboards chart chart-docs run test test-deps unit deploy reliability e2e cluster vet lint bench cross sbom image test-image clean

## build: the static, stripped collector binary at bin/otelcol-relay.
build:
	@mkdir -p $(BIN)
	$(BUILD_ENV) $(GO) build -tags '$(BUILDTAGS)' -ldflags '$(LDFLAGS)' -o $(RELAY) ./cmd/otelcol-relay

## generate: regenerate cmd/otelcol-relay from builder-config.yaml with the pinned ocb
## (a Go tool dependency). It only writes sources: go.mod carries the requirements, see
## docs/dependencies.md for why ocb cannot resolve modules itself here.
## Then, with the pinned mdatagen, each component's internal/metadata (type, stability,
## telemetry builder), documentation.md and lifecycle/goroutine-leak tests from its
## metadata.yaml.
METADATA := $(wildcard components/*/metadata.yaml)
# What generate writes; check-generate fails if any of it differs from the commit.
GENERATED := cmd/ ':(glob)components/*/internal/metadata/**' ':(glob)components/*/documentation.md' \
             ':(glob)components/*/generated_*_test.go'
generate:
	@mkdir -p cmd/otelcol-relay
	@# ocb makes an empty temporary directory for its default output path before
	@# it reads output_path: in a TMPDIR of our own, so that none is left behind.
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
		echo "$(GO) tool builder --config builder-config.yaml --skip-get-modules --skip-compilation"; \
		TMPDIR=$$tmp $(GO) tool builder --config builder-config.yaml --skip-get-modules --skip-compilation
	@set -e; for m in $(METADATA); do \
		echo "mdatagen $$m"; (cd $$(dirname $$m) && $(GO) tool mdatagen metadata.yaml); \
	done

## check-generate: fail if `make generate` changes anything it writes.
check-generate: generate
	@git diff --exit-code -- $(GENERATED) || { echo "generated code differs from builder-config.yaml / metadata.yaml: run make generate and commit" >&2; exit 1; }
	@test -z "$$(git status --porcelain --untracked-files=all -- $(GENERATED))" || { git status --short -- $(GENERATED); echo "untracked generated files after make generate: commit them" >&2; exit 1; }

## dashboards: write the Grafana dashboards hack/dashboards builds into
## deploy/components/dashboards (its unit test fails when the two differ).
dashboards:
	$(GO) run ./hack/dashboards

## chart-docs: the values table of deploy/helm/otelcol-relay/README.md, written by
## hack/chartdocs from the chart's values.schema.json (its unit test fails when the
## two differ).
chart-docs:
	$(GO) run ./hack/chartdocs

## run: start the collector on config/local.yaml (OTLP on 127.0.0.1:4317/4318, debug output).
run: build
	exec $(RELAY) --config config/local.yaml

## test-deps: install the real peers the tests run against (Prometheus, podman, kube-apiserver).
test-deps:
	./hack/test-deps.sh

## test: build once, then every suite against that binary, two lanes side by side
## (hack/test.sh says which, and why); the Kubernetes peers build in the background
## while the suites that need none run. Each suite alone: make unit, deploy,
## reliability, e2e, cluster, test-image (the image suite); RUN=<regexp> runs the tests it matches, and
## TEST_FLAGS adds go test flags (-v), <SUITE>_FLAGS one suite's (CLUSTER_FLAGS=-shuffle=on).
## test/README.md says what each proves.
SUITES := unit deploy reliability e2e cluster
TEST_ENV = GO=$(GO) RELAY=$(RELAY) BUILDTAGS='$(BUILDTAGS)' TEST_TIMEOUT=$(TEST_TIMEOUT) RUN='$(RUN)' TEST_FLAGS='$(TEST_FLAGS)' COMPILE_GOGC='$(COMPILE_GOGC)'
test: build
	./hack/test-deps.sh packages
	$(TEST_ENV) ./hack/test.sh all

## unit: go test ./... : the unit tests beside the code (no binary, no peer).
unit:
	$(TEST_ENV) ./hack/test.sh unit

## race: make unit with UNIT_FLAGS=-race (what CI runs): the unit tests of components/
## and internal/ under the race detector, any race fails them; the other
## packages' tests without it. Needs the binary: bench's TestVariantConfigsResolve runs it.
.PHONY: race
race: build
	$(TEST_ENV) UNIT_FLAGS=-race ./hack/test.sh unit

$(filter-out unit,$(SUITES)): build
	./hack/test-deps.sh packages
	$(TEST_ENV) ./hack/test.sh $@

## vet: go vet over every package, the suites' tagged files included.
vet:
	$(GO) vet -tags '$(BUILDTAGS),$(subst $(eval) ,$(comma),$(filter-out unit,$(SUITES))),image' ./...

## vuln: govulncheck over the module (the build's tags) against a database built
## offline from the pinned golang.org/x/vulndb module, after a selftest on a fixture
## with a known reached vulnerability; fails when a vulnerable symbol is reached.
## `hack/vulncheck.sh binary` checks bin/otelcol-relay instead (docs/dependencies.md).
.PHONY: vuln
vuln:
	GO=$(GO) ./hack/vulncheck.sh

## lint: golangci-lint (pinned in hack/tools.sh, built outside go.mod and cached by
## version) with .golangci.yml; it must report nothing.
.PHONY: lint
lint:
	@lint=$$(GO=$(GO) ./hack/tools.sh golangci-lint) && $$lint run ./...

## bench: Go benchmarks of our components, and the relay benchmark's baseline,
## bench/results/baseline.md (bench/README.md says how to read it).
bench: build
	$(GO) test -run '^$$' -bench . -benchmem ./components/...
	@if [ -d bench ]; then OTELCOL_RELAY_BIN=$(RELAY) $(GO) run ./bench; fi

## cross: bin/<os>_<arch>/otelcol-relay for every platform of the image, each with its
## SBOM beside it (CycloneDX, from the module graph recorded in the binary, by the
## pinned cyclonedx-gomod Go tool; no serial or timestamp, so it is reproducible). The host's is a copy of `make build`'s (same flags);
## another architecture compiles everything once (~5 min cold), then hits the cache.
cross: build
	@set -e; for p in $(PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; out=$(BIN)/$${os}_$${arch}; mkdir -p $$out; \
		if [ "$$p" = "$(HOST_PLATFORM)" ]; then \
			cp $(RELAY) $$out/otelcol-relay; \
		else \
			echo "build $$p -> $$out/otelcol-relay"; \
			GOOS=$$os GOARCH=$$arch $(BUILD_ENV) $(GO) build -tags '$(BUILDTAGS)' -ldflags '$(LDFLAGS)' -o $$out/otelcol-relay ./cmd/otelcol-relay; \
		fi; \
		$(GO) tool cyclonedx-gomod bin -json -noserial -notimestamp -version $(VERSION) -output $$out/otelcol-relay.cdx.json $$out/otelcol-relay 2>/dev/null; \
	done

## sbom: bin/otelcol-relay.cdx.json for the host binary.
sbom: build
	$(GO) tool cyclonedx-gomod bin -json -noserial -notimestamp -version $(VERSION) -output $(BIN)/otelcol-relay.cdx.json $(RELAY) 2>/dev/null

## image: a FROM scratch image for each of PLATFORMS around the cross-compiled
## binaries, as one manifest list $(IMAGE) (nothing is pulled); also tagged
## $(IMAGE_REPO):latest when HEAD is a release tag. The CA bundle comes from Debian's
## ca-certificates at the version pinned in hack/ca-bundle.sh, not from this host.
image: cross
	@test -n "$(CONTAINER)" || { echo "make image needs podman or docker" >&2; exit 1; }
	./hack/ca-bundle.sh $(BIN)/ca-certificates.crt
ifneq ($(findstring podman,$(CONTAINER)),)
	@$(CONTAINER) $(CONTAINER_FLAGS) manifest rm $(IMAGE) >/dev/null 2>&1 || true
	@$(CONTAINER) $(CONTAINER_FLAGS) rmi $(IMAGE) >/dev/null 2>&1 || true
	$(CONTAINER) $(CONTAINER_FLAGS) manifest create $(IMAGE)
	@set -e; for p in $(PLATFORMS); do \
		$(CONTAINER) $(CONTAINER_FLAGS) build --quiet --platform $$p --manifest $(IMAGE) --timestamp $(SOURCE_DATE_EPOCH) \
			--build-arg VERSION=$(VERSION) --build-arg REVISION=$(REVISION) -f Dockerfile . ; \
	done
	$(if $(RELEASE_TAG),$(CONTAINER) $(CONTAINER_FLAGS) tag $(IMAGE) $(IMAGE_REPO):latest)
else
	@echo "make image: $(CONTAINER) builds the host's architecture only (a manifest list needs podman)" >&2
	$(CONTAINER) build --build-arg VERSION=$(VERSION) --build-arg REVISION=$(REVISION) -t $(IMAGE) -f Dockerfile .
endif

## test-image: run the image (the host's architecture from the manifest list) under a
## 512 MiB limit with a read-only root and check it works; inspect the manifest list:
## every platform present, its binary built for it, its SBOM and CA bundle.
test-image: image
	REGISTRY_BIN=$$(GO=$(GO) ./hack/tools.sh registry) && \
	OTELCOL_RELAY_BIN=$(RELAY) RELAY_IMAGE=$(IMAGE) RELAY_CONTAINER=$(CONTAINER) REGISTRY_BIN=$$REGISTRY_BIN \
		RELAY_PLATFORMS="$(PLATFORMS)" RELAY_VERSION=$(VERSION) \
		$(GO) test -tags image -count=1 -timeout 15m -v $(if $(RUN),-run '$(RUN)') $(TEST_FLAGS) ./test/image/

## release-check: that a release tag's artifacts name one version (docs/releasing.md):
## the tag, VERSION and the image tag in deploy/components/image at the tag, its
## CHANGELOG section, the binary built here (--version) and every SBOM beside it.
## TAG defaults to what git describe says of HEAD; a message names each mismatch.
TAG ?= $(shell git describe --tags --match 'v*' 2>/dev/null)
# The SBOMs it checks: the host binary's, and every platform's make cross left.
RELEASE_CHECK_SBOMS = $(BIN)/otelcol-relay.cdx.json $(wildcard $(BIN)/*_*/otelcol-relay.cdx.json)
release-check: sbom
	$(GO) run ./hack/releasecheck -tag '$(TAG)' -binary $(RELAY) $(RELEASE_CHECK_SBOMS)

## release: dist/$(VERSION)/ for VERSION=vX.Y.Z, on that tag's clean checkout
## (docs/releasing.md): the image for every platform as an OCI layout, each
## platform's SBOM, install-<name>.yaml per install with the image by digest,
## the Helm chart (make chart's), RELEASE-NOTES.md and SHA256SUMS. release-check
## runs first (TAG=VERSION) and must pass, and again at the end with the image's
## labels. Two runs on one commit write the same files.
release: TAG = $(VERSION)
# Before make cross, the platforms' SBOMs are an earlier build's (the previous
# release's, in the same checkout): the check at the end reads the new ones in dist/.
release: RELEASE_CHECK_SBOMS = $(BIN)/otelcol-relay.cdx.json
release: release-check cross
	./hack/ca-bundle.sh $(BIN)/ca-certificates.crt
	helm=$(HELM_BIN) && \
	VERSION='$(VERSION)' REVISION='$(REVISION)' SOURCE_DATE_EPOCH='$(SOURCE_DATE_EPOCH)' IMAGE_REPO='$(IMAGE_REPO)' \
		PLATFORMS='$(PLATFORMS)' BIN='$(BIN)' DEPLOY_IMAGE='$(DEPLOY_IMAGE)' CONTAINER='$(CONTAINER)' \
		CONTAINER_FLAGS='$(CONTAINER_FLAGS)' HELM="$$helm" ./hack/release.sh
	$(GO) run ./hack/releasecheck -tag '$(VERSION)' -binary $(RELAY) -layout dist/$(VERSION)/image \
		$(BIN)/otelcol-relay.cdx.json $(wildcard dist/$(VERSION)/sbom-*.cdx.json)

## chart: dist/otelcol-relay-X.Y.Z.tgz, the Helm chart deploy/helm/otelcol-relay linted
## and packaged by the pinned helm (hack/tools.sh helm; HELM=path to use another) as
## version X.Y.Z, the VERSION file's, with appVersion vX.Y.Z: the image tag the chart
## runs by default, the one deploy/components/image names. make release writes the
## same into dist/vX.Y.Z/ (docs/releasing.md).
CHART_VERSION := $(shell cat VERSION)
# The helm command: HELM if set (hack/test.sh exports the one it built), otherwise
# the pinned one, built into the tools cache on first use (minutes cold).
HELM_BIN       = $(or $(HELM),$$(GO=$(GO) ./hack/tools.sh helm))
chart:
	@helm=$(HELM_BIN) && HELM="$$helm" VERSION=v$(CHART_VERSION) SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) ./hack/chart.sh dist

## sign: after the release is pushed to IMAGE_REPO (docs/releasing.md), sign its
## image index and every platform's image by digest with cosign and COSIGN_KEY,
## attach each platform's SBOM as a CycloneDX attestation, and verify both with
## COSIGN_PUB as a user does. COSIGN_PASSWORD is the key's password.
COSIGN ?= cosign
sign:
	VERSION='$(VERSION)' IMAGE_REPO='$(IMAGE_REPO)' COSIGN='$(COSIGN)' COSIGN_KEY='$(COSIGN_KEY)' \
		COSIGN_PUB='$(COSIGN_PUB)' ./hack/sign.sh

## print-image, print-version: the image name `make image` tags, and the version in it.
print-image:
	@echo $(IMAGE)
print-version:
	@echo $(VERSION)

clean:
	rm -rf $(BIN)/otelcol-relay $(BIN)/otelcol-relay.cdx.json $(BIN)/ca-certificates.crt $(foreach p,$(PLATFORMS),$(BIN)/$(subst /,_,$(p)))

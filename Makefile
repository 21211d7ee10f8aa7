# otelcol-relay. `make run` and `make test` are the two commands that matter; see README.md.
SHELL := /bin/bash
.DEFAULT_GOAL := build

GO        ?= go
BIN       := $(CURDIR)/bin
RELAY     := $(BIN)/otelcol-relay
# git describe on a tagged checkout; otherwise VERSION plus the commit.
VERSION   ?= $(shell git describe --tags --match 'v*' --dirty 2>/dev/null || \
               echo "$$(cat VERSION)-dev+$$(git rev-parse --short HEAD 2>/dev/null || echo unknown)")
REVISION  ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS   := -s -w -X main.version=$(VERSION)
# podman or docker, whichever is present.
CONTAINER ?= $(shell command -v podman 2>/dev/null || command -v docker 2>/dev/null)
IMAGE     ?= localhost/otelcol-relay:$(subst +,_,$(VERSION))
TEST_TIMEOUT ?= 60m

.PHONY: build generate check-generate run test test-deps unit vet bench image test-image clean

## build: the static, stripped collector binary at bin/otelcol-relay.
build:
	@mkdir -p $(BIN)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(RELAY) ./cmd/otelcol-relay

## generate: regenerate cmd/otelcol-relay from builder-config.yaml with the pinned ocb
## (a Go tool dependency). It only writes sources: go.mod carries the requirements, see
## ../shared/docs/dependencies.md for why ocb cannot resolve modules itself here.
generate:
	@mkdir -p cmd/otelcol-relay
	$(GO) tool builder --config builder-config.yaml --skip-get-modules --skip-compilation

## check-generate: fail if `make generate` changes anything under cmd/.
check-generate: generate
	@git diff --exit-code -- cmd/ || { echo "cmd/otelcol-relay differs from builder-config.yaml: run make generate and commit" >&2; exit 1; }
	@test -z "$$(git status --porcelain --untracked-files=all -- cmd/)" || { git status --short -- cmd/; echo "untracked files under cmd/ after make generate" >&2; exit 1; }

## run: start the collector on config/local.yaml (OTLP on 127.0.0.1:4317/4318, debug output).
run: build
	exec $(RELAY) --config config/local.yaml

## test-deps: install the real peers the tests run against (Prometheus, podman, kube-apiserver).
test-deps:
	./hack/test-deps.sh

## test: build once, then every unit and end-to-end test against that binary. The
## end-to-end packages run one at a time (-p 1): they start real servers and load
## the collector, and two of them at once on a 2-core machine only add noise.
test: build test-deps
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./components/... ./internal/...
	OTELCOL_RELAY_BIN=$(RELAY) $(GO) test -p 1 -count=1 -timeout $(TEST_TIMEOUT) ./test/...

## unit: the fast tests only (no binary, no peers).
unit:
	$(GO) test -count=1 ./components/...

vet:
	$(GO) vet ./...

## bench: Go benchmarks of our components, and the relay benchmark into bench/results/.
bench: build
	$(GO) test -run '^$$' -bench . -benchmem ./components/...
	@if [ -d bench ]; then OTELCOL_RELAY_BIN=$(RELAY) $(GO) run ./bench; fi

## image: a FROM scratch image around bin/otelcol-relay (nothing is pulled).
image: build
	@test -n "$(CONTAINER)" || { echo "make image needs podman or docker" >&2; exit 1; }
	cp /etc/ssl/certs/ca-certificates.crt $(BIN)/ca-certificates.crt
	$(CONTAINER) build --build-arg VERSION=$(VERSION) --build-arg REVISION=$(REVISION) -t $(IMAGE) -f Dockerfile .

## test-image: run the image under a 512 MiB limit with a read-only root and check it works.
test-image: image
	OTELCOL_RELAY_BIN=$(RELAY) RELAY_IMAGE=$(IMAGE) RELAY_CONTAINER=$(CONTAINER) \
		$(GO) test -tags image -count=1 -timeout 15m -v ./test/image/

clean:
	rm -rf $(BIN)/otelcol-relay $(BIN)/ca-certificates.crt

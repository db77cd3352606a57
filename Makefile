# trawler: `make dev` runs the whole product locally, `make test` runs every test.
# Both provision what they need (test binaries, redis-server) on first use.

SHELL := /bin/bash
GO ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)
# Per-step limits keep a stuck step from eating CI's 90 minutes.
SETUP_TIMEOUT ?= 50m
VET_TIMEOUT ?= 15m
TEST_TIMEOUT ?= 40m
RACE_TIMEOUT ?= 30m
# The most concurrent packages run their tests under the race detector
# (which needs cgo) instead of in the plain step.
RACE_PKGS := ./operator/ ./sandbox/...
FUZZTIME ?= 60s
# Everything builds static (CGO off), tests included, so the test that
# builds the binary reuses the test build's cache instead of compiling
# every package a second time.
export CGO_ENABLED := 0

.PHONY: all build dev test testbin vet unit bench fuzz generate verify-generate clean

all: build

## build: the static trawler binary in bin/
build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/trawler .

## testbin: build the sandbox's binaries (kube-apiserver, etcd, ...) if missing
testbin:
	@echo "== testbin: building sandbox binaries if missing (cold: ~12-15 min on 2 cores)"
	timeout $(SETUP_TIMEOUT) hack/setup-testenv.sh

## dev: run trawler against a local sandbox cluster; writes .dev/env; Ctrl-C stops all
dev: testbin build
	bin/trawler dev

## test: provision, then go vet and every unit and integration test (operator and sandbox under -race)
test: testbin
	@echo "== vet"
	timeout $(VET_TIMEOUT) $(GO) vet ./...
	@echo "== test"
	timeout $(TEST_TIMEOUT) $(GO) test -timeout $(TEST_TIMEOUT) $$($(GO) list ./... | grep -v -e '/operator$$' -e '/sandbox')
	@echo "== race: $(RACE_PKGS)"
	CGO_ENABLED=1 timeout $(RACE_TIMEOUT) $(GO) test -race -timeout $(RACE_TIMEOUT) $(RACE_PKGS)

## bench: the benchmarks named by the issues (not run by `make test`)
bench: testbin
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 60m ./api/ ./store/ ./operator/

## fuzz: each fuzz target for FUZZTIME
fuzz:
	@for target in $$($(GO) test -list '^Fuzz' ./api/ | grep '^Fuzz'); do \
		echo "== fuzz $$target"; \
		$(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) ./api/ || exit 1; \
	done

## generate: regenerate deepcopy, clients, listers, informers and CRDs
generate:
	hack/update-codegen.sh

## verify-generate: fail if generated code is stale
verify-generate:
	hack/update-codegen.sh --verify

clean:
	rm -rf bin .dev

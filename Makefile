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
# The operator's tests run as two processes, each with its own sandbox
# cluster. The second runs the tests that mark themselves besideOthers
# (they mostly wait on simulated crawls and run in parallel) and, before
# them, three of the longest sequential ones, so that both processes take
# about as long; the first runs all others, a new test included. In one
# process the parallel tests waited for every sequential one to end.
OPERATOR_SECOND := ^(TestNewCrawlPreemptsHigherInstances|TestRedisPausedWithoutCrawlersAndResumed|TestOutagesSlowOnlyTheCrawlsThatNeedThem|TestCrawlGoesThroughItsProxy|TestCrawlLetInAfterAMinuteIsRecordedRunning|TestCrawlRunsOnItsChannel|TestExecQuotaGiftedThenExtra|TestKillOperatorAtRandomPoints|TestLeaderFailover|TestLeaderHandoffLeavesNoStaleControlWrites|TestOrgConcurrencyLimit|TestProfileBrowserPodAndExpiry|TestV1CancelIsFast|TestV1CrawlCompletes|TestV1CrawlerExitIsLogged)$$
FUZZTIME ?= 60s
FUZZ_PKGS := ./api/ ./jsregex/
# Everything builds static (CGO off), tests included, so the test that
# builds the binary reuses the test build's cache instead of compiling
# every package a second time.
export CGO_ENABLED := 0

.PHONY: all build dev test testbin vet unit bench fuzz generate verify-generate clean kind-up kind-down

all: build

## build: the static trawler binary in bin/
build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/trawler .

## testbin: build the sandbox's binaries (kube-apiserver, etcd, ...) if missing
testbin:
	@echo "== testbin: building sandbox binaries if missing (cold: ~20-25 min on 2 cores)"
	timeout $(SETUP_TIMEOUT) hack/setup-testenv.sh

## dev: run trawler against a local sandbox cluster; writes .dev/env; Ctrl-C stops all
dev: testbin build
	bin/trawler dev

## test: provision, then go vet and every unit and integration test (operator and sandbox under -race)
# The plain and race steps (the operator's in two) run side by side: all
# spend most of their time waiting on sandbox clusters, so on 2 cores they
# overlap well. Each step's output is printed whole when it ends.
test: testbin
	@echo "== vet"
	timeout $(VET_TIMEOUT) $(GO) vet ./...
	$(MAKE) --no-print-directory --output-sync=target -j3 test-plain test-race test-race-second

.PHONY: test-plain test-race test-race-second
test-plain:
	@echo "== test"
	timeout $(TEST_TIMEOUT) $(GO) test -timeout $(TEST_TIMEOUT) $$($(GO) list ./... | grep -v -e '/operator$$' -e '/sandbox')

test-race:
	@echo "== race: $(RACE_PKGS) (the operator's but OPERATOR_SECOND)"
	CGO_ENABLED=1 timeout $(RACE_TIMEOUT) $(GO) test -race -timeout $(RACE_TIMEOUT) -skip '$(OPERATOR_SECOND)' $(RACE_PKGS)

test-race-second:
	@echo "== race: ./operator/ OPERATOR_SECOND"
	CGO_ENABLED=1 timeout $(RACE_TIMEOUT) $(GO) test -race -timeout $(RACE_TIMEOUT) -run '$(OPERATOR_SECOND)' ./operator/

## bench: the benchmarks named by the issues (not run by `make test`)
# The operator's include the scale harness at 1,000 and 3,000 crawls
# (docs/benchmarks.md), about half an hour on 2 cores.
bench: testbin
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 120m ./api/ ./store/ ./operator/ ./s3/

## fuzz: each fuzz target of FUZZ_PKGS for FUZZTIME
fuzz:
	@for pkg in $(FUZZ_PKGS); do \
		for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "== fuzz $$pkg $$target"; \
			$(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
		done; \
	done

## generate: regenerate deepcopy, clients, listers, informers and CRDs
generate:
	hack/update-codegen.sh

## verify-generate: fail if generated code is stale
verify-generate:
	hack/update-codegen.sh --verify

KIND_CLUSTER := trawler
KIND_CONTEXT := kind-$(KIND_CLUSTER)

## kind-up: crawls on a kind cluster, trawler + MongoDB + S3 in docker compose (needs docker, kind, helm)
kind-up:
	kind get clusters | grep -qx '$(KIND_CLUSTER)' || kind create cluster --config deploy/kind/cluster.yaml
	mkdir -p .kind
	@# trawler runs in the control-plane node's network namespace, where the apiserver is 127.0.0.1:6443.
	kind get kubeconfig --name $(KIND_CLUSTER) --internal \
		| sed 's#server: https://.*:6443#server: https://127.0.0.1:6443#' > .kind/kubeconfig
	@# The chart without its Deployment and stores: CRDs, RBAC, PriorityClasses and the crawler
	@# namespace's objects; crawler pods upload to the compose S3 server on the node's address.
	node_ip=$$(docker inspect -f '{{.NetworkSettings.Networks.kind.IPAddress}}' $(KIND_CLUSTER)-control-plane) && \
	helm upgrade --install trawler deploy/helm/trawler --kube-context $(KIND_CONTEXT) \
		--namespace trawler --create-namespace --set trawler_num_replicas=0 \
		--set mongo_local=false --set s3_local=false \
		--set "storages[0].name=default" --set "storages[0].access_key=ADMIN" --set "storages[0].secret_key=PASSW0RD" \
		--set "storages[0].bucket_name=btrix-data" --set "storages[0].endpoint_url=http://$$node_ip:7070/" \
		--set "storages[0].access_endpoint_url=http://127.0.0.1:7070/btrix-data/" && \
	KIND_NODE_IP=$$node_ip docker compose -f deploy/compose.yaml up --detach --build --wait
	@echo "trawler: http://127.0.0.1:8000 (admin@example.com / PASSW0RD!); make kind-down removes it all"

## kind-down: remove the compose services, their volumes and the kind cluster
kind-down:
	-KIND_NODE_IP=none docker compose -f deploy/compose.yaml down --volumes
	kind delete cluster --name $(KIND_CLUSTER)
	rm -rf .kind

clean:
	rm -rf bin .dev

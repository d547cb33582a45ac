# memif-agent build, test and demo entry points. Every target installs what
# it needs (scripts/install-deps.sh asks apt for what is missing).

GO        ?= go
# Go's own installer puts it in /usr/local/go/bin, which a fresh machine's
# PATH lacks; the targets and the scripts they run find it there too.
export PATH := $(PATH):/usr/local/go/bin
BIN       := $(CURDIR)/bin
# The end-to-end suites that run kubelet's real device manager live in their
# own module so the agent never depends on k8s.io/kubernetes.
E2E_MODULE := test/kubelet
GOFILES    = $(shell git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './bin/*')
FUZZTIME  ?= 10s

.PHONY: all build lint test test-unit test-e2e soak bench-smoke fuzz bench demo image generate deps peers clean

all: build

# scripts/vpp.sh makes the VPP the tests and the demo run available (the
# commit-keyed cache, filled from shared/vpp beside the clone).
deps:
	@scripts/install-deps.sh
	@scripts/vpp.sh >/dev/null

# Kubernetes, etcd and containerd for the cluster suites and the demo, built
# once per version into a cache (scripts/peers.sh; PEERS_CACHE moves it);
# containerd 1.7 besides, for the dra suite's restart case on containerd 1.x
# with CDI.
peers:
	@scripts/peers.sh >/dev/null
	@scripts/peers.sh containerd17 >/dev/null

# memif-agent --version prints the version and commit of the checkout
# (scripts/version.sh: git describe --tags --always --dirty).
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$$(scripts/version.sh ldflags)" -o $(BIN)/ ./cmd/...

# staticcheck (dead code, deprecated calls, always-true conditions) is
# built from its module by go run, at the version pinned here, and cached by
# Go's build cache like the tests.
STATICCHECK = $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2

# vet builds with -race as make test does, so that the packages it compiles
# are the ones the tests reuse from Go's build cache (on a fresh machine
# the Kubernetes dependencies are otherwise compiled once more).
lint: deps
	$(GO) vet -race ./...
	cd $(E2E_MODULE) && $(GO) vet -race ./...
	@unformatted="$$(gofmt -l $(GOFILES))"; \
	if [ -n "$$unformatted" ]; then echo "gofmt needed on:"; echo "$$unformatted"; exit 1; fi
	scripts/generate.sh --check
	scripts/chart.sh --check
	$(STATICCHECK) ./...
	cd $(E2E_MODULE) && $(STATICCHECK) ./...

test: deps peers test-unit test-e2e bench-smoke fuzz

# The CRI source's suite runs containerd 2.x from the peers cache, the
# chart's tests (k8s/) helm. The test of two agents in one process runs
# without -race (see plugins/memifwiring/vpp_span_test.go).
test-unit:
	scripts/peers.sh containerd helm >/dev/null
	$(GO) test -race -count=1 ./...
	$(GO) test -count=1 -run '^TestL3NetworkAcrossTwoVPPs$$' ./plugins/memifwiring

# The suites that run the agent binary take it from bin/ (MEMIF_AGENT_BIN)
# rather than building their own copies.
test-e2e: build peers
	cd $(E2E_MODULE) && MEMIF_AGENT_BIN=$(BIN) $(GO) test -race -count=1 -timeout 40m ./...

# The soak (test/kubelet/soak): two nodes, memif pods coming and going
# while faults happen at random, the invariants checked all along; a table
# of the run at the end. It runs only when SOAK_DURATION is set, as here:
# make test leaves it out while its short run still reports violations.
# SOAK_RATE, SOAK_MAX_PODS and SOAK_SEED (to replay a run) pass through. SOAK_TIMEOUT bounds the run, setup and teardown
# included.
SOAK_DURATION ?= 30m
SOAK_TIMEOUT  ?= 90m
soak: build peers
	cd $(E2E_MODULE) && SOAK_DURATION=$(SOAK_DURATION) MEMIF_AGENT_BIN=$(BIN) $(GO) test -race -count=1 -v -run '^TestSoak$$' -timeout $(SOAK_TIMEOUT) ./soak

# Every benchmark of both modules runs once (-benchtime=1x), with the peers
# its tests need, so that a benchmark that no longer works fails make test;
# the figures come from make bench. Only the packages that have benchmarks
# are built, with -race as the tests are, so Go's build cache serves them.
BENCH_DIRS      = $(sort $(dir $(shell grep -rl --include='*_test.go' --exclude-dir=_out --exclude-dir=bin '^func Benchmark' .)))
BENCH_SMOKE     := -race -count=1 -run '^$$' -bench . -benchtime=1x
bench-smoke: build peers
	$(GO) test $(BENCH_SMOKE) $(filter-out ./$(E2E_MODULE)/%,$(BENCH_DIRS))
	cd $(E2E_MODULE) && MEMIF_AGENT_BIN=$(BIN) $(GO) test $(BENCH_SMOKE) -timeout 40m $(patsubst ./$(E2E_MODULE)/%,./%,$(filter ./$(E2E_MODULE)/%,$(BENCH_DIRS)))

# Each fuzz target runs for FUZZTIME on top of its committed seed corpus.
fuzz:
	@scripts/fuzz.sh $(FUZZTIME)

# Every benchmark of both modules, each with its baseline in the same run;
# raw output under _out/bench/ (see BENCHMARKS.md).
bench: deps build peers
	scripts/bench.sh

# DEMO_ARGS are the demo's flags, for example DEMO_ARGS=--nodes=2 (a
# second node with its own VPP and agent, the networks spanning both).
demo: deps build peers
	cd $(E2E_MODULE) && $(GO) run ./cmd/demo --bin $(BIN) $(DEMO_ARGS)

image: build
	scripts/image.sh

# The chart's copies of the plugins' config examples and the manifests in
# k8s/ are rendered from deploy/helm/memif-agent (scripts/chart.sh).
generate:
	scripts/generate.sh
	scripts/chart.sh

clean:
	rm -rf $(BIN)
	$(GO) clean -testcache

# mcpgate — see README.md. `make demo` and `make test` are the two set-up commands.
GO        ?= go
BIN       ?= bin/mcpgate
FUZZTIME  ?= 20s
# Packages with concurrency run under the race detector (docs/decisions.md#ci).
RACE_PKGS ?= ./internal/relay/... ./internal/audit/... ./internal/admin/... ./internal/pipeline/... ./internal/httpfront/... ./internal/multi/... ./internal/upstream/... ./gate/... ./ctxapi/...
EVERYTHING_SERVER ?= github.com/modelcontextprotocol/go-sdk/conformance/everything-server@v1.8.0

# Packages with golden files under testdata/ (each defines -update).
GOLDEN_PKGS ?= ./engine/ ./internal/audit/ ./cmd/mcpgate/

.PHONY: all build demo deps test test-policies test-unit test-race fuzz bench golden load conformance vet clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/mcpgate

## demo: build mcpgate and run every kind of decision on the built-in sample server.
demo: build
	./$(BIN) demo

## deps: the end-to-end test bed — npm servers and clients, and the go-sdk reference server.
deps: testdata/e2e/node_modules/.installed
	@test -x "$$($(GO) env GOPATH)/bin/everything-server" || GOFLAGS= $(GO) install $(EVERYTHING_SERVER)

testdata/e2e/node_modules/.installed: testdata/e2e/package.json testdata/e2e/package-lock.json
	cd testdata/e2e && npm ci --no-audit --no-fund
	@touch $@

## test: everything CI runs except fuzzing and conformance.
test: deps vet test-policies test-unit test-race

## test-policies: the policy tests (*_test.js) of the shipped set and of every example.
test-policies:
	$(GO) run ./cmd/mcpgate test policies
	$(GO) run ./cmd/mcpgate test policies/examples

vet:
	$(GO) vet ./...

test-unit:
	$(GO) test -count=1 ./...

test-race:
	$(GO) test -count=1 -race $(RACE_PKGS)

## fuzz: run each fuzz target for FUZZTIME (retries Go 1.26's fuzztime-boundary flake once).
fuzz:
	FUZZTIME=$(FUZZTIME) bash scripts/fuzz.sh

## golden: rewrite the golden files; review the change with git diff.
golden:
	$(GO) test -count=1 $(GOLDEN_PKGS) -update

## bench: performance figures (reported, never asserted).
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./engine/ ./gate/
	$(GO) test -run '^$$' -bench . -benchtime 20x -timeout 20m ./internal/audit/

## load: the bounded HTTP load test (loopback only).
load:
	MCPGATE_LOAD=1 $(GO) test -count=1 -timeout 5m -run TestLoadHTTP -v ./internal/e2e/

## conformance: the MCP conformance suite against the HTTP front.
conformance: build deps
	bash scripts/conformance.sh

clean:
	rm -rf bin testdata/e2e/node_modules

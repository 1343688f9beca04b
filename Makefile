# mcpgate — see README.md. `make demo` and `make test` are the two set-up commands.
GO        ?= go
BIN       ?= bin/mcpgate
FUZZTIME  ?= 20s
# Packages with concurrency run under the race detector, and only there; every other
# package runs once without it (docs/decisions.md#ci).
RACE_PKGS ?= ./internal/relay/... ./internal/translate/... ./internal/audit/... ./internal/admin/... ./internal/pipeline/... ./internal/httpfront/... ./internal/multi/... ./internal/upstream/... ./internal/remote/... ./internal/gateway/... ./internal/budget/... ./internal/capture/... ./internal/logging/... ./gate/... ./ctxapi/... ./internal/ratelimit/... ./internal/oauth/... ./internal/guardrail/... ./internal/motion/...
# The test bed's versions live in two places only: this Go module version, and the npm
# packages of testdata/e2e/package.json (installed from its lockfile).
EVERYTHING_SERVER_VERSION ?= v1.8.0
EVERYTHING_SERVER := github.com/modelcontextprotocol/go-sdk/conformance/everything-server@$(EVERYTHING_SERVER_VERSION)
TESTBED_BIN := testdata/e2e/bin
# The OpenID provider of the OAuth tests (zitadel's example server; .ci/run starts it).
OIDC_SERVER_VERSION ?= v3.52.0
OIDC_SERVER := github.com/zitadel/oidc/v3/example/server@$(OIDC_SERVER_VERSION)
# The OPA server of the guardrail tests (.ci/run starts it with testdata/e2e/opa).
# staticcheck, run by make vet over every package and its tests.
STATICCHECK_VERSION ?= v0.8.2
OPA_VERSION ?= v1.22.3
OPA := github.com/open-policy-agent/opa@$(OPA_VERSION)
# The AuthZEN PDP of the guardrail tests (OpenFGA, its AuthZEN API experimental;
# .ci/run starts it in memory). The longest build of the test bed: about 10 minutes.
OPENFGA_VERSION ?= v1.22.1
OPENFGA := github.com/openfga/openfga/cmd/openfga@$(OPENFGA_VERSION)
# The OCI registry of the policy-bundle fleet test (the distribution registry; the
# test starts it, storing in memory).
REGISTRY_VERSION ?= v3.1.2
REGISTRY := github.com/distribution/distribution/v3/cmd/registry@$(REGISTRY_VERSION)

# Packages with golden files under testdata/ (each defines -update).
GOLDEN_PKGS ?= ./engine/ ./internal/audit/ ./internal/pipeline/ ./cmd/mcpgate/

# The version stamp of --version and serverInfo: git describe of the newest v* tag
# ("v1.2.0", "v1.2.0-3-g0123abc-dirty"), or "dev" in a clone without tags or outside
# git; COMMIT is the commit, "-dirty" with uncommitted changes, empty outside git.
VERSION ?= $(shell git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell c=$$(git rev-parse --short=12 HEAD 2>/dev/null) && { git diff --quiet HEAD -- 2>/dev/null || c=$$c-dirty; echo $$c; })
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT)
PREFIX  ?= /usr/local
# helm for make deploy-check, built from the Go module proxy (no binary download).
HELM_VERSION ?= v3.22.0
HELM := $(CURDIR)/bin/tools/helm-$(HELM_VERSION)

# The gate's slow tables run once without the race detector and skip under it: what
# they drive is JavaScript inside goja, where the detector sees nothing of their own.
GATE_SLOW ?= ^(TestRunaways|TestNativeBounds|TestWordCountArgument|TestReplaceGuardLimits|TestHeapWatchdog|TestStringDoubling|TestRejectionMessageBounded|TestGarbageDoesNotTripTheHeapLimit)$$

.PHONY: all build install release image deploy-check demo deps test test-policies test-unit test-e2e test-race test-gate-slow console-notice skip-notices fuzz bench golden load conformance vet clean

all: build

build:
	@test -x $(BIN) || echo "compiling $(BIN) (the first build fetches and compiles the dependencies: a few minutes)..."
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/mcpgate

## install: the binary to $(DESTDIR)$(PREFIX)/bin, the shipped policies and their
## examples to $(PREFIX)/share/mcpgate/policies (copy them to /etc/mcpgate/policies).
## The installed binary is stripped (-s -w), as the release's is.
install:
	$(GO) build -ldflags '-s -w $(LDFLAGS)' -o $(BIN)-stripped ./cmd/mcpgate
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/mcpgate/policies/examples
	install -m 0755 $(BIN)-stripped $(DESTDIR)$(PREFIX)/bin/mcpgate
	install -m 0644 policies/*.js $(DESTDIR)$(PREFIX)/share/mcpgate/policies/
	install -m 0644 policies/examples/*.js $(DESTDIR)$(PREFIX)/share/mcpgate/policies/examples/
	install -m 0644 LICENSE NOTICE $(DESTDIR)$(PREFIX)/share/mcpgate/

## release: reproducible archives for RELEASE_PLATFORMS in dist/, with SHA256SUMS.
release:
	VERSION='$(VERSION)' COMMIT='$(COMMIT)' bash scripts/release.sh

## image: the container image mcpgate:$(VERSION) from Containerfile (podman or buildah).
image:
	VERSION='$(VERSION)' COMMIT='$(COMMIT)' bash scripts/image.sh

## deploy-check: a release archive built twice (same bytes), the image (podman or
## buildah: apt-get install podman), the Helm chart (helm lint, helm template), the
## service units and the licence files.
deploy-check: $(HELM)
	MCPGATE_DEPLOY_CHECK=1 HELM=$(HELM) $(GO) test -count=1 -timeout 30m -run 'TestLicence|TestSystemd|TestLaunchd|TestContainerfile|TestChart|TestDeploy|TestMakeInstall' -v ./cmd/mcpgate/

$(HELM):
	GOFLAGS= GOBIN=$(CURDIR)/bin/tools $(GO) install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)
	mv $(CURDIR)/bin/tools/helm $@

## demo: build mcpgate and run every kind of decision on the built-in sample server.
demo: build
	./$(BIN) demo

## deps: the end-to-end test bed — npm servers, clients and the conformance suite, the
## go-sdk reference server, the OpenID provider, OPA, OpenFGA and the distribution
## registry, and staticcheck, each at its pinned version.
deps: $(TESTBED_BIN)/.staticcheck-$(STATICCHECK_VERSION) testdata/e2e/node_modules/.installed $(TESTBED_BIN)/.everything-server-$(EVERYTHING_SERVER_VERSION) $(TESTBED_BIN)/.oidc-server-$(OIDC_SERVER_VERSION) $(TESTBED_BIN)/.opa-$(OPA_VERSION) $(TESTBED_BIN)/.openfga-$(OPENFGA_VERSION) $(TESTBED_BIN)/.registry-$(REGISTRY_VERSION)

$(TESTBED_BIN)/.openfga-$(OPENFGA_VERSION):
	GOFLAGS= GOBIN=$(CURDIR)/$(TESTBED_BIN) $(GO) install $(OPENFGA)
	@rm -f $(TESTBED_BIN)/.openfga-*
	@touch $@

$(TESTBED_BIN)/.registry-$(REGISTRY_VERSION):
	GOFLAGS= GOBIN=$(CURDIR)/$(TESTBED_BIN) $(GO) install $(REGISTRY)
	@rm -f $(TESTBED_BIN)/.registry-*
	@touch $@

$(TESTBED_BIN)/.opa-$(OPA_VERSION):
	GOFLAGS= GOBIN=$(CURDIR)/$(TESTBED_BIN) $(GO) install $(OPA)
	@rm -f $(TESTBED_BIN)/.opa-*
	@touch $@

$(TESTBED_BIN)/.oidc-server-$(OIDC_SERVER_VERSION):
	mkdir -p $(TESTBED_BIN)/.oidc && GOFLAGS= GOBIN=$(CURDIR)/$(TESTBED_BIN)/.oidc $(GO) install $(OIDC_SERVER)
	mv $(TESTBED_BIN)/.oidc/server $(TESTBED_BIN)/oidc-server && rmdir $(TESTBED_BIN)/.oidc
	@rm -f $(TESTBED_BIN)/.oidc-server-*
	@touch $@

$(TESTBED_BIN)/.staticcheck-$(STATICCHECK_VERSION):
	GOFLAGS= GOBIN=$(CURDIR)/$(TESTBED_BIN) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	@rm -f $(TESTBED_BIN)/.staticcheck-*
	@touch $@

$(TESTBED_BIN)/.everything-server-$(EVERYTHING_SERVER_VERSION):
	GOFLAGS= GOBIN=$(CURDIR)/$(TESTBED_BIN) $(GO) install $(EVERYTHING_SERVER)
	@rm -f $(TESTBED_BIN)/.everything-server-*
	@touch $@

testdata/e2e/node_modules/.installed: testdata/e2e/package.json testdata/e2e/package-lock.json
	cd testdata/e2e && npm ci --no-audit --no-fund
	@touch $@

## test: everything CI runs except fuzzing and conformance. Each package runs once.
test: deps vet test-policies test-unit test-e2e test-gate-slow test-race console-notice skip-notices

## test-policies: the policy tests (*_test.js) of the shipped set and of every example.
test-policies: build
	./$(BIN) test policies
	./$(BIN) test policies/examples

## vet: go vet, and staticcheck over every package and its tests (make deps builds it).
vet:
	$(GO) vet ./...
	$(TESTBED_BIN)/staticcheck -tests ./...

## test-unit: every package outside RACE_PKGS and internal/e2e, 15 minutes at most.
test-unit:
	$(GO) test -count=1 -timeout 15m $(filter-out $(shell $(GO) list $(RACE_PKGS) ./internal/e2e),$(shell $(GO) list ./...))

## test-e2e: the end-to-end tests (the real binary, SDK clients and servers). About 5
## minutes on an idle 2-core machine and past 15 on one busy with other work (load 20),
## so the package gets 45; its drivers have limits of their own, so a hang still fails
## within minutes.
test-e2e:
	$(GO) test -count=1 -timeout 45m ./internal/e2e

test-race:
	$(GO) test -count=1 -race $(RACE_PKGS)

## test-gate-slow: the gate's runaway and native-bound tables, once, without -race.
test-gate-slow:
	$(GO) test -count=1 -run '$(GATE_SLOW)' ./gate/

# console-notice: go test hides a skip; say so when the browser test could not run.
console-notice:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	  echo "NOTICE: chromium is not installed, so TestConsoleE2E (the audit console in a browser) was SKIPPED; apt-get install chromium to run it"
	@test -n "$$MCPGATE_TEST_OIDC_ISSUER" || \
	  echo "NOTICE: MCPGATE_TEST_OIDC_ISSUER is not set, so TestOAuthRealServer and TestOAuthAudienceRealServer (the SDK clients and the audience checks against a real OpenID provider) were SKIPPED; .ci/run starts $(TESTBED_BIN)/oidc-server for it (internal/testsvc)"

# skip-notices: the end-to-end tests that skip without a service, each named with how
# to get it (README "Test services"); CI sets them all, and a missing one fails there.
skip-notices:
	@command -v haproxy >/dev/null 2>&1 || \
	  echo "NOTICE: haproxy is not installed, so TestHAProxyReplicas (two replicas behind deploy/haproxy.cfg) was SKIPPED; apt-get install haproxy to run it"
	@test -n "$$MCPGATE_TEST_REDIS_URL" || \
	  echo "NOTICE: MCPGATE_TEST_REDIS_URL is not set, so TestReplicasShareState (replicas sharing Redis and PostgreSQL) and the Redis rate-limit tests were SKIPPED; see README \"Test services\""
	@test -n "$$MCPGATE_TEST_POSTGRES_URL" || \
	  echo "NOTICE: MCPGATE_TEST_POSTGRES_URL is not set, so TestReplicasShareState and TestAuditPostgres were SKIPPED; see README \"Test services\""
	@test -n "$$MCPGATE_LOAD" || \
	  echo "NOTICE: TestLoadHTTP (the bounded HTTP load test) was SKIPPED: it runs with make load"

## fuzz: run each fuzz target for FUZZTIME (retries Go 1.26's fuzztime-boundary flake once).
fuzz:
	FUZZTIME=$(FUZZTIME) bash scripts/fuzz.sh

## golden: rewrite the golden files; review the change with git diff.
golden:
	$(GO) test -count=1 $(GOLDEN_PKGS) -update

## bench: performance figures (reported, never asserted).
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./engine/ ./gate/
	$(GO) test -run '^$$' -bench 'Shadow|ResultMembers|CallPostPolicy|GuardrailCost' -benchmem ./internal/pipeline/
	$(GO) test -run '^$$' -bench . -benchtime 20x -timeout 20m ./internal/audit/
	$(GO) test -run '^$$' -bench StdioLatency -benchtime 5000x ./internal/e2e/
	$(GO) test -run '^$$' -bench FirstCall -benchtime 8x ./internal/e2e/
	MCPGATE_POOL_FIGURES=1 $(GO) test -count=1 -timeout 10m -run TestWarmPoolFigures -v ./internal/e2e/

## load: the bounded HTTP load test (loopback only).
load:
	MCPGATE_LOAD=1 $(GO) test -count=1 -timeout 5m -run TestLoadHTTP -v ./internal/e2e/

## conformance: the MCP conformance suite against the HTTP front.
conformance: build deps
	bash scripts/conformance.sh

clean:
	rm -rf bin dist testdata/e2e/node_modules $(TESTBED_BIN)

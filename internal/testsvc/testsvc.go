// Package testsvc gives tests the addresses of the shared services they need — a
// Redis server, a PostgreSQL database, an OpenID provider, OPA and OpenFGA — from the
// environment:
//
//	MCPGATE_TEST_REDIS_URL     redis://127.0.0.1:6379/15
//	MCPGATE_TEST_POSTGRES_URL  postgres://mcpgate:mcpgate@127.0.0.1:5432/mcpgate_test?sslmode=disable
//	MCPGATE_TEST_OIDC_ISSUER   http://localhost:9412/  (an OpenID provider)
//	MCPGATE_TEST_OPA_URL       http://127.0.0.1:8281   (an OPA server with testdata/e2e/opa)
//	MCPGATE_TEST_OPENFGA_URL   http://127.0.0.1:8282   (an OpenFGA server's HTTP API, AuthZEN on)
//
// .ci/run installs and starts them and sets these. Outside CI a test without them
// skips with a notice saying how to run it; with CI set it fails instead, so a CI
// machine that lost a service cannot pass by skipping.
package testsvc

import (
	"os"
	"testing"
)

// RedisURL returns MCPGATE_TEST_REDIS_URL, or skips (fails under CI) without it.
func RedisURL(t testing.TB) string {
	t.Helper()
	return need(t, "MCPGATE_TEST_REDIS_URL", "a Redis server, e.g. redis-server --port 6379 and MCPGATE_TEST_REDIS_URL=redis://127.0.0.1:6379/15")
}

// PostgresURL returns MCPGATE_TEST_POSTGRES_URL, or skips (fails under CI) without it.
func PostgresURL(t testing.TB) string {
	t.Helper()
	return need(t, "MCPGATE_TEST_POSTGRES_URL", "a PostgreSQL database, e.g. MCPGATE_TEST_POSTGRES_URL=postgres://mcpgate:mcpgate@127.0.0.1:5432/mcpgate_test?sslmode=disable (see .ci/run)")
}

func need(t testing.TB, env, what string) string {
	t.Helper()
	if v := os.Getenv(env); v != "" {
		return v
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("CI is set but %s is not: this test needs %s", env, what)
	}
	t.Skipf("SKIPPED: set %s to run this test; it needs %s", env, what)
	return ""
}

// OIDCIssuer returns MCPGATE_TEST_OIDC_ISSUER, the issuer URL of zitadel's example
// OpenID provider (github.com/zitadel/oidc/v3/example/server, installed by make deps
// and started by .ci/run), or skips (fails under CI) without it.
func OIDCIssuer(t testing.TB) string {
	t.Helper()
	return need(t, "MCPGATE_TEST_OIDC_ISSUER", "zitadel's example OpenID provider: make deps, then PORT=9412 REDIRECT_URI=http://localhost:9413/callback testdata/e2e/bin/oidc-server and MCPGATE_TEST_OIDC_ISSUER=http://localhost:9412/ (see .ci/run)")
}

// OPAURL returns MCPGATE_TEST_OPA_URL, the base URL of an OPA server
// (github.com/open-policy-agent/opa, installed by make deps and started by .ci/run)
// serving testdata/e2e/opa, or skips (fails under CI) without it.
func OPAURL(t testing.TB) string {
	t.Helper()
	return need(t, "MCPGATE_TEST_OPA_URL", "an OPA server: make deps, then testdata/e2e/bin/opa run --server --addr 127.0.0.1:8281 --disable-telemetry testdata/e2e/opa and MCPGATE_TEST_OPA_URL=http://127.0.0.1:8281 (see .ci/run)")
}

// OpenFGAURL returns MCPGATE_TEST_OPENFGA_URL, the base URL of an OpenFGA server's
// HTTP API with its experimental AuthZEN API on (github.com/openfga/openfga, installed
// by make deps and started by .ci/run), or skips (fails under CI) without it.
func OpenFGAURL(t testing.TB) string {
	t.Helper()
	return need(t, "MCPGATE_TEST_OPENFGA_URL", "an OpenFGA server: make deps, then testdata/e2e/bin/openfga run --experimentals authzen --http-addr 127.0.0.1:8282 --grpc-addr 127.0.0.1:8283 --metrics-enabled=false --playground-enabled=false and MCPGATE_TEST_OPENFGA_URL=http://127.0.0.1:8282 (see .ci/run)")
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestVet feeds mcpgate vet the shapes of the vectors it is for (look-alike and
// "official" registry entries, swapped packages, drift from a baseline, an endpoint
// claiming a name it cannot prove, over-broad scopes, plaintext transport), each
// with its benign twin, and checks the exit status and the rules reported.
func TestVet(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	squat := write("squat.json", `{"name": "io.github.moddelcontextprotocol/filesystem", "displayName": "Filesystem (official)", "publisher": "unverified"}`)
	genuine := write("genuine.json", `{"name": "io.github.modelcontextprotocol/filesystem", "displayName": "Filesystem", "publisher": "verified"}`)
	payments := write("payments.json", `{"name": "acme/payments", "remotes": [{"type": "streamable-http", "url": "https://mcp.acme.example/mcp"}]}`)
	baseline := write("baseline.json", `{"mcpServers": {"api": {"url": "https://api.internal/mcp", "tls": "required", "allowedHosts": ["api.internal"]}}}`)
	drifted := write("drifted.json", `{"mcpServers": {"api": {"url": "https://api.internal/mcp", "tls": "optional", "allowedHosts": ["api.internal", "*"]}}}`)
	plain := write("plain.json", `{"mcpServers": {"vendor": {"url": "http://mcp.vendor.example/rpc"}}}`)
	tlsOn := write("tls.json", `{"mcpServers": {"vendor": {"url": "https://mcp.vendor.example/rpc"}}}`)
	scopes := func(name, s string) string {
		return write(name, `{"mcpServers": {"cal": {"url": "https://cal.example/mcp", "oauth": {"tokenURL": "https://as.example/token", "clientID": "c", "clientSecret": "s", "scopes": `+s+`}}}}`)
	}
	broad := scopes("broad.json", `["calendar.read", "calendar.write", "calendar.delete", "contacts.read", "mail.send"]`)
	narrow := scopes("narrow.json", `["calendar.read"]`)
	pinsFile := write("pins.json", `{"version": 1, "pins": [{"server": "cal", "tool": "get_calendar", "sha256": "x", "first_seen": "2026-12-01T00:00:00Z",
		"definition": {"name": "get_calendar", "description": "Read calendar events.", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}}}]}`)
	vscode := write("mcp.json", `{"inputs": [], "servers": {"github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/"}}}`)

	for _, tc := range []struct {
		name    string
		args    []string
		code    int
		want    []string
		notWant []string
	}{
		{"squatting", []string{"--entry", squat}, exitWarn, []string{"vet_lookalike_name", "vet_unverified_official_claim", "io.github.modelcontextprotocol/filesystem"}, nil},
		{"squatting benign", []string{"--entry", genuine}, exitOK, []string{"vet: 0 findings"}, nil},
		{"impersonation", []string{"--entry", payments, "--endpoint", "https://mcp.attacker.example/mcp"}, exitBlock, []string{"vet_identity_unproven", "acme/payments"}, nil},
		{"impersonation benign", []string{"--entry", payments, "--endpoint", "https://mcp.acme.example/mcp"}, exitOK, nil, []string{"vet_"}},
		{"drift", []string{"--config", drifted, "--baseline", baseline}, exitWarn, []string{"vet_drift_weakened", "/mcpServers/api/tls", "vet_drift_widened", "/mcpServers/api/allowedHosts", `wildcard "*"`}, nil},
		{"drift benign", []string{"--config", baseline, "--baseline", baseline}, exitOK, nil, []string{"vet_"}},
		{"plaintext", []string{"--config", plain}, exitWarn, []string{"MEDIUM vet_plaintext_transport", "/mcpServers/vendor/url"}, nil},
		{"plaintext strict", []string{"--config", plain, "--profile", "strict"}, exitBlock, []string{"HIGH   vet_plaintext_transport"}, nil},
		{"plaintext endpoint", []string{"--endpoint", "http://mcp.vendor.example/rpc"}, exitWarn, []string{"vet_plaintext_transport"}, nil},
		{"tls benign", []string{"--config", tlsOn, "--profile", "strict"}, exitOK, nil, []string{"vet_"}},
		{"tls endpoint benign", []string{"--endpoint", "https://mcp.vendor.example/rpc"}, exitOK, nil, []string{"vet_"}},
		{"scopes", []string{"--config", broad, "--pins", pinsFile}, exitWarn, []string{"vet_excessive_scope", "/mcpServers/cal/oauth/scopes/1", "/mcpServers/cal/oauth/scopes/4"}, []string{"scopes/0", "scopes/3"}},
		{"scopes benign", []string{"--config", narrow, "--pins", pinsFile}, exitOK, nil, []string{"vet_"}},
		{"vscode", []string{"--config", vscode}, exitOK, nil, []string{"vet_"}},
		{"nothing to review", nil, exitError, nil, nil},
		{"bad format", []string{"--config", vscode, "--format", "yaml"}, exitError, nil, nil},
		{"not a config", []string{"--config", squat}, exitError, nil, nil},
		{"missing file", []string{"--config", filepath.Join(dir, "nope.json")}, exitError, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(context.Background(), append([]string{"vet"}, tc.args...), strings.NewReader(""), &out, &errb)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, out.String(), errb.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("stdout lacks %q:\n%s", w, out.String())
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(out.String(), w) {
					t.Errorf("stdout has %q:\n%s", w, out.String())
				}
			}
		})
	}
}

func TestVetJSON(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.json")
	if err := os.WriteFile(p, []byte(`{"mcpServers": {"a": {"url": "http://mcp.vendor.example/rpc", "env": {"NODE_TLS_REJECT_UNAUTHORIZED": "0"}}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if code := run(context.Background(), []string{"vet", "--config", p, "--format", "json"}, strings.NewReader(""), &out, &out); code != exitBlock {
		t.Fatalf("exit %d: %s", code, out.String())
	}
	sc := bufio.NewScanner(&out)
	var rules []string
	for sc.Scan() {
		var f map[string]any
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		for _, k := range []string{"rule_id", "severity", "server", "message", "pointer"} {
			if _, ok := f[k]; !ok {
				t.Fatalf("line %q lacks %s", sc.Text(), k)
			}
		}
		rules = append(rules, fmt.Sprint(f["rule_id"], " ", f["severity"], " ", f["pointer"]))
	}
	want := []string{"vet_tls_verification_off HIGH /mcpServers/a/env/NODE_TLS_REJECT_UNAUTHORIZED", "vet_plaintext_transport MEDIUM /mcpServers/a/url"}
	if fmt.Sprint(rules) != fmt.Sprint(want) {
		t.Fatalf("rules %q, want %q", rules, want)
	}
}

// The supply-chain shape: vet --lock records a package's integrity from the npm
// registry (a fake one on loopback); when the registry later serves another
// artifact for the same version, vet reports it block-level.
func TestVetLockSwap(t *testing.T) {
	var mu sync.Mutex
	integrity := "sha512-reviewed"
	reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.EscapedPath() != "/@acme%2fdb-tools/1.4.0" {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, `{"name":"@acme/db-tools","version":"1.4.0","dist":{"integrity":%q,"tarball":"%s/x.tgz"}}`, integrity, "http://127.0.0.1")
	}))
	defer reg.Close()
	t.Setenv("npm_config_registry", reg.URL)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "gateway.json")
	if err := os.WriteFile(cfg, []byte(`{"mcpServers": {"db": {"command": "npx", "args": ["-y", "@acme/db-tools@1.4.0"]}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if code := run(context.Background(), []string{"vet", "--config", cfg, "--lock"}, strings.NewReader(""), &out, &out); code != exitOK {
		t.Fatalf("--lock: exit %d: %s", code, out.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, "mcpgate.lock"))
	if err != nil || !strings.Contains(string(b), `"integrity": "sha512-reviewed"`) {
		t.Fatalf("lock %s %v", b, err)
	}
	mu.Lock()
	integrity = "sha512-swapped"
	mu.Unlock()
	out.Reset()
	if code := run(context.Background(), []string{"vet", "--config", cfg}, strings.NewReader(""), &out, &out); code != exitBlock || !strings.Contains(out.String(), "vet_integrity_mismatch") {
		t.Fatalf("swapped: exit %d: %s", code, out.String())
	}
}

func TestVetHelpTeaches(t *testing.T) {
	var out bytes.Buffer
	if code := run(context.Background(), []string{"vet", "--help"}, strings.NewReader(""), &out, &out); code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, w := range []string{"mcpgate vet --config", "--entry server.json --endpoint", "--baseline", "--lock", "vetAllow", "Exit status: 0"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("help lacks %q", w)
		}
	}
}

// TestVetAtStartup: in the strict profile gateway run leaves out exactly the server
// with a block-level finding (plaintext transport to a remote host), logs why and how
// to allow it, and keeps the others under their prefixed names; the default profile
// logs the finding and starts every server; vetAllow lets the server start.
func TestVetAtStartup(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	servers := `"mcpServers": {"good": {"command": "node", "args": ["server.js"]}, "plain": {"url": "http://mcp.vendor.example/rpc"}}`
	cfg := write("c.json", `{`+servers+`}`)
	allowed := write("allowed.json", `{`+servers+`, "mcpgate": {"vetAllow": {"plain": ["vet_plaintext_transport"]}}}`)
	onlyBad := write("bad.json", `{"mcpServers": {"plain": {"url": "http://mcp.vendor.example/rpc"}}}`)
	for _, tc := range []struct {
		name, config, profile, vetMode string
		want                           []string // servers started
		log                            []string
	}{
		{"default", cfg, "", "", []string{"good", "plain"}, []string{`"msg":"vet finding"`, `"rule_id":"vet_plaintext_transport"`, `"server":"plain"`}},
		{"strict", cfg, "strict", "", []string{"good"}, []string{`"msg":"vet: server not started: it has block-level findings"`, `"server":"plain"`, `vetAllow`}},
		{"strict allowed", allowed, "strict", "", []string{"good", "plain"}, []string{`"allowed":true`}},
		{"strict vet off", cfg, "strict", "off", []string{"good", "plain"}, nil},
		{"enforce without strict", cfg, "", "enforce", []string{"good"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := gatewayFlags{configPath: tc.config, profile: tc.profile, vetMode: tc.vetMode, pinsMode: "warn", failMode: "open",
				upstreamStderr: "relay", upstreamEnv: "inherit", logFormat: "json", logLevel: "info"}
			f.changed = func(n string) bool { return n == "vet-mode" && tc.vetMode != "" }
			f.registerOthers()
			var log bytes.Buffer
			gc, err := f.config(nil, &log)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range gc.Servers {
				got = append(got, s.Name)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("servers %v, want %v\n%s", got, tc.want, log.String())
			}
			if len(tc.want) == 1 && !gc.File.Gate.PrefixNames {
				t.Error("the server left lost its prefix")
			}
			for _, w := range tc.log {
				if !strings.Contains(log.String(), w) {
					t.Errorf("log lacks %s:\n%s", w, log.String())
				}
			}
		})
	}
	f := gatewayFlags{configPath: onlyBad, profile: "strict", pinsMode: "warn", failMode: "open", upstreamStderr: "relay", upstreamEnv: "inherit", logFormat: "json", logLevel: "info"}
	f.registerOthers()
	if _, err := f.config(nil, io.Discard); err == nil || !strings.Contains(err.Error(), "none was started") {
		t.Fatalf("every server left out: %v", err)
	}
}

// selfSigned is a TLS certificate for 127.0.0.1 with a fresh key.
func selfSigned(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// TestVetIdentityPinned: the pinned-identity-change shape. gateway run --pins pins a
// url server's TLS key on first start; when the name later answers from another
// endpoint with another key, mcpgate vet --pins reports vet_identity_changed
// (block-level), the strict profile leaves the server out until mcpgate pins approve
// 'NAME#identity' tls, and a redeploy with the same key is no finding.
func TestVetIdentityPinned(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	a := httptest.NewTLSServer(ok)
	defer a.Close()
	a2 := httptest.NewTLSServer(ok) // a redeploy: another address, the same key
	defer a2.Close()
	b := httptest.NewUnstartedServer(ok)
	cert := selfSigned(t)
	b.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	b.StartTLS()
	defer b.Close()
	pool := x509.NewCertPool()
	pool.AddCert(a.Certificate())
	pool.AddCert(cert.Leaf)
	identityTLS = &tls.Config{RootCAs: pool}
	defer func() { identityTLS = nil }()

	dir := t.TempDir()
	pinsFile := filepath.Join(dir, "pins.json")
	cfgFor := func(name, url string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(`{"mcpServers": {"payments": {"url": "`+url+`/mcp"}, "local": {"command": "node", "args": ["s.js"]}}}`), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	first, redeploy, hijack := cfgFor("first.json", a.URL), cfgFor("redeploy.json", a2.URL), cfgFor("hijack.json", b.URL)
	start := func(cfg, profile string) []string {
		t.Helper()
		f := gatewayFlags{configPath: cfg, profile: profile, pins: pinsFile, pinsMode: "warn", failMode: "open",
			upstreamStderr: "relay", upstreamEnv: "inherit", logFormat: "json", logLevel: "info"}
		f.registerOthers()
		gc, err := f.config(nil, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, s := range gc.Servers {
			names = append(names, s.Name)
		}
		return names
	}
	vetCode := func(cfg string) (int, string) {
		var out bytes.Buffer
		code := run(context.Background(), []string{"vet", "--config", cfg, "--pins", pinsFile}, strings.NewReader(""), &out, &out)
		return code, out.String()
	}
	if got := start(first, ""); fmt.Sprint(got) != "[local payments]" {
		t.Fatalf("first start: %v", got)
	}
	if code, out := vetCode(redeploy); code != exitOK {
		t.Fatalf("redeploy with the same key: exit %d\n%s", code, out)
	}
	if code, out := vetCode(hijack); code != exitBlock || !strings.Contains(out, "vet_identity_changed") || !strings.Contains(out, `mcpgate pins approve "payments#identity" tls`) {
		t.Fatalf("another key: exit %d\n%s", code, out)
	}
	if got := start(hijack, "strict"); fmt.Sprint(got) != "[local]" {
		t.Fatalf("strict with another key: %v", got)
	}
	var out bytes.Buffer
	if code := run(context.Background(), []string{"pins", "approve", "--file", pinsFile, "payments#identity", "tls"}, strings.NewReader(""), &out, &out); code != exitOK {
		t.Fatalf("approve: exit %d\n%s", code, out.String())
	}
	if got := start(hijack, "strict"); fmt.Sprint(got) != "[local payments]" {
		t.Fatalf("strict after approve: %v", got)
	}
}

// TestVetAtStartupCommand: the strict profile does not start the one server after
// -- when it has a block-level finding, and says how to start it anyway.
func TestVetAtStartupCommand(t *testing.T) {
	f := gatewayFlags{profile: "strict", pinsMode: "warn", failMode: "open", upstreamStderr: "relay", upstreamEnv: "inherit", logFormat: "json", logLevel: "info"}
	f.registerOthers()
	var log bytes.Buffer
	if _, err := f.config([]string{"mcp-proxy", "--insecure", "https://x.example/mcp"}, &log); err == nil || !strings.Contains(err.Error(), "--vet-mode report") {
		t.Fatalf("err %v", err)
	}
	if !strings.Contains(log.String(), `"rule_ids":["vet_tls_verification_off"]`) {
		t.Fatalf("log:\n%s", log.String())
	}
	f.vetMode, f.changed = "report", func(n string) bool { return n == "vet-mode" }
	if _, err := f.config([]string{"mcp-proxy", "--insecure", "https://x.example/mcp"}, io.Discard); err != nil {
		t.Fatalf("--vet-mode report: %v", err)
	}
}

// TestVetAtStartupScopes: with --pins, the tools pinned for a url server feed the
// scope check at start-up: read-only tools and a write scope are logged.
func TestVetAtStartupScopes(t *testing.T) {
	dir := t.TempDir()
	pinsFile := filepath.Join(dir, "pins.json")
	if err := os.WriteFile(pinsFile, []byte(`{"version": 1, "pins": [{"server": "cal", "tool": "get_calendar", "sha256": "x", "first_seen": "2026-12-01T00:00:00Z",
		"definition": {"name": "get_calendar", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}}}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "c.json")
	if err := os.WriteFile(cfg, []byte(`{"mcpServers": {"cal": {"url": "http://127.0.0.1:1/mcp", "oauth": {"tokenURL": "https://as.example/token",
		"clientID": "c", "clientSecret": "s", "scopes": ["calendar.read", "calendar.delete"]}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	f := gatewayFlags{configPath: cfg, pins: pinsFile, pinsMode: "warn", failMode: "open", upstreamStderr: "relay", upstreamEnv: "inherit", logFormat: "json", logLevel: "info"}
	f.registerOthers()
	var log bytes.Buffer
	if _, err := f.config(nil, &log); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), `"rule_id":"vet_excessive_scope"`) || !strings.Contains(log.String(), `"pointer":"/mcpServers/cal/oauth/scopes/1"`) {
		t.Fatalf("log:\n%s", log.String())
	}
}

// vet --lock of a uvx server reads the release's files from the index $PIP_INDEX_URL
// names (PEP 691), and a wheel replaced later is block-level; an index that cannot
// be reached makes --lock fail naming the package, and a bad --sigstore-root is a
// usage error.
func TestVetLockPyPI(t *testing.T) {
	var mu sync.Mutex
	hash := strings.Repeat("a", 64)
	idx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/simple/mcp-server-fetch/" {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, `{"meta": {"api-version": "1.1"}, "name": "mcp-server-fetch", "files": [{"filename": "mcp_server_fetch-2025.4.7-py3-none-any.whl", "hashes": {"sha256": %q}}]}`, hash)
	}))
	defer idx.Close()
	t.Setenv("UV_DEFAULT_INDEX", "")
	t.Setenv("UV_INDEX_URL", "")
	t.Setenv("PIP_INDEX_URL", idx.URL+"/simple")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "gateway.json")
	if err := os.WriteFile(cfg, []byte(`{"mcpServers": {"fetch": {"command": "uvx", "args": ["mcp-server-fetch==2025.4.7"]}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if code := run(context.Background(), []string{"vet", "--config", cfg, "--lock"}, strings.NewReader(""), &out, &out); code != exitOK {
		t.Fatalf("--lock: exit %d: %s", code, out.String())
	}
	if b, err := os.ReadFile(filepath.Join(dir, "mcpgate.lock")); err != nil || !strings.Contains(string(b), `"ecosystem": "pypi"`) || !strings.Contains(string(b), hash) {
		t.Fatalf("lock %s %v", b, err)
	}
	mu.Lock()
	hash = strings.Repeat("b", 64)
	mu.Unlock()
	out.Reset()
	if code := run(context.Background(), []string{"vet", "--config", cfg}, strings.NewReader(""), &out, &out); code != exitBlock || !strings.Contains(out.String(), "vet_integrity_mismatch") {
		t.Fatalf("swapped wheel: exit %d: %s", code, out.String())
	}
	out.Reset()
	bad := filepath.Join(dir, "root.json")
	os.WriteFile(bad, []byte(`{}`), 0o644)
	if code := run(context.Background(), []string{"vet", "--config", cfg, "--sigstore-root", bad}, strings.NewReader(""), &out, &out); code != exitError || !strings.Contains(out.String(), "--sigstore-root") {
		t.Fatalf("bad --sigstore-root: exit %d: %s", code, out.String())
	}
	idx.Close()
	out.Reset()
	if code := run(context.Background(), []string{"vet", "--config", cfg, "--lock"}, strings.NewReader(""), &out, &out); code != exitError || !strings.Contains(out.String(), "mcp-server-fetch==2025.4.7") {
		t.Fatalf("index unreachable: exit %d: %s", code, out.String())
	}
}

// TestVetAtStartupRecorded: gateway run writes the start-up vet findings to the audit
// sink, one record per server with findings: method mcpgate/vet, the server's configured name,
// the rule ids and highest severity; vet_findings (warn) when the server starts,
// vet_server_left_out (block, rejected) when --vet-mode enforce leaves it out. The
// record holds no value of the configuration: not the url, not an argument.
func TestVetAtStartupRecorded(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.json")
	if err := os.WriteFile(cfg, []byte(`{"mcpServers": {"good": {"command": "true", "args": ["arg-canary"]}, "plain": {"url": "http://mcp.vendor.example/rpc-canary"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mode, reason, action, outcome, severity string
	}{
		{"report", "vet_findings", "warn", "ok", "MEDIUM"},
		{"enforce", "vet_server_left_out", "block", "rejected", "HIGH"}, // plaintext is block-level under enforce
	} {
		t.Run(tc.mode, func(t *testing.T) {
			auditFile := filepath.Join(dir, tc.mode+".jsonl")
			var out, errb bytes.Buffer
			argv := []string{"gateway", "run", "--log-format", "json", "--policies", dir, "--config", cfg, "--vet-mode", tc.mode,
				"--pins-mode", "off", "--audit-file", auditFile}
			run(context.Background(), argv, strings.NewReader(""), &out, &errb)
			b, err := os.ReadFile(auditFile)
			if err != nil {
				t.Fatalf("%v\n%s", err, errb.String())
			}
			var found []map[string]any
			for _, line := range bytes.Split(b, []byte("\n")) {
				var r map[string]any
				if json.Unmarshal(line, &r) == nil && (r["reason"] == "vet_findings" || r["reason"] == "vet_server_left_out") {
					found = append(found, r)
				}
			}
			if len(found) != 1 {
				t.Fatalf("vet records %v\n%s", found, errb.String())
			}
			r := found[0]
			ids, _ := r["rule_ids"].([]any)
			if r["server"] != "plain" || r["method"] != "mcpgate/vet" || r["reason"] != tc.reason || r["action_taken"] != tc.action || r["outcome"] != tc.outcome ||
				fmt.Sprint(ids) != "[vet_plaintext_transport]" || r["highest_severity"] != tc.severity || r["blocked"] != (tc.action == "block") {
				t.Errorf("record %v", r)
			}
			if bytes.Contains(b, []byte("canary")) || bytes.Contains(b, []byte("vendor.example")) {
				t.Errorf("the record holds a configuration value:\n%s", b)
			}
		})
	}
}

package vet

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/engine"
)

func mustConfig(t *testing.T, s string) *Config {
	t.Helper()
	c, err := ParseConfig([]byte(s))
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	return c
}

// ids renders findings as "rule server pointer" lines, sorted as Run sorts them.
func ids(fs []Finding) []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, f.RuleID+" "+f.Server+" "+f.Pointer)
	}
	return out
}

func TestLookalike(t *testing.T) {
	l := newLookalikes([]string{"@acme/server-filesystem"})
	for _, tc := range []struct {
		name, of string
	}{
		// real servers and the project's own: never look-alikes
		{"@modelcontextprotocol/server-filesystem", ""},
		{"@modelcontextprotocol/server-everything", ""},
		{"@modelcontextprotocol/server-github", ""},
		{"@modelcontextprotocol/server-memory", ""},
		{"ghcr.io/github/github-mcp-server", ""},
		{"io.github.modelcontextprotocol/filesystem", ""},
		{"io.github.github/github-mcp-server", ""},
		{"mcp-server-git", ""},
		{"mcp-server-fetch", ""},
		{"@playwright/mcp", ""},
		{"@upstash/context7-mcp", ""},
		{"@modelcontextprotocol/sdk", ""},
		{"@modelcontextprotocol/conformance", ""},
		{"mcp/fetch", ""},
		{"mcp/git", ""},
		{"mcpgate", ""},
		{"my-company-notes-server", ""},
		{"@acme/server-filesystem", ""}, // allowedServers
		// look-alikes: typos, transpositions, confusables, doubled letters
		{"@modelcontextprotocoI/server-filesystem", "@modelcontextprotocol/server-filesystem"},
		{"@modelcontextprotocol/server-filesytem", "@modelcontextprotocol/server-filesystem"},
		{"@modelcontextprotocol/server-evrything", "@modelcontextprotocol/server-everything"},
		{"@modelcontextprotcool/server-github", "@modelcontextprotocol/server-github"},
		{"io.github.moddelcontextprotocol/filesystem", "io.github.modelcontextprotocol/filesystem"},
		{"ghcr.io/githuh/github-mcp-server", "ghcr.io/github/github-mcp-server"},
		{"@modelcontextprot\u043ecol/server-memory", "@modelcontextprotocol/server-memory"}, // Cyrillic о
		{"mcp-server-fecth", "mcp-server-fetch"},
		{"@playwrigth/mcp", "@playwright/mcp"},
		{"@acme/server-filesytem", "@acme/server-filesystem"},
	} {
		if got := l.Of(tc.name); got != tc.of {
			t.Errorf("Of(%q) = %q, want %q", tc.name, got, tc.of)
		}
	}
}

func TestPackages(t *testing.T) {
	for _, tc := range []struct {
		cmd    string
		want   string // Ecosystem Name Version Arg, or "" for none
		pinned bool
	}{
		{"npx -y @modelcontextprotocol/server-filesystem /home/me", "npm @modelcontextprotocol/server-filesystem  1", false},
		{"npx -y @modelcontextprotocol/server-filesystem@2026.8.31 /home/me", "npm @modelcontextprotocol/server-filesystem 2026.8.31 1", true},
		{"npx -y @modelcontextprotocol/server-everything@latest stdio", "npm @modelcontextprotocol/server-everything latest 1", false},
		{"npx --yes server-x@^1.2.0", "npm server-x ^1.2.0 1", false},
		{"npx -p @scope/pkg@1.0.0 bin-name", "npm @scope/pkg 1.0.0 1", true},
		{"npx --package=@scope/pkg@1.0.0 bin-name", "npm @scope/pkg 1.0.0 0", true},
		{"npm exec -y -- mcp-remote@0.1.29 https://x.example/mcp", "npm mcp-remote 0.1.29 3", true},
		{"pnpm dlx mcp-remote https://x.example/mcp", "npm mcp-remote  1", false},
		{"C:\\Program Files\\nodejs\\npx.cmd -y firecrawl-mcp", "npm firecrawl-mcp  1", false},
		{"cmd /c npx -y @playwright/mcp@0.0.41", "npm @playwright/mcp 0.0.41 3", true},
		{"npx ./local-server", "", false},
		{"uvx mcp-server-fetch", "pypi mcp-server-fetch  0", false},
		{"uvx mcp-server-git==2025.7.1 --repository /r", "pypi mcp-server-git 2025.7.1 0", true},
		{"uvx mcp-server-time@2025.8.4", "pypi mcp-server-time 2025.8.4 0", true},
		{"uvx --from awslabs.core-mcp-server==1.0.5 awslabs.core-mcp-server", "pypi awslabs.core-mcp-server 1.0.5 1", true},
		{"uvx --python 3.12 mcp-server-sqlite>=0.6", "pypi mcp-server-sqlite >=0.6 2", false},
		{"uv tool run mcp-server-fetch", "pypi mcp-server-fetch  2", false},
		{"pipx run --spec mcp-server-fetch==2025.4.7 mcp-server-fetch", "pypi mcp-server-fetch 2025.4.7 2", true},
		{"docker run -i --rm -e GITHUB_PERSONAL_ACCESS_TOKEN ghcr.io/github/github-mcp-server", "oci ghcr.io/github/github-mcp-server  5", false},
		{"docker run -i --rm ghcr.io/github/github-mcp-server:v0.13.0", "oci ghcr.io/github/github-mcp-server v0.13.0 3", true},
		{"docker run -i --rm mcp/fetch:latest", "oci mcp/fetch latest 3", false},
		{"podman run --rm -i -v /a:/a --env=X=1 docker.io/mcp/filesystem@sha256:" + strings.Repeat("a", 64) + " /a", "oci mcp/filesystem  6", true},
		{"docker run -i --rm localhost:5000/img", "oci localhost:5000/img  3", false},
		{"mcpgate gateway run --filter-output -- npx -y server-x@1.0.0", "npm server-x 1.0.0 6", true},
		{"/usr/local/bin/mcpgate mcp-server", "", false},
		{"node /opt/server/index.js", "", false},
	} {
		f := strings.Fields(tc.cmd)
		if strings.HasPrefix(tc.cmd, "C:") {
			f = append([]string{`C:\Program Files\nodejs\npx.cmd`}, f[2:]...)
		}
		refs := Packages(Server{Command: f[0], Args: f[1:]})
		got := ""
		if len(refs) > 0 {
			r := refs[0]
			got = fmt.Sprintf("%s %s %s %d", r.Ecosystem, r.Name, r.Version, r.Arg)
			if r.Pinned() != tc.pinned {
				t.Errorf("%s: pinned %v, want %v", tc.cmd, r.Pinned(), tc.pinned)
			}
		}
		if got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.cmd, got, tc.want)
		}
	}
}

// Real configurations of real servers, in each client's convention: the findings
// expected, and no look-alike among them.
func TestRealConfigs(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		want         []string
	}{
		{"claude-desktop-filesystem-pinned", `{"mcpServers": {"filesystem": {"command": "npx",
			"args": ["-y", "@modelcontextprotocol/server-filesystem@2026.8.31", "/Users/me/Desktop", "/Users/me/Downloads"]}}}`, nil},
		{"claude-desktop-filesystem", `{"mcpServers": {"filesystem": {"command": "npx",
			"args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop"]}}}`,
			[]string{"vet_unpinned_package filesystem /mcpServers/filesystem/args/1"}},
		{"cursor-everything", `{"mcpServers": {"everything": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything@2026.8.31", "stdio"]}}}`, nil},
		{"vscode-github-remote", `{"servers": {"github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/"}}}`, nil},
		{"vscode-github-docker", `{"inputs": [{"type": "promptString", "id": "github_token", "description": "GitHub Personal Access Token", "password": true}],
			"servers": {"github": {"command": "docker", "args": ["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"],
			"env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${input:github_token}"}}}}`,
			[]string{"vet_unpinned_package github /servers/github/args/5"}},
		{"vscode-settings", `{"editor.fontSize": 14, "mcp": {"servers": {"fetch": {"command": "uvx", "args": ["mcp-server-fetch==2025.4.7"]}}}}`, nil},
		{"project-image-config", `{"mcpServers": {"mcpgate": {"command": "/usr/local/bin/mcpgate", "args": ["mcp-server"]}},
			"mcpgate": {"tokens": [{"sha256": "${MCPGATE_TOKEN_SHA256}", "userID": "agent"}]}}`, nil},
		{"project-readme-wrapped", `{"mcpServers": {"filesystem": {"command": "/usr/local/bin/mcpgate",
			"args": ["gateway", "run", "--filter-output", "--policies", "/etc/mcpgate/policies",
			"--", "npx", "-y", "@modelcontextprotocol/server-filesystem", "/Users/me/projects"]}}}`,
			[]string{"vet_unpinned_package filesystem /mcpServers/filesystem/args/8"}},
		{"project-readme-github", `{"mcpServers": {"github": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"], "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"} }}}`,
			[]string{"vet_unpinned_package github /mcpServers/github/args/1"}},
		{"local-http", `{"mcpServers": {"notes": {"url": "http://127.0.0.1:9000/mcp"}, "dev": {"url": "http://localhost:8080/mcp"}}}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ids(Run(Input{Config: mustConfig(t, tc.config)}, Options{}))
			if !slices.Equal(got, append([]string{}, tc.want...)) {
				t.Errorf("findings\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestTransport(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		want         []string
	}{
		{"plaintext-remote", `{"mcpServers": {"v": {"url": "http://mcp.vendor.example/rpc"}}}`, []string{"vet_plaintext_transport v /mcpServers/v/url"}},
		{"https-remote", `{"mcpServers": {"v": {"url": "https://mcp.vendor.example/rpc"}}}`, nil},
		{"loopback", `{"mcpServers": {"v": {"url": "http://[::1]:9/mcp"}, "w": {"url": "http://127.0.0.2/mcp"}}}`, nil},
		{"windsurf", `{"mcpServers": {"v": {"serverUrl": "http://10.1.2.3/mcp"}}}`, []string{"vet_plaintext_transport v /mcpServers/v/url"}},
		{"bridge-arg", `{"mcpServers": {"r": {"command": "npx", "args": ["mcp-remote@0.1.29", "http://mcp.vendor.example/sse", "--allow-http"]}}}`,
			[]string{"vet_plaintext_transport r /mcpServers/r/args/1"}},
		{"node-tls-off", `{"mcpServers": {"r": {"url": "https://x.example/mcp", "env": {"NODE_TLS_REJECT_UNAUTHORIZED": "0"}}}}`,
			[]string{"vet_tls_verification_off r /mcpServers/r/env/NODE_TLS_REJECT_UNAUTHORIZED"}},
		{"node-tls-on", `{"mcpServers": {"r": {"url": "https://x.example/mcp", "env": {"NODE_TLS_REJECT_UNAUTHORIZED": "1"}}}}`, nil},
		{"insecure-flag", `{"mcpServers": {"r": {"command": "mcp-proxy", "args": ["--insecure", "https://x.example/mcp"]}}}`,
			[]string{"vet_tls_verification_off r /mcpServers/r/args/0"}},
		{"skip-verify-member", `{"mcpServers": {"r": {"url": "https://x.example/mcp", "tlsSkipVerify": true}}}`,
			[]string{"vet_tls_verification_off r /mcpServers/r/tlsSkipVerify"}},
		{"reject-unauthorized-false", `{"mcpServers": {"r": {"url": "https://x.example/mcp", "rejectUnauthorized": false}}}`,
			[]string{"vet_tls_verification_off r /mcpServers/r/rejectUnauthorized"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ids(Run(Input{Config: mustConfig(t, tc.config)}, Options{}))
			if !slices.Equal(got, append([]string{}, tc.want...)) {
				t.Errorf("findings\n got %q\nwant %q", got, tc.want)
			}
		})
	}
	// strict raises plaintext transport to block-level
	fs := Run(Input{Config: mustConfig(t, `{"mcpServers": {"v": {"url": "http://mcp.vendor.example/rpc"}}}`)}, Options{Strict: true})
	if len(fs) != 1 || fs[0].Severity != engine.SeverityHigh || !slices.Equal(Blocked(fs), []string{"v"}) {
		t.Errorf("strict: %+v", fs)
	}
}

func TestDrift(t *testing.T) {
	base := `{"mcpServers": {
		"api": {"url": "https://api.internal/mcp", "tls": "required", "allowedHosts": ["api.internal"], "roots": ["file:///srv/data"]},
		"fs": {"command": "mcpgate", "args": ["gateway", "run", "--fail-mode", "closed", "--filter-output", "--pins-mode", "block",
			"--upstream-env", "minimal", "--", "npx", "-y", "@modelcontextprotocol/server-filesystem@2026.8.31", "/srv/data"]}},
		"mcpgate": {"passEnv": ["GITHUB_TOKEN"], "rules": {"secret_github_token": "high"}, "admin": {"allowedHosts": ["console.internal"]}}}`
	for _, tc := range []struct {
		name, config string
		pinned       []string
		want         []string
	}{
		{"same", base, nil, nil},
		{"narrower", `{"mcpServers": {"api": {"url": "https://api.internal/mcp", "tls": "required", "allowedHosts": [], "roots": ["file:///srv/data/sub"]}}}`, nil, nil},
		{"weakened", `{"mcpServers": {
			"api": {"url": "http://api.internal/mcp", "tls": "optional", "allowedHosts": ["api.internal", "*"], "roots": ["file:///srv/data", "file:///home"]},
			"fs": {"command": "mcpgate", "args": ["gateway", "run", "--fail-mode", "open", "--pins-mode=off",
				"--", "npx", "-y", "@modelcontextprotocol/server-filesystem@2026.8.31", "/srv/data", "/"]},
			"new": {"url": "https://new.example/mcp"}},
			"mcpgate": {"passEnv": ["GITHUB_TOKEN", "*"], "rules": {"secret_github_token": "low"}, "admin": {"allowedHosts": ["console.internal", "evil.example"]}}}`,
			nil, []string{
				"vet_drift_widened  /mcpgate/admin/allowedHosts",
				"vet_drift_widened  /mcpgate/passEnv",
				"vet_drift_weakened  /mcpgate/rules/secret_github_token",
				"vet_drift_widened api /mcpServers/api/allowedHosts",
				"vet_drift_widened api /mcpServers/api/roots",
				"vet_drift_weakened api /mcpServers/api/tls",
				"vet_drift_weakened api /mcpServers/api/url",
				"vet_plaintext_transport api /mcpServers/api/url",
				"vet_drift_weakened fs /mcpServers/fs/args", // --filter-output dropped
				"vet_drift_weakened fs /mcpServers/fs/args", // --upstream-env back to inherit
				"vet_drift_widened fs /mcpServers/fs/args/10",
				"vet_drift_weakened fs /mcpServers/fs/args/2",
				"vet_drift_weakened fs /mcpServers/fs/args/4",
				"vet_drift_server_added new /mcpServers/new",
			}},
		{"added-pinned", strings.Replace(base, `"api":`, `"new": {"url": "https://new.example/mcp"}, "api":`, 1), []string{"new"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tools := map[string][]Tool{}
			for _, p := range tc.pinned {
				tools[p] = []Tool{{Name: "t"}}
			}
			got := ids(Run(Input{Config: mustConfig(t, tc.config), Baseline: mustConfig(t, base), Tools: tools}, Options{}))
			if !slices.Equal(got, append([]string{}, tc.want...)) {
				t.Errorf("findings\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestScopes(t *testing.T) {
	cfg := func(scopes string) *Config {
		return mustConfig(t, `{"mcpServers": {"cal": {"url": "https://cal.example/mcp", "oauth": {"tokenURL": "https://as.example/token",
			"clientID": "c", "clientSecret": "s", "scopes": `+scopes+`}}}}`)
	}
	readOnly := map[string][]Tool{"cal": {{Name: "get_calendar", ReadOnly: true}, {Name: "list_events", ReadOnly: true}}}
	mixed := map[string][]Tool{"cal": {{Name: "get_calendar", ReadOnly: true}, {Name: "add_event"}}}
	for _, tc := range []struct {
		name   string
		scopes string
		tools  map[string][]Tool
		want   []string
	}{
		{"over-broad", `["calendar.read", "calendar.write", "calendar.delete", "contacts.read", "mail.send"]`, readOnly, []string{
			"vet_excessive_scope cal /mcpServers/cal/oauth/scopes/1", "vet_excessive_scope cal /mcpServers/cal/oauth/scopes/2", "vet_excessive_scope cal /mcpServers/cal/oauth/scopes/4"}},
		{"least-privilege", `["calendar.read"]`, readOnly, nil},
		{"writer-needs-write", `["calendar.read", "calendar.write"]`, mixed, nil},
		{"tools-unknown", `["calendar.write"]`, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ids(Run(Input{Config: cfg(tc.scopes), Tools: tc.tools}, Options{}))
			if !slices.Equal(got, append([]string{}, tc.want...)) {
				t.Errorf("findings\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestEntries(t *testing.T) {
	entry := func(s string) *Entry {
		e, err := ParseEntry([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	for _, tc := range []struct {
		name, entry, endpoint string
		want                  []string
	}{
		{"squatter", `{"name": "io.github.moddelcontextprotocol/filesystem", "displayName": "Filesystem (official)", "publisher": "unverified"}`, "",
			[]string{"vet_unverified_official_claim io.github.moddelcontextprotocol/filesystem /displayName", "vet_lookalike_name io.github.moddelcontextprotocol/filesystem /name"}},
		{"genuine", `{"name": "io.github.modelcontextprotocol/filesystem", "displayName": "Filesystem", "publisher": "verified"}`, "", nil},
		{"registry-wrapped", `{"server": {"name": "io.github.acme/weather", "description": "The official Acme weather server", "version": "1.0.0",
			"packages": [{"registryType": "npm", "identifier": "@acme/weather-mcp", "version": "1.0.0", "transport": {"type": "stdio"}}]},
			"_meta": {"io.modelcontextprotocol.registry/official": {"status": "active"}}}`, "", nil},
		{"unpinned-packages", `{"name": "io.github.acme/tools", "packages": [
			{"registryType": "npm", "identifier": "@acme/tools", "version": "^1.0.0", "transport": {"type": "stdio"}},
			{"registryType": "oci", "identifier": "ghcr.io/acme/tools", "transport": {"type": "stdio"}},
			{"registryType": "pypi", "identifier": "acme-tools", "version": "1.0.0", "transport": {"type": "streamable-http", "url": "http://tools.acme.example/mcp"}},
			{"registryType": "mcpb", "identifier": "https://github.com/acme/tools/releases/download/v1/tools.mcpb"}],
			"remotes": [{"type": "streamable-http", "url": "https://tools.acme.example/mcp"}]}`, "", []string{
			"vet_unpinned_package io.github.acme/tools /packages/0/version",
			"vet_unpinned_package io.github.acme/tools /packages/1/version",
			"vet_plaintext_transport io.github.acme/tools /packages/2/transport/url",
			"vet_unpinned_package io.github.acme/tools /packages/3"}},
		{"impersonator", `{"name": "acme/payments", "remotes": [{"type": "streamable-http", "url": "https://mcp.acme.example/mcp"}]}`, "https://mcp.attacker.example/mcp",
			[]string{"vet_identity_unproven acme/payments "}},
		{"proven", `{"name": "acme/payments", "remotes": [{"type": "streamable-http", "url": "https://mcp.acme.example/mcp"}]}`, "https://MCP.acme.example/mcp/", nil},
		{"no-remotes", `{"name": "acme/payments"}`, "https://mcp.acme.example/mcp", []string{"vet_identity_unproven acme/payments "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ids(Run(Input{Entries: []*Entry{entry(tc.entry)}, Endpoint: tc.endpoint}, Options{}))
			if !slices.Equal(got, append([]string{}, tc.want...)) {
				t.Errorf("findings\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestAllowAndSeverities(t *testing.T) {
	c := mustConfig(t, `{"mcpServers": {"r": {"url": "https://x.example/mcp", "env": {"NODE_TLS_REJECT_UNAUTHORIZED": "0"}},
		"s": {"url": "https://y.example/mcp", "env": {"NODE_TLS_REJECT_UNAUTHORIZED": "0"}}},
		"mcpgate": {"vetAllow": {"r": ["vet_tls_verification_off"]}}}`)
	fs := Run(Input{Config: c}, Options{})
	if len(fs) != 2 || !fs[0].Allowed || fs[1].Allowed || !slices.Equal(Blocked(fs), []string{"s"}) {
		t.Fatalf("allow: %+v", fs)
	}
	fs = Run(Input{Config: c}, Options{Severities: map[string]engine.Severity{RuleTLSUnverified: engine.SeverityNone}})
	if len(fs) != 0 {
		t.Fatalf("severity none: %+v", fs)
	}
	if !Known(RuleDriftWidened) || Known("vet_nope") || Known("secret_github_token") {
		t.Fatal("Known")
	}
}

// A message or a finding never carries an environment or header value.
func TestNoValuesInFindings(t *testing.T) {
	c := mustConfig(t, `{"mcpServers": {"r": {"url": "http://user:hunter2@x.example/mcp?key=sekrit", "headers": {"Authorization": "Bearer sekrit"},
		"env": {"NODE_TLS_REJECT_UNAUTHORIZED": "0", "API_KEY": "sekrit"}}}}`)
	b, _ := json.Marshal(Run(Input{Config: c, Baseline: c}, Options{}))
	if strings.Contains(string(b), "sekrit") || strings.Contains(string(b), "hunter2") {
		t.Fatalf("a value leaked: %s", b)
	}
}

// fakeNPM is an npm registry on loopback serving one version document per package.
func fakeNPM(t *testing.T, integrity map[string]string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, ok := integrity[r.URL.EscapedPath()]
		if !ok {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, `{"name":"x","version":"1.0.0","dist":{"integrity":%q,"tarball":"http://registry/x.tgz"}}`, in)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// The supply-chain shape: a package locked at review resolves later to another
// artifact (the same name and version, a different integrity) and is refused.
func TestLockSwappedArtifact(t *testing.T) {
	integrity := map[string]string{"/@acme%2fdb-tools/1.4.0": "sha512-reviewed"}
	reg := fakeNPM(t, integrity)
	c := mustConfig(t, `{"mcpServers": {"db": {"command": "npx", "args": ["-y", "@acme/db-tools@1.4.0"]},
		"other": {"command": "npx", "args": ["-y", "other-tool@2.0.0"]}}}`)
	r := Resolver{NPMRegistry: reg.URL}
	refs := Lockable(c)
	l, errs := NewLock(refs[:1], r.Resolve(context.Background(), refs[:1]))
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	path := filepath.Join(t.TempDir(), LockFileName)
	if err := WriteLock(path, l); err != nil {
		t.Fatal(err)
	}
	l, err := ReadLock(path)
	if err != nil || len(l.Packages) != 1 || l.Packages[0].Integrity != "sha512-reviewed" {
		t.Fatalf("lock %+v %v", l, err)
	}
	run := func() []string {
		return ids(Run(Input{Config: c, Lock: l, Resolved: r.Resolve(context.Background(), refs)}, Options{}))
	}
	if got, want := run(), []string{"vet_package_not_locked other /mcpServers/other/args/1"}; !slices.Equal(got, want) {
		t.Fatalf("as reviewed: %q", got)
	}
	integrity["/@acme%2fdb-tools/1.4.0"] = "sha512-swapped"
	got := run()
	if want := []string{"vet_integrity_mismatch db /mcpServers/db/args/1", "vet_package_not_locked other /mcpServers/other/args/1"}; !slices.Equal(got, want) {
		t.Fatalf("swapped: %q", got)
	}
	delete(integrity, "/@acme%2fdb-tools/1.4.0")
	if got := run(); got[0] != "vet_integrity_unverified db /mcpServers/db/args/1" {
		t.Fatalf("unresolvable: %q", got)
	}
}

func TestParseErrors(t *testing.T) {
	for _, s := range []string{`[]`, `null`, `{}`, `{"mcpServers": []}`, `{"mcpServers": {"a": 1}}`, `{"mcpServers": {"a": {"args": "x"}}}`, `{"mcpServers": {}, "mcpgate": {"vetAllow": 1}}`} {
		if _, err := ParseConfig([]byte(s)); err == nil {
			t.Errorf("ParseConfig(%s): no error", s)
		}
	}
	for _, s := range []string{`[]`, `{}`, `{"name": 1}`, `{"name": "x", "packages": {}}`} {
		if _, err := ParseEntry([]byte(s)); err == nil {
			t.Errorf("ParseEntry(%s): no error", s)
		}
	}
}

// TestProjectConfigs: the configurations the project ships vet clean.
func TestProjectConfigs(t *testing.T) {
	for _, p := range []string{"../../deploy/image/config.json"} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		c, err := ParseConfig(b)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if fs := Run(Input{Config: c, Baseline: c}, Options{Strict: true}); len(fs) != 0 {
			t.Errorf("%s: %+v", p, fs)
		}
	}
}

// fakeIndex is a Python package index on loopback serving PEP 691 project pages:
// page[name] is the page's JSON.
func fakeIndex(t *testing.T, page map[string][]byte) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := page[strings.Trim(r.URL.Path, "/")]
		if !ok || r.Header.Get("Accept") != "application/vnd.pypi.simple.v1+json" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/vnd.pypi.simple.v1+json")
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestLockPyPI: uvx and pipx packages are locked as npm ones are: each file of the
// pinned release (wheels and sdist, from the index's PEP 691 page) with its sha256;
// a file replaced or added later is vet_integrity_mismatch naming it, and an index
// that cannot be reached is vet_integrity_unverified.
func TestLockPyPI(t *testing.T) {
	fixture, err := os.ReadFile("testdata/pypi/mcp-server-fetch.json")
	if err != nil {
		t.Fatal(err)
	}
	page := map[string][]byte{"mcp-server-fetch": fixture}
	idx := fakeIndex(t, page)
	c := mustConfig(t, `{"mcpServers": {"fetch": {"command": "uvx", "args": ["mcp-server-fetch==2025.4.7"]},
		"fetch2": {"command": "pipx", "args": ["run", "--spec", "MCP_Server.Fetch==2025.4.7", "mcp-server-fetch"]}}}`)
	r := Resolver{PyPIIndex: idx.URL + "/simple"}
	page["simple/mcp-server-fetch"] = fixture
	refs := Lockable(c)
	if len(refs) != 2 {
		t.Fatalf("lockable: %+v", refs)
	}
	l, errs := NewLock(refs, r.Resolve(context.Background(), refs))
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	p := l.Packages[0]
	if p.Ecosystem != "pypi" || p.Name != "mcp-server-fetch" || p.Version != "2025.4.7" || len(p.Files) != 2 ||
		p.Files[0].Filename != "mcp_server_fetch-2025.4.7-py3-none-any.whl" || p.Integrity != PyPIIntegrity(p.Files) {
		t.Fatalf("locked %+v", l.Packages)
	}
	path := filepath.Join(t.TempDir(), LockFileName)
	if err := WriteLock(path, l); err != nil {
		t.Fatal(err)
	}
	if l, err = ReadLock(path); err != nil || len(l.Packages) != 1 {
		t.Fatalf("read back %+v %v", l, err) // both servers run the same release
	}
	run := func() []Finding {
		return Run(Input{Config: c, Lock: l, Resolved: r.Resolve(context.Background(), refs)}, Options{})
	}
	if fs := run(); len(fs) != 0 {
		t.Fatalf("as reviewed: %+v", fs)
	}
	swapped := strings.Replace(string(fixture), p.Files[0].SHA256, strings.Repeat("ab", 32), 1)
	page["simple/mcp-server-fetch"] = []byte(swapped)
	fs := run()
	if got := ids(fs); !slices.Equal(got, []string{"vet_integrity_mismatch fetch /mcpServers/fetch/args/0", "vet_integrity_mismatch fetch2 /mcpServers/fetch2/args/2"}) {
		t.Fatalf("swapped wheel: %q", got)
	}
	if !strings.Contains(fs[0].Message, "changed: mcp_server_fetch-2025.4.7-py3-none-any.whl") {
		t.Fatalf("message does not name the file: %s", fs[0].Message)
	}
	added := strings.Replace(string(fixture), `"files": [`, `"files": [{"filename": "mcp_server_fetch-2025.4.7-cp312-cp312-manylinux_2_17_x86_64.whl", "hashes": {"sha256": "`+strings.Repeat("cd", 32)+`"}},`, 1)
	page["simple/mcp-server-fetch"] = []byte(added)
	if fs := run(); len(fs) != 2 || !strings.Contains(fs[0].Message, "added: mcp_server_fetch-2025.4.7-cp312") {
		t.Fatalf("added wheel: %+v", fs)
	}
	idx.Close()
	if got := ids(run()); !slices.Equal(got, []string{"vet_integrity_unverified fetch /mcpServers/fetch/args/0", "vet_integrity_unverified fetch2 /mcpServers/fetch2/args/2"}) {
		t.Fatalf("index unreachable: %q", got)
	}
}

func TestFileVersion(t *testing.T) {
	for name, want := range map[string]string{
		"mcp_server_fetch-2025.4.7-py3-none-any.whl":  "2025.4.7",
		"mcp_server_fetch-2025.4.7.tar.gz":            "2025.4.7",
		"mcp-server-fetch-2025.4.7.zip":               "2025.4.7",
		"pkg-1.0rc1-1-cp312-cp312-manylinux_2_17.whl": "1.0rc1",
		"README.md":  "",
		"broken.whl": "",
	} {
		if got := fileVersion(name); got != want {
			t.Errorf("fileVersion(%q) = %q, want %q", name, got, want)
		}
	}
}

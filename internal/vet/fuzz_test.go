package vet

import (
	"strings"
	"testing"
)

// FuzzParseConfig: any input is a configuration or an error, never a panic; a
// configuration's review (with itself as the baseline) names only its own servers
// and points into the document.
func FuzzParseConfig(f *testing.F) {
	f.Add(`{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "@modelcontextprotocoI/server-filesystem", "/"]}}}`)
	f.Add(`{"servers": {"gh": {"type": "http", "url": "http://api.example/mcp", "tlsSkipVerify": true}}, "inputs": []}`)
	f.Add(`{"mcp": {"servers": {"a/b~c": {"command": "docker", "args": ["run", "-i", "img"], "env": {"NODE_TLS_REJECT_UNAUTHORIZED": "0"}}}}}`)
	f.Add(`{"mcpServers": {"m": {"command": "mcpgate", "args": ["gateway", "run", "--fail-mode", "--", "uvx", "--from"]}}, "mcpgate": {"vetAllow": {"m": ["*"]}}}`)
	f.Add(`{"mcpServers": {"o": {"url": "https://x/mcp", "oauth": {"scopes": ["a.write"]}, "roots": ["file:///"]}}}`)
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseConfig([]byte(s))
		if err != nil {
			return
		}
		tools := map[string][]Tool{}
		for _, sv := range c.Servers {
			tools[sv.Name] = []Tool{{Name: "t", ReadOnly: true}}
		}
		for _, fd := range Run(Input{Config: c, Baseline: c, Tools: tools}, Options{}) {
			if c.Server(fd.Server) == nil && fd.Server != "" {
				t.Fatalf("finding for an unknown server: %+v", fd)
			}
			if fd.Pointer != "" && !strings.HasPrefix(fd.Pointer, "/") {
				t.Fatalf("pointer %q", fd.Pointer)
			}
			if !Known(fd.RuleID) {
				t.Fatalf("rule %q", fd.RuleID)
			}
		}
	})
}

// FuzzParseEntry: any input is an entry or an error, never a panic; its review
// with an endpoint gives only vet rules.
func FuzzParseEntry(f *testing.F) {
	f.Add(`{"name": "io.github.moddelcontextprotocol/filesystem", "displayName": "Filesystem (official)", "publisher": "unverified"}`)
	f.Add(`{"server": {"name": "a", "packages": [{"registryType": "oci", "identifier": "img@sha256:00"}], "remotes": [{"url": "http://x"}]}, "_meta": {}}`)
	f.Add(`{"name": "n", "packages": [{"registryType": "npm", "identifier": "@s/p", "version": "^1"}, {"registryType": "mcpb"}]}`)
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseEntry([]byte(s))
		if err != nil {
			return
		}
		for _, fd := range Run(Input{Entries: []*Entry{e}, Endpoint: "https://mcp.example/mcp"}, Options{}) {
			if !Known(fd.RuleID) {
				t.Fatalf("rule %q", fd.RuleID)
			}
		}
	})
}

// FuzzPyPIFiles: any project page is files of the version (each named for it, with
// a 64-digit sha256) or an error, never a panic.
func FuzzPyPIFiles(f *testing.F) {
	f.Add(`{"files": [{"filename": "p-1.0-py3-none-any.whl", "hashes": {"sha256": "`+strings.Repeat("a", 64)+`"}}, {"filename": "p-1.0.tar.gz", "hashes": {}}]}`, "1.0")
	f.Add(`{"files": [{"filename": "p-1.0.zip", "hashes": {"sha256": "x"}}, {"filename": "-.whl"}]}`, "1.0")
	f.Add(`{"files": null}`, "")
	f.Fuzz(func(t *testing.T, page, version string) {
		files, err := pypiFiles(strings.NewReader(page), version)
		if err != nil {
			return
		}
		for _, x := range files {
			if !strings.EqualFold(fileVersion(x.Filename), version) || len(x.SHA256) != 64 {
				t.Fatalf("%+v for %q", x, version)
			}
		}
		_ = PyPIIntegrity(files)
	})
}

// FuzzVerifyNPMProvenance: any bundle and integrity is verified or refused, never
// a panic, and nothing but the recorded bundle verifies for sigstore@2.0.0.
func FuzzVerifyNPMProvenance(f *testing.F) {
	tr, err := PublicGoodRoot()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(`{"mediaType": "application/vnd.dev.sigstore.bundle+json;version=0.1"}`, "sha512-"+strings.Repeat("A", 86)+"==")
	f.Add(`{"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json", "verificationMaterial": {}, "dsseEnvelope": {"payload": "e30=", "payloadType": "application/vnd.in-toto+json", "signatures": [{"sig": "AA=="}]}}`, "sha512-x")
	f.Add(`[]`, "sha1-AA==")
	f.Fuzz(func(t *testing.T, bundle, integrity string) {
		if repo, err := VerifyNPMProvenance(tr, []byte(bundle), "sigstore", "2.0.0", integrity); err == nil {
			t.Fatalf("a fuzzed bundle verified: %s", repo)
		}
	})
}

package vet

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
)

// fakeProvenanceRegistry serves the recorded npm version document of sigstore@2.0.0
// (testdata/provenance/sigstore-2.0.0.json, its dist.attestations.url pointed at
// this server) and its recorded Sigstore provenance bundle, signed in the
// public-good instance. doc and bundle may be changed between requests; a nil
// bundle answers 404.
type fakeProvenanceRegistry struct {
	*httptest.Server
	doc    map[string]any
	bundle []byte
}

func newFakeProvenanceRegistry(t *testing.T) *fakeProvenanceRegistry {
	t.Helper()
	f := &fakeProvenanceRegistry{}
	b, err := os.ReadFile("testdata/provenance/sigstore-2.0.0.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &f.doc); err != nil {
		t.Fatal(err)
	}
	if f.bundle, err = os.ReadFile("testdata/provenance/sigstore-2.0.0.sigstore.json"); err != nil {
		t.Fatal(err)
	}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/sigstore/2.0.0":
			json.NewEncoder(w).Encode(f.doc)
		case "/-/npm/v1/attestations/sigstore@2.0.0":
			if f.bundle == nil {
				http.NotFound(w, r)
				return
			}
			json.NewEncoder(w).Encode(map[string]any{"attestations": []any{
				map[string]any{"predicateType": "https://slsa.dev/publish/v0.1", "bundle": map[string]any{}},
				map[string]any{"predicateType": "https://slsa.dev/provenance/v1", "bundle": json.RawMessage(f.bundle)},
			}})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(f.Close)
	f.dist()["attestations"].(map[string]any)["url"] = f.URL + "/-/npm/v1/attestations/sigstore@2.0.0"
	return f
}

func (f *fakeProvenanceRegistry) dist() map[string]any { return f.doc["dist"].(map[string]any) }

// TestNPMProvenance: where the npm registry offers a provenance attestation, --lock
// verifies it with sigstore-go against the public-good trusted root (a recorded
// bundle: these machines cannot reach the transparency log) and locks the source
// repository it names; a bundle that does not verify, a different artifact under
// the same version, or another package's attestation is vet_provenance_invalid and
// refuses the lock; an attestation that cannot be fetched is
// vet_integrity_unverified, saying so.
func TestNPMProvenance(t *testing.T) {
	trusted, err := PublicGoodRoot()
	if err != nil {
		t.Fatal(err)
	}
	reg := newFakeProvenanceRegistry(t)
	c := mustConfig(t, `{"mcpServers": {"s": {"command": "npx", "args": ["-y", "sigstore@2.0.0"]}}}`)
	r := Resolver{NPMRegistry: reg.URL, Trusted: trusted}
	refs := Lockable(c)
	l, errs := NewLock(refs, r.Resolve(context.Background(), refs))
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	if got := l.Packages[0].Provenance; got != "https://github.com/sigstore/sigstore-js" {
		t.Fatalf("locked provenance %q", got)
	}
	run := func() []Finding {
		return Run(Input{Config: c, Lock: l, Resolved: r.Resolve(context.Background(), refs)}, Options{})
	}
	if fs := run(); len(fs) != 0 {
		t.Fatalf("as reviewed: %+v", fs)
	}

	orig, origIntegrity := reg.bundle, reg.dist()["integrity"]
	for _, tc := range []struct {
		name   string
		change func()
		want   []string
		msg    string
	}{
		{"signature tampered", func() {
			var b map[string]any
			json.Unmarshal(orig, &b)
			sig := b["dsseEnvelope"].(map[string]any)["signatures"].([]any)[0].(map[string]any)
			s := sig["sig"].(string)
			sig["sig"] = s[:10] + strings.ToUpper(s[10:11]) + strings.ToLower(s[10:11]) + s[12:]
			if sig["sig"] == s {
				sig["sig"] = "A" + s[1:]
			}
			reg.bundle, _ = json.Marshal(b)
		}, []string{"vet_provenance_invalid s /mcpServers/s/args/1"}, "does not verify"},
		{"artifact swapped under the same version", func() {
			reg.dist()["integrity"] = "sha512-" + strings.Repeat("A", 86) + "=="
		}, []string{"vet_integrity_mismatch s /mcpServers/s/args/1", "vet_provenance_invalid s /mcpServers/s/args/1"}, "does not verify"},
		{"attestation not offered now", func() { reg.bundle = nil }, []string{"vet_integrity_unverified s /mcpServers/s/args/1"}, "could not be fetched"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg.bundle, reg.dist()["integrity"] = orig, origIntegrity
			tc.change()
			fs := run()
			if got := ids(fs); !slices.Equal(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			if !strings.Contains(fs[len(fs)-1].Message, tc.msg) {
				t.Fatalf("message %q lacks %q", fs[len(fs)-1].Message, tc.msg)
			}
			if _, errs := NewLock(refs, r.Resolve(context.Background(), refs)); len(errs) == 0 {
				t.Fatal("--lock accepted it")
			}
		})
	}
	reg.bundle, reg.dist()["integrity"] = orig, origIntegrity

	// The attestation of sigstore@2.0.0 does not prove a package of another name.
	if _, err := VerifyNPMProvenance(trusted, orig, "sigstore-utils", "2.0.0", origIntegrity.(string)); err == nil || !strings.Contains(err.Error(), "pkg:npm/sigstore-utils@2.0.0") {
		t.Fatalf("another name: %v", err)
	}
	// Locked from another repository than it names now.
	l.Packages[0].Provenance = "https://github.com/attacker/sigstore-js"
	if got := ids(run()); !slices.Equal(got, []string{"vet_provenance_invalid s /mcpServers/s/args/1"}) {
		t.Fatalf("another repository: %q", got)
	}
	l.Packages[0].Provenance = "https://github.com/sigstore/sigstore-js"
	// The registry cannot be reached at all: the integrity check says so; nothing is
	// claimed about provenance.
	reg.Close()
	if got := ids(run()); !slices.Equal(got, []string{"vet_integrity_unverified s /mcpServers/s/args/1"}) {
		t.Fatalf("registry unreachable: %q", got)
	}
	if NPMPurl("@modelcontextprotocol/server-filesystem", "2026.8.31") != "pkg:npm/%40modelcontextprotocol/server-filesystem@2026.8.31" {
		t.Fatal("NPMPurl")
	}
}

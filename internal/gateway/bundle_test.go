package gateway

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mcpgate/mcpgate/gate"
	"github.com/mcpgate/mcpgate/internal/audit"
	"github.com/mcpgate/mcpgate/internal/bundle"
	"github.com/mcpgate/mcpgate/internal/pipeline"
	"github.com/mcpgate/mcpgate/internal/testwait"
	"github.com/mcpgate/mcpgate/vocab"
)

const keys = "../bundle/testdata/"

// blockPolicy rejects tool; its test says so, and a failing test claims it passes.
const blockPolicy = `if (ctx.phase === "pre" && ctx.tool === "%s") { throw "blocked by policy"; }`

func blockTest(tool, outcome string) string {
	return `function test_block() {
  const r = mcpgate.call({tool: "` + tool + `", params: {}, result: {content: [{type: "text", text: "ok"}]}});
  mcpgate.assertEqual(r.outcome, "` + outcome + `");
}`
}

// makeBundle builds a bundle of files signed with the key file, revision rev after
// previous (a Hash or "").
func makeBundle(t *testing.T, key string, files map[string]string, rev, previous, minVersion string) []byte {
	t.Helper()
	dir := t.TempDir()
	for n, src := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	k, err := bundle.LoadPrivateKey(keys + key)
	if err != nil {
		t.Fatal(err)
	}
	data, err := bundle.Build(dir, bundle.Manifest{Revision: rev, Previous: previous, MinMCPGate: minVersion}, k)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func blocking(tool string) map[string]string {
	return map[string]string{"block.js": strings.Replace(blockPolicy, "%s", tool, 1), "block_test.js": blockTest(tool, "rejected")}
}

// TestBundleSource: the first good bundle starts the gate; a good next revision is
// swapped in with its revision on the set and kept on disk; a tampered, a wrongly
// keyed, an unsigned, a broken-chain, a rewound, a too-new, a non-compiling and a
// test-failing bundle are each refused with its reason counted and shown, and the
// running set stays; a restart without the source runs the last good bundle.
func TestBundleSource(t *testing.T) {
	ctx := context.Background()
	tmp := t.TempDir()
	src, state := filepath.Join(tmp, "bundle.tar.gz"), filepath.Join(tmp, "state")
	publish := func(data []byte) {
		if err := os.WriteFile(src, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	open := func(version string) *bundleSource {
		s, err := newBundleSource(Bundle{Source: src, Key: keys + "ed25519.pub", StateDir: state}, version, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	// No last good bundle: a refused bundle is a start-up error that says why.
	publish(makeBundle(t, "other.key", blocking("a"), "1", "", ""))
	if _, err := open("dev").start(ctx, gate.Options{}); err == nil || !strings.Contains(err.Error(), "refused at start-up, and no last good bundle") || !strings.Contains(err.Error(), "does not verify") {
		t.Fatalf("start-up with a wrongly signed bundle: %v", err)
	}
	os.Remove(src)
	if _, err := open("dev").start(ctx, gate.Options{}); err == nil || !strings.Contains(err.Error(), "fetch") {
		t.Fatalf("start-up without a bundle: %v", err)
	}

	rev1 := makeBundle(t, "ed25519.key", blocking("a"), "1", "", "")
	publish(rev1)
	s := open("v1.0.0")
	b, err := s.start(ctx, gate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := gate.Load(ctx, gate.Options{FS: b.FS(), Revision: b.Manifest.Revision})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()

	rev2 := makeBundle(t, "ed25519.key", blocking("b"), "2", bundle.Hash(rev1), "")
	publish(rev2)
	if err := s.step(ctx, g); err != nil || g.Status().Revision != "2" || s.status().Revision != "2" {
		t.Fatalf("rev 2: %v, gate %+v", err, g.Status())
	}
	if err := s.step(ctx, g); err != nil || g.Status().Generation != 2 {
		t.Fatalf("unchanged: %v %+v", err, g.Status())
	}
	if last, _ := s.state.Last(); bundle.Hash(last) != bundle.Hash(rev2) {
		t.Fatal("rev 2 not kept on disk")
	}

	after2 := bundle.Hash(rev2)
	tampered := makeBundle(t, "ed25519.key", blocking("c"), "3", after2, "")
	tampered = append([]byte(nil), tampered...)
	tampered[len(tampered)/2] ^= 0xff // the gzip stream or a file's bytes no longer match
	for _, tc := range []struct {
		name, reason, msg string
		data              []byte
	}{
		{"tampered", "", "", tampered},
		{"wrong key", "signature", "does not verify", makeBundle(t, "other.key", blocking("c"), "3", after2, "")},
		{"broken chain", "chain", "broken chain: revision 3 replaces sha256:", makeBundle(t, "ed25519.key", blocking("c"), "3", bundle.Hash([]byte("x")), "")},
		{"no previous", "chain", "replaces nothing", makeBundle(t, "ed25519.key", blocking("c"), "3", "", "")},
		{"rewound", "chain", "ran here before", rev1},
		{"too new", "version", "needs mcpgate v9.0.0", makeBundle(t, "ed25519.key", blocking("c"), "3", after2, "v9.0.0")},
		{"does not compile", "compile", "does not compile", makeBundle(t, "ed25519.key", map[string]string{"bad.js": "if ("}, "3", after2, "")},
		{"failing tests", "tests", "fails its own tests: block_test.js:3: test_block: fail", makeBundle(t, "ed25519.key",
			map[string]string{"block.js": strings.Replace(blockPolicy, "%s", "c", 1), "block_test.js": blockTest("c", "ok")}, "3", after2, "")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			publish(tc.data)
			err := s.step(ctx, g)
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %v, want %q", err, tc.msg)
			}
			if tc.reason != "" {
				if r, ok := err.(*refusal); !ok || r.reason != tc.reason {
					t.Fatalf("reason of %v: want %s", err, tc.reason)
				}
			}
			s.failed(err)
			if st := g.Status(); st.Revision != "2" || s.status().Revision != "2" || s.status().LastError == "" {
				t.Fatalf("the running set moved: %+v %+v", st, s.status())
			}
		})
	}
	if n := testutil.ToFloat64(s.refused.WithLabelValues("chain")); n != 3 {
		t.Fatalf("chain refusals counted: %v", n)
	}

	// A restart with the source gone runs the last good bundle.
	os.Remove(src)
	s2 := open("v1.0.0")
	if b, err := s2.start(ctx, gate.Options{}); err != nil || b.Manifest.Revision != "2" || !strings.Contains(s2.status().LastError, "fetch") {
		t.Fatalf("restart without the source: %v %+v", err, s2.status())
	}
}

// TestBundleFetchNow: SIGHUP's fetchNow fetches at once, not at the next poll.
func TestBundleFetchNow(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tmp := t.TempDir()
	src := filepath.Join(tmp, "bundle.tar.gz")
	rev1 := makeBundle(t, "ed25519.key", blocking("a"), "1", "", "")
	os.WriteFile(src, rev1, 0o644)
	s, err := newBundleSource(Bundle{Source: src, Key: keys + "ed25519.pub", StateDir: filepath.Join(tmp, "state"), Poll: time.Hour}, "dev", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.start(ctx, gate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := gate.Load(ctx, gate.Options{FS: b.FS(), Revision: b.Manifest.Revision})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	go s.poll(ctx, g)
	rev2 := makeBundle(t, "ed25519.key", blocking("b"), "2", bundle.Hash(rev1), "")
	os.WriteFile(src, rev2, 0o644)
	s.fetchNow()
	testwait.For(t, "revision 2 after fetchNow, kept on disk", func() bool { return g.Status().Revision == "2" && s.state.Known(bundle.Hash(rev2)) })
}

// reencode is archive's tar stream gzipped again at level, with extra bytes after it
// (the signature covers the files, not the archive's bytes).
func reencode(t *testing.T, archive []byte, level int, trailer []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, level)
	zw.Write(append(raw, trailer...))
	zw.Close()
	return buf.Bytes()
}

// TestBundleReplayReencoded: a bundle that ran here before is refused however its
// archive is encoded (another gzip level, bytes after the tar's end): it was taken
// as new, and its previous (a revision run before) let it rewind the running set.
// The running bundle encoded otherwise is unchanged, not refused.
func TestBundleReplayReencoded(t *testing.T) {
	ctx := context.Background()
	tmp := t.TempDir()
	src := filepath.Join(tmp, "bundle.tar.gz")
	publish := func(data []byte) {
		if err := os.WriteFile(src, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rev1 := makeBundle(t, "ed25519.key", blocking("a"), "1", "", "")
	rev2 := makeBundle(t, "ed25519.key", blocking("b"), "2", bundle.Hash(rev1), "")
	rev3 := makeBundle(t, "ed25519.key", blocking("c"), "3", bundle.Hash(rev2), "")
	publish(rev1)
	s, err := newBundleSource(Bundle{Source: src, Key: keys + "ed25519.pub", StateDir: filepath.Join(tmp, "state")}, "dev", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.start(ctx, gate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := gate.Load(ctx, gate.Options{FS: b.FS(), Revision: b.Manifest.Revision})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for _, next := range [][]byte{rev2, rev3} {
		publish(next)
		if err := s.step(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"rev 2 at another gzip level", reencode(t, rev2, gzip.BestSpeed, nil)},
		{"rev 2 with zeros after the tar's end", reencode(t, rev2, gzip.DefaultCompression, make([]byte, 4096))},
		{"rev 2 with bytes after the gzip stream", append(append([]byte(nil), rev2...), 0, 0, 0, 0)},
		{"rev 1 at another gzip level", reencode(t, rev1, gzip.BestCompression, nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if bundle.Hash(tc.data) == bundle.Hash(rev2) || bundle.Hash(tc.data) == bundle.Hash(rev1) {
				t.Fatal("the re-encoding left the archive's bytes as they were")
			}
			publish(tc.data)
			err := s.step(ctx, g)
			if err == nil || !strings.Contains(err.Error(), "ran here before") && !strings.Contains(err.Error(), "broken chain") {
				t.Fatalf("got %v, want a chain refusal", err)
			}
			if st := g.Status(); st.Revision != "3" {
				t.Fatalf("rewound to revision %s", st.Revision)
			}
		})
	}
	publish(reencode(t, rev3, gzip.BestSpeed, nil))
	if err := s.step(ctx, g); err != nil || g.Status().Revision != "3" || g.Status().Generation != 3 {
		t.Fatalf("the running bundle encoded otherwise: %v %+v", err, g.Status())
	}
}

// TestBundleStartNotModified: a server that answers 304 to the first, unconditional
// fetch leaves a replica with no bundle: start-up fails saying so (it dereferenced
// the missing running bundle and took the process down).
func TestBundleStartNotModified(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNotModified) }))
	defer srv.Close()
	s, err := newBundleSource(Bundle{Source: srv.URL + "/b.tar.gz", Key: keys + "ed25519.pub", StateDir: t.TempDir()}, "dev", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.start(context.Background(), gate.Options{}); err == nil || !strings.Contains(err.Error(), "no last good bundle") {
		t.Fatalf("start-up: %v", err)
	}
}

// TestBundleStateReplaced: a last good bundle on disk that is not the last one the
// state's history names (an older one put back in its place) is a start-up error: it
// would run, and the server's latest would be refused as run before.
func TestBundleStateReplaced(t *testing.T) {
	ctx := context.Background()
	tmp := t.TempDir()
	src, state := filepath.Join(tmp, "bundle.tar.gz"), filepath.Join(tmp, "state")
	rev1 := makeBundle(t, "ed25519.key", blocking("a"), "1", "", "")
	rev2 := makeBundle(t, "ed25519.key", blocking("b"), "2", bundle.Hash(rev1), "")
	open := func() *bundleSource {
		s, err := newBundleSource(Bundle{Source: src, Key: keys + "ed25519.pub", StateDir: state}, "dev", slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if err := os.WriteFile(src, rev1, 0o644); err != nil {
		t.Fatal(err)
	}
	s := open()
	b, err := s.start(ctx, gate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := gate.Load(ctx, gate.Options{FS: b.FS()})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if err := os.WriteFile(src, rev2, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.step(ctx, g); err != nil {
		t.Fatal(err)
	}
	// the state as kept restarts
	if b, err := open().start(ctx, gate.Options{}); err != nil || b.Manifest.Revision != "2" {
		t.Fatalf("restart: %v", err)
	}
	// revision 1 put back as the last good bundle
	if err := os.WriteFile(filepath.Join(state, "current.tar.gz"), rev1, 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := open().start(ctx, gate.Options{}); err == nil || !strings.Contains(err.Error(), "is not the last one its history names") {
		t.Fatalf("restart with revision 1 put back: %v (running %v)", err, b != nil && b.Manifest.Revision == "1")
	}
}

// TestShadowDiffers: a shadow run counts a call as a difference only when exactly one
// set blocked or rejected it and names the policy behind that block; a block by a
// rule or check (no policy) is shared by both sets.
func TestShadowDiffers(t *testing.T) {
	for _, tc := range []struct {
		name          string
		d             pipeline.TrialDecision
		differs       bool
		policy, print string
	}{
		{"the candidate blocks", pipeline.TrialDecision{Tool: "t", EventID: "e1", Live: vocab.Pass, Shadow: audit.Shadow{ActionTaken: vocab.Block, Policy: "new.js"}},
			true, "new.js", "new.js blocks a call of t the running set let through (event e1)"},
		{"the running set blocks", pipeline.TrialDecision{Tool: "t", EventID: "e2", Live: vocab.Block, LivePolicy: "old.js", Shadow: audit.Shadow{ActionTaken: vocab.Warn}},
			true, "old.js", "a call of t the running set's old.js blocks goes through (event e2)"},
		{"both block", pipeline.TrialDecision{Live: vocab.Block, LivePolicy: "old.js", Shadow: audit.Shadow{ActionTaken: vocab.Block, Policy: "new.js"}}, false, "", ""},
		{"a rule's block beside a pass", pipeline.TrialDecision{Live: vocab.Block, Shadow: audit.Shadow{ActionTaken: vocab.Pass}}, false, "", ""},
		{"a redaction differs, no block", pipeline.TrialDecision{Live: vocab.Pass, Shadow: audit.Shadow{ActionTaken: vocab.Redact, Differs: true}}, false, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, differs := shadowDiffers(tc.d)
			if differs != tc.differs || got.policy != tc.policy || (differs && got.String() != tc.print) {
				t.Errorf("shadowDiffers = %+v %v (%s)", got, differs, got)
			}
		})
	}
}

// TestBundleShadowStart: with Shadow and a last good bundle on disk, start-up runs
// the last good one and leaves a newer revision on the server to poll, which runs it
// as the shadow before any swap; without Shadow the newer one starts at once.
func TestBundleShadowStart(t *testing.T) {
	ctx := context.Background()
	for _, shadow := range []time.Duration{0, time.Minute} {
		tmp := t.TempDir()
		src, state := filepath.Join(tmp, "bundle.tar.gz"), filepath.Join(tmp, "state")
		open := func() *bundleSource {
			s, err := newBundleSource(Bundle{Source: src, Key: keys + "ed25519.pub", StateDir: state, Shadow: shadow}, "dev", slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		rev1 := makeBundle(t, "ed25519.key", blocking("a"), "1", "", "")
		os.WriteFile(src, rev1, 0o644)
		if b, err := open().start(ctx, gate.Options{}); err != nil || b.Manifest.Revision != "1" {
			t.Fatalf("shadow %v: first start: %v", shadow, err)
		}
		os.WriteFile(src, makeBundle(t, "ed25519.key", blocking("b"), "2", bundle.Hash(rev1), ""), 0o644)
		s := open()
		b, err := s.start(ctx, gate.Options{})
		if err != nil {
			t.Fatal(err)
		}
		want := map[time.Duration]string{0: "2", time.Minute: "1"}[shadow]
		if b.Manifest.Revision != want || (shadow > 0) != (len(s.kick) == 1) {
			t.Errorf("shadow %v: started on revision %s (want %s), fetch pending %v", shadow, b.Manifest.Revision, want, len(s.kick) == 1)
		}
	}
}

// TestBundleShadowRefusalRemembered: a revision its shadow run refused is refused
// again without a new run (a second run on quieter traffic could take it).
func TestBundleShadowRefusalRemembered(t *testing.T) {
	tmp := t.TempDir()
	src := filepath.Join(tmp, "bundle.tar.gz")
	rev1 := makeBundle(t, "ed25519.key", blocking("a"), "1", "", "")
	os.WriteFile(src, rev1, 0o644)
	s, err := newBundleSource(Bundle{Source: src, Key: keys + "ed25519.pub", StateDir: filepath.Join(tmp, "state"), Shadow: time.Minute}, "dev", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.start(context.Background(), gate.Options{}); err != nil {
		t.Fatal(err)
	}
	rev2 := makeBundle(t, "ed25519.key", blocking("b"), "2", bundle.Hash(rev1), "")
	if b, err := s.check(context.Background(), rev2); err != nil || b == nil {
		t.Fatalf("revision 2 before its shadow run: %v", err)
	}
	b, _ := bundle.Read(rev2, s.key)
	s.shadowFailed[b.Signed] = true
	var r *refusal
	if _, err := s.check(context.Background(), rev2); !errors.As(err, &r) || r.reason != "shadow" || !strings.Contains(err.Error(), "refused by its shadow run here before") {
		t.Fatalf("revision 2 after its shadow run refused it: %v", err)
	}
}

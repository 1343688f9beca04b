package motion

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/engine"
	"github.com/mcpgate/mcpgate/internal/costtest"
)

const token = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A" // a ghp_ shape, no live token

func TestFind(t *testing.T) {
	sc := NewScope()
	sc.Remember(Source{EventID: "e1", Server: "vault", Tool: "read_secret", Rule: engine.RuleGitHubToken}, [][]byte{[]byte(token)})
	for _, tc := range []struct {
		name string
		args []string
		enc  string
		hit  bool
	}{
		{"as written", []string{"body: " + token + " end"}, "", true},
		{"base64", []string{base64.StdEncoding.EncodeToString([]byte("t=" + token))}, engine.DecodedBase64, true},
		{"hex", []string{hex.EncodeToString([]byte(token))}, engine.DecodedHex, true},
		{"url", []string{"https://x.example/?t=" + strings.ReplaceAll(token, "_", "%5F") + "&a=%20"}, engine.DecodedURL, true},
		{"second leaf", []string{"hello", token}, "", true},
		{"other token", []string{strings.Replace(token, "aB3", "zz9", 1)}, "", false},
		{"prefix only", []string{token[:20]}, "", false},
		{"nothing", nil, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := sc.Find(tc.args)
			if (m != nil) != tc.hit {
				t.Fatalf("Find = %+v, want hit %v", m, tc.hit)
			}
			if m != nil && (m.EventID != "e1" || m.Server != "vault" || m.Encoding != tc.enc) {
				t.Fatalf("Find = %+v, want e1 from vault, encoding %q", m, tc.enc)
			}
		})
	}
}

func TestBounds(t *testing.T) {
	sc := NewScope()
	now := time.Unix(1e9, 0)
	sc.now = func() time.Time { return now }
	sc.Remember(Source{EventID: "short"}, [][]byte{[]byte("1234567")}) // under MinValueBytes
	if sc.Len() != 0 {
		t.Fatalf("a %d-byte value was remembered", MinValueBytes-1)
	}
	sc.Remember(Source{EventID: "old"}, [][]byte{[]byte("first-value-0001")})
	for i := range MaxEntries {
		sc.Remember(Source{EventID: "new"}, [][]byte{fmt.Appendf(nil, "%06d-value-number", i)})
	}
	if sc.Len() != MaxEntries {
		t.Fatalf("Len = %d, want the bound %d", sc.Len(), MaxEntries)
	}
	if sc.Find([]string{"first-value-0001"}) != nil {
		t.Fatal("the oldest value was not dropped past MaxEntries")
	}
	if sc.Find([]string{"x 000007-value-number y"}) == nil {
		t.Fatal("a value within the bound was not found")
	}
	now = now.Add(TTL)
	if sc.Find([]string{"000007-value-number"}) != nil || sc.Len() != 0 {
		t.Fatal("values outlived TTL")
	}
	// one result adds at most MaxPerResult values
	many := make([][]byte, MaxPerResult+10)
	for i := range many {
		many[i] = fmt.Appendf(nil, "%06d-per-result", i)
	}
	sc.Remember(Source{EventID: "r"}, many)
	if sc.Len() != MaxPerResult {
		t.Fatalf("one result added %d values, want %d", sc.Len(), MaxPerResult)
	}
}

// The scope keeps no value: nothing in its state holds the value's bytes.
func TestScopeHoldsNoValue(t *testing.T) {
	sc := NewScope()
	sc.Remember(Source{EventID: "e"}, [][]byte{[]byte(token)})
	state := fmt.Sprintf("%+v", sc.order)
	for _, e := range sc.order {
		state += fmt.Sprintf("%+v %+v", *e, *e.src)
	}
	if strings.Contains(state, token) || strings.Contains(state, token[4:20]) || strings.Contains(state, hex.EncodeToString([]byte(token))[:16]) {
		t.Fatal("the scope's state holds the value")
	}
}

func TestValues(t *testing.T) {
	an, err := engine.New(engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	doc := []byte(`{"content":[{"type":"text","text":"key: ` + token + `"},{"type":"resource","resource":{"uri":"file:///x","mimeType":"text/plain","blob":"` +
		base64.StdEncoding.EncodeToString([]byte("mail bob.smith@corp-mail.example now")) + `"}}],"structuredContent":{"a~b/c":{"` + token + `":1}}}`)
	rep, err := an.AnalyzeResult(doc)
	if err != nil {
		t.Fatal(err)
	}
	rules, values := Values(doc, rep.Findings)
	got := map[string]string{}
	for i, v := range values {
		got[string(v)] = rules[i]
	}
	if got[token] != engine.RuleGitHubToken || got["bob.smith@corp-mail.example"] != engine.RuleEmail {
		t.Fatalf("Values = %v", got)
	}
}

func TestLinesAndCredentialFile(t *testing.T) {
	if !NamesCredentialFile([]string{"~/.ssh/id_rsa"}) || NamesCredentialFile([]string{"./README.md", "read it"}) {
		t.Fatal("NamesCredentialFile")
	}
	doc := []byte(`{"content":[{"type":"text","text":"-----BEGIN KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n}\n"}]}`)
	lines := Lines(doc)
	if len(lines) != 2 || string(lines[1]) != "b3BlbnNzaC1rZXktdjEAAAAA" {
		t.Fatalf("Lines = %q", lines)
	}
}

// Find reads each argument whole: a value far past the first MiBs of an argument, as
// written or encoded, and one sent as a member name, are found.
func TestFindReadsAll(t *testing.T) {
	sc := NewScope()
	sc.Remember(Source{EventID: "e1", Rule: engine.RuleGitHubToken}, [][]byte{[]byte(token)})
	pad := strings.Repeat("lorem ipsum ", 6<<20/12) // 6 MiB
	for _, tc := range []struct {
		name string
		doc  string
		enc  string
	}{
		{"past 6 MiB", `{"body":"` + pad + token + `"}`, ""},
		{"past 6 MiB, base64", `{"body":"` + pad + " " + base64.StdEncoding.EncodeToString([]byte(token)) + `"}`, engine.DecodedBase64},
		{"a later leaf past 6 MiB", `{"a":"` + pad + `","b":"` + token + `"}`, ""},
		{"member name", `{"headers":{"` + token + `":"1"}}`, ""},
		{"member name, hex", `{"` + hex.EncodeToString([]byte(token)) + `":true}`, engine.DecodedHex},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := sc.Find(Strings([]byte(tc.doc)))
			if m == nil || m.EventID != "e1" || m.Encoding != tc.enc {
				t.Fatalf("Find = %+v, want e1 with encoding %q", m, tc.enc)
			}
		})
	}
}

// A flood of values from one source (server and tool) evicts only that source's own:
// the value another source showed is still found past MaxEntries and past
// MaxPerPrefix of its start, while the flooding source loses its oldest.
func TestFloodEvictsOnlyItsSource(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flood func(i int) []byte
		n     int
	}{
		{"entries", func(i int) []byte { return fmt.Appendf(nil, "%06d-flood-value", i) }, MaxEntries + 10},
		{"same start", func(i int) []byte { return fmt.Appendf(nil, "AKIAIOSF%06d", i) }, MaxPerPrefix + 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := NewScope()
			vault := Source{EventID: "v", Server: "vault", Tool: "read_secret"}
			sc.Remember(vault, [][]byte{[]byte("AKIAIOSFODNN7EXAMPLE")})
			web := Source{EventID: "w", Server: "web", Tool: "fetch"}
			for i := 0; i < tc.n; i += MaxPerResult {
				var vs [][]byte
				for j := i; j < min(i+MaxPerResult, tc.n); j++ {
					vs = append(vs, tc.flood(j))
				}
				sc.Remember(web, vs)
			}
			if m := sc.Find([]string{"body=AKIAIOSFODNN7EXAMPLE"}); m == nil || m.EventID != "v" {
				t.Fatalf("the vault's value was evicted by another source's flood: %+v", m)
			}
			if sc.Find([]string{string(tc.flood(0))}) != nil {
				t.Fatal("the flooding source's oldest value was kept past the bound")
			}
			if sc.Find([]string{string(tc.flood(tc.n - 1))}) == nil {
				t.Fatal("the flooding source's latest value was dropped")
			}
		})
	}
}

// Many values of one start cost no HMAC at the positions of an argument that repeats
// the start: a window is confirmed only once its polynomial hash matched; and one
// start keeps at most MaxPerPrefix values, the latest.
func TestSameStart(t *testing.T) {
	sc := NewScope()
	var vs [][]byte
	for i := range MaxPerPrefix + 1 {
		vs = append(vs, fmt.Appendf(nil, "sk-live-%06d-tail", i))
	}
	sc.Remember(Source{EventID: "e"}, vs)
	if sc.Len() != MaxPerPrefix {
		t.Fatalf("Len = %d, want MaxPerPrefix %d", sc.Len(), MaxPerPrefix)
	}
	if sc.Find([]string{string(vs[0])}) != nil || sc.Find([]string{string(vs[MaxPerPrefix])}) == nil {
		t.Fatal("the oldest value of a full start was kept, or the latest dropped")
	}
	before := macs.Load()
	arg := strings.Repeat("sk-live-", 1<<17) // 1 MiB of the start alone
	if sc.Find([]string{arg}) != nil {
		t.Fatal("a start alone matched")
	}
	if n := macs.Load() - before; n != 0 {
		t.Fatalf("%d HMACs for an argument that carries no value, want 0", n)
	}
}

// The keyed polynomial hash of a window equals the hash of the bytes (the table of
// prefix hashes is right), and mulmod stays below the modulus.
func TestPolynomialHash(t *testing.T) {
	b := []byte("the quick brown fox jumps over the lazy dog \x00\xff")
	h := prefixHashes(b, nil)
	for i := 0; i < len(b); i++ {
		for j := i; j <= len(b); j++ {
			if window(h, i, j) != poly(b[i:j]) {
				t.Fatalf("window(%d,%d) differs from poly", i, j)
			}
		}
	}
	for _, x := range []uint64{0, 1, mersenne - 1, 1 << 60, base} {
		if r := mulmod(x, mersenne-1); r >= mersenne {
			t.Fatalf("mulmod(%d) = %d ≥ modulus", x, r)
		}
	}
}

// FuzzSearch: search finds a remembered value exactly where it occurs in the text,
// whatever the text and wherever the chunk boundaries fall.
func FuzzSearch(f *testing.F) {
	f.Add([]byte("secret-value-1"), []byte("xx secret-value-1 yy"), uint16(3))
	f.Add([]byte("aaaaaaaaaaaa"), []byte("aaaaaaaaaaa"), uint16(0))
	f.Fuzz(func(t *testing.T, value, text []byte, at uint16) {
		if len(value) < MinValueBytes || len(value) > MaxValueBytes || len(text) > 1<<16 {
			return
		}
		sc := NewScope()
		sc.Remember(Source{EventID: "e"}, [][]byte{value})
		// also place the value at a chunk boundary
		pos := int(at) % (len(text) + 1)
		long := append(append(append(make([]byte, 0, chunk+len(value)+len(text)), bytes.Repeat([]byte{' '}, chunk-1)...), text[:pos]...), value...)
		long = append(long, text[pos:]...)
		h := []uint64{}
		sc.mu.RLock()
		defer sc.mu.RUnlock()
		for _, b := range [][]byte{text, long} {
			got := search(sc, b, &h) != nil
			if want := bytes.Contains(b, value); got != want {
				t.Fatalf("search = %v, bytes.Contains = %v", got, want)
			}
			if got2 := search(sc, string(b), &h) != nil; got2 != got {
				t.Fatal("search of the string differs from search of the bytes")
			}
		}
	})
}

// BenchmarkFind: a 1 MiB argument of prose against a full Scope (reported, never
// asserted; docs/engine.md).
func BenchmarkFind(b *testing.B) {
	sc := NewScope()
	for i := range MaxEntries {
		sc.Remember(Source{EventID: "e"}, [][]byte{fmt.Appendf(nil, "%06d-value-number-%d", i, i)})
	}
	arg := []string{strings.Repeat("the quick brown fox jumps over the lazy dog; ", 1<<20/45)}
	b.SetBytes(int64(len(arg[0])))
	for b.Loop() {
		if sc.Find(arg) != nil {
			b.Fatal("match")
		}
	}
}

// Find's cost per byte does not grow with the argument (docs/engine.md#linear-cost),
// on its worst shape: an argument that repeats the beginning of MaxPerPrefix values.
func TestFindLinear(t *testing.T) {
	sc := NewScope()
	var vs [][]byte
	for i := range MaxPerPrefix {
		vs = append(vs, fmt.Appendf(nil, "sk-live-%0*d", 8+i, i))
	}
	sc.Remember(Source{EventID: "e"}, vs)
	shape := func(n int) []byte { return bytes.Repeat([]byte("sk-live-"), n/8) }
	costtest.Linear(t, shape(4<<10), shape(1<<20), func(b []byte) {
		if sc.Find([]string{string(b)}) != nil {
			t.Fatal("match")
		}
	})
}

// Remember and Find of one Scope run side by side (calls of one session run
// concurrently): each Find sees a value remembered before it began.
func TestConcurrentRememberFind(t *testing.T) {
	sc := NewScope()
	sc.Remember(Source{EventID: "first"}, [][]byte{[]byte(token)})
	done := make(chan bool)
	for g := range 4 {
		go func() {
			ok := true
			for i := range 200 {
				sc.Remember(Source{EventID: "more"}, [][]byte{fmt.Appendf(nil, "%02d-%06d-concurrent", g, i)})
				ok = ok && sc.Find([]string{"x " + token}) != nil
			}
			done <- ok
		}()
	}
	for range 4 {
		if !<-done {
			t.Fatal("a Find beside a Remember missed a remembered value")
		}
	}
	if sc.Len() != 1+4*200 {
		t.Fatalf("Len = %d", sc.Len())
	}
}

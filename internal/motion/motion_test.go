package motion

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/engine"
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
		sc.Remember(Source{EventID: "new"}, [][]byte{fmt.Appendf(nil, "value-number-%06d", i)})
	}
	if sc.Len() != MaxEntries {
		t.Fatalf("Len = %d, want the bound %d", sc.Len(), MaxEntries)
	}
	if sc.Find([]string{"first-value-0001"}) != nil {
		t.Fatal("the oldest value was not dropped past MaxEntries")
	}
	if sc.Find([]string{"x value-number-000007 y"}) == nil {
		t.Fatal("a value within the bound was not found")
	}
	now = now.Add(TTL)
	if sc.Find([]string{"value-number-000007"}) != nil || sc.Len() != 0 {
		t.Fatal("values outlived TTL")
	}
	// one result adds at most MaxPerResult values
	many := make([][]byte, MaxPerResult+10)
	for i := range many {
		many[i] = fmt.Appendf(nil, "per-result-%06d", i)
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

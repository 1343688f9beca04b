package ctxapi

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzRewriteStrings: the streaming JSON rewriter never panics; on a valid document
// the identity rewrite returns the input unchanged, and a rewrite that changes
// strings still returns valid JSON.
func FuzzRewriteStrings(f *testing.F) {
	f.Add([]byte(`{"content":[{"type":"text","text":"a@b.example"}],"k":{"x":["y",1,null]}}`))
	f.Add([]byte(`"just a string"`))
	f.Add([]byte(`[1,"\u00e9\ud83d\ude00",{"":""}]`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		same, n, err := rewriteStrings(raw, nil, func(s string) (string, int) { return s, 0 })
		if err != nil || !json.Valid(raw) {
			return
		}
		if n != 0 || string(same) != string(raw) {
			t.Fatalf("identity rewrite changed %q into %q", raw, same)
		}
		upper, _, err := rewriteStrings(raw, map[string]bool{"type": true}, func(s string) (string, int) {
			u := strings.ToUpper(s)
			if u == s {
				return s, 0
			}
			return u, 1
		})
		if err != nil || !json.Valid(upper) {
			t.Fatalf("rewrite of valid %q gave invalid %q (%v)", raw, upper, err)
		}
	})
}

// FuzzAppendJSONString: the quoted string is valid JSON that decodes to the input
// (invalid UTF-8 becomes U+FFFD, as encoding/json decodes it too).
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", "q\"b\\n\n\r\t\x01\x1f", "é😀\u2028\u2029", "bad \xff byte", "0123456789abcdef\"0123456\\x\x01abcdefgh\x7f\x80ijklmnop"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := appendJSONString(nil, s)
		if b := appendJSONString(nil, []byte(s)); string(b) != string(out) {
			t.Fatalf("%q: the []byte form gives %q, the string form %q", s, b, out)
		}
		var back string
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("%q gave invalid JSON %q: %v", s, out, err)
		}
		if want := strings.ToValidUTF8(s, "\uFFFD"); back != want && utf8.ValidString(s) {
			t.Fatalf("%q round-trips to %q", s, back)
		}
	})
}

// FuzzAppendUnquoted: an escaped string decodes as encoding/json decodes it, and is
// rejected exactly when encoding/json rejects it.
func FuzzAppendUnquoted(f *testing.F) {
	for _, s := range []string{`a\nb`, `\"q\"\\\/\b\f\r\t`, `\u00e9\u00E9`, `\ud83d\ude00`, `\ud83d`, `\ude00\ud83d`,
		`\ud83d\u0041`, `\ud83d\ud83d\ude00`, `\ud83d\u12`, `\u12g4`, `\x`, "\x01\\n", "\xff\\n\xed\xa0\x80", "é\\n😀\u2028", `\u0000`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, content []byte) {
		tok := append(append([]byte{'"'}, content...), '"')
		if end, _ := scanString(tok, 0); end != len(tok) {
			return // not one string token
		}
		got, ok := appendUnquoted([]byte("x"), tok)
		var want string
		err := json.Unmarshal(tok, &want)
		if ok != (err == nil) || ok && string(got) != "x"+want {
			t.Fatalf("%q: appendUnquoted gives %q, %v; encoding/json %q, %v", tok, got, ok, want, err)
		}
	})
}

package mcpparam

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"testing"
	"unicode/utf8"
)

// FuzzDecode: decoding a header value never panics; an accepted sentinel value is
// valid UTF-8 and as long as its payload's decoding (the reference, like atob, takes
// non-zero pad bits: "A01=" is "\x03M").
func FuzzDecode(f *testing.F) {
	for _, s := range []string{"=?base64?SGVsbG8=?=", "=?base64?SGVsbG8?=", "=?base64??=", "=?base64?", "plain", "=?base64?/w==?="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		got, ok := Decode(v)
		if !ok || got == v {
			return
		}
		if !utf8.ValidString(got) || base64.StdEncoding.DecodedLen(len(v)-11) < len(got) {
			t.Fatalf("Decode(%q) = %q", v, got)
		}
	})
}

// FuzzCheck: reading declarations from any schema and checking any arguments and
// header never panics.
func FuzzCheck(f *testing.F) {
	f.Add(schema, `{"region":"Hello"}`, "=?base64?SGVsbG8=?=")
	f.Fuzz(func(t *testing.T, s, args, hv string) {
		h := http.Header{}
		h.Set("Mcp-Param-Region", hv)
		_ = Check(Declarations(json.RawMessage(s)), json.RawMessage(args), h)
	})
}

package jsonscan

import (
	"encoding/json"
	"errors"
	"github.com/mcpgate/mcpgate/internal/costtest"
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	for _, tc := range []struct {
		in      string
		end     int
		escaped bool
	}{
		{`"abc" x`, 5, false},
		{`"a\"b"`, 6, true},
		{`"a\\"b`, 5, true},
		{`"open`, -1, false},
		{`"ü"`, 4, false},
	} {
		end, esc := String([]byte(tc.in), 0)
		if end != tc.end || esc != tc.escaped {
			t.Errorf("String(%q) = %d, %v; want %d, %v", tc.in, end, esc, tc.end, tc.escaped)
		}
	}
}

func TestDeeper(t *testing.T) {
	deep := strings.Repeat("[", 6) + strings.Repeat("]", 6)
	for _, tc := range []struct {
		in   string
		max  int
		want bool
	}{
		{deep, 6, false},
		{deep, 5, true},
		{`{"a":"[[[[[[[[[[[["}`, 2, false},
		{`{"a":"\"[[[["}`, 1, false},
		{`[{"a":[1]}]`, 2, true},
	} {
		if got := Deeper([]byte(tc.in), tc.max); got != tc.want {
			t.Errorf("Deeper(%q, %d) = %v, want %v", tc.in, tc.max, got, tc.want)
		}
	}
}

// FuzzDeeper: on valid JSON, Deeper agrees with the nesting a decoder sees.
func FuzzDeeper(f *testing.F) {
	f.Add(`{"a":[1,{"b":"[}"}]}`, 2)
	f.Fuzz(func(t *testing.T, s string, max int) {
		if !json.Valid([]byte(s)) || max < 0 || max > 64 {
			return
		}
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			return
		}
		if got, want := Deeper([]byte(s), max), depth(v) > max; got != want {
			t.Fatalf("Deeper(%q, %d) = %v, want %v", s, max, got, want)
		}
	})
}

func depth(v any) int {
	d := 0
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			d = max(d, depth(e))
		}
		return d + 1
	case map[string]any:
		for _, e := range x {
			d = max(d, depth(e))
		}
		return d + 1
	}
	return 0
}

// stringRef is the byte-at-a-time definition String must agree with.
func stringRef(b []byte, i int) (int, bool) {
	escaped := false
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			return j + 1, escaped
		}
	}
	return -1, escaped
}

// FuzzString: String agrees with the byte-at-a-time scan on any input.
func FuzzString(f *testing.F) {
	f.Add(`"a\"b\\" tail "x"`)
	f.Add(`"open \`)
	f.Add(`"` + strings.Repeat("plain text ", 50) + `\n" more`)
	f.Fuzz(func(t *testing.T, s string) {
		b := []byte(`"` + s)
		gotEnd, gotEsc := String(b, 0)
		wantEnd, wantEsc := stringRef(b, 0)
		if gotEnd != wantEnd || gotEsc != wantEsc {
			t.Fatalf("String(%q) = %d, %v; want %d, %v", b, gotEnd, gotEsc, wantEnd, wantEsc)
		}
	})
}

func TestEscaped(t *testing.T) {
	for c := 0; c < 256; c++ {
		got, ok := Escaped(byte(c))
		var want string
		err := json.Unmarshal([]byte(`"\`+string(rune(c))+`"`), &want)
		if c == 'u' || c >= 0x80 {
			err = errors.New("not a one-character escape")
		}
		if ok != (err == nil) || (ok && string(rune(got)) != want) {
			t.Errorf("Escaped(%q) = %q, %v; encoding/json gives %q, %v", byte(c), got, ok, want, err)
		}
	}
}

// A string with an escape every 80 bytes costs the same per byte at 4 KiB and 1 MiB
// (the skipper once rescanned to the closing quote after each escape: quadratic).
func TestStringLinear(t *testing.T) {
	shape := func(n int) []byte {
		b := []byte{'"'}
		for len(b) < n-2 {
			b = append(b, strings.Repeat("x", 78)...)
			b = append(b, '\\', 'n')
		}
		return append(b, '"')
	}
	small, big := shape(4<<10), shape(1<<20)
	if end, esc := String(big, 0); end != len(big) || !esc {
		t.Fatalf("String(big) = %d, %v; want %d, true", end, esc, len(big))
	}
	costtest.Linear(t, small, big, func(b []byte) { String(b, 0) })
	costtest.Linear(t, small, big, func(b []byte) { Deeper(b, 64) })
}

func TestMayHold(t *testing.T) {
	for _, tc := range []struct {
		in, s string
		want  bool
	}{
		{`{"inputResponses":{}}`, "inputResponses", true},
		{`{"input\u0052esponses":{}}`, "inputResponses", true},
		{`{"a":"b\n"}`, "inputResponses", false},
		{`{"a":"b\\"}`, "inputResponses", false},
		{`{"io.modelcontextprotocol\/protocolVersion":"x"}`, "io.modelcontextprotocol/protocolVersion", true},
		{`{"a\/b":1}`, "inputResponses", false},
		{`{"a":"x\ty"}`, "x\ty", true},
		{`{"a":"plain"}`, "resultType", false},
		{`"trailing\`, "z", false},
	} {
		if got := MayHold([]byte(tc.in), tc.s); got != tc.want {
			t.Errorf("MayHold(%q, %q) = %v, want %v", tc.in, tc.s, got, tc.want)
		}
	}
}

// FuzzMayHold checks that a false MayHold is exact: no decoded member name or string
// value of a valid document holds the string.
func FuzzMayHold(f *testing.F) {
	f.Add(`{"input\u0052esponses":{"a":"\/"}}`, "inputResponses")
	f.Add(`{"a":["x\ty",{"b\\":"c"}]}`, "x\ty")
	f.Add(`{"resultType":"input\u005frequired"}`, "input_required")
	f.Fuzz(func(t *testing.T, doc, s string) {
		var v any
		if s == "" || json.Unmarshal([]byte(doc), &v) != nil || MayHold([]byte(doc), s) {
			return
		}
		if holds(v, s) {
			t.Fatalf("MayHold(%q, %q) = false, but a decoded string holds it", doc, s)
		}
	})
}

func holds(v any, s string) bool {
	switch v := v.(type) {
	case string:
		return strings.Contains(v, s)
	case []any:
		for _, e := range v {
			if holds(e, s) {
				return true
			}
		}
	case map[string]any:
		for k, e := range v {
			if strings.Contains(k, s) || holds(e, s) {
				return true
			}
		}
	}
	return false
}

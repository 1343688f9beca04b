package jsonrpc

import (
	"encoding/json"
	"math/big"
	"regexp"
	"strings"
	"testing"
)

var bigExponent = regexp.MustCompile(`[eE][-+]?0*[0-9]{5}`)

// FuzzIDKey checks IDKey against math/big: two JSON numbers get one key exactly
// when they are equal in value, and a number never shares a key with a string.
func FuzzIDKey(f *testing.F) {
	for _, s := range [][2]string{{"70", "7e1"}, {"70.0", "700e-1"}, {"9007199254740993", "9007199254740992"}, {"-0", "0e9"}, {"1.5", "15E-1"}, {"0.001", "1e-3"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		// big.Rat would expand a huge exponent; keep the oracle cheap.
		if len(a) > 40 || len(b) > 40 || bigExponent.MatchString(a) || bigExponent.MatchString(b) {
			return
		}
		var va, vb any
		if json.Unmarshal([]byte(a), &va) != nil || json.Unmarshal([]byte(b), &vb) != nil {
			return
		}
		_, na := va.(float64)
		_, nb := vb.(float64)
		ka, kb := IDKey(json.RawMessage(a)), IDKey(json.RawMessage(b))
		if !na || !nb {
			if na != nb && ka == kb {
				t.Fatalf("number and non-number share key %q: %s, %s", ka, a, b)
			}
			return
		}
		ra, _ := new(big.Rat).SetString(strings.TrimSpace(a))
		rb, _ := new(big.Rat).SetString(strings.TrimSpace(b))
		if ra == nil || rb == nil {
			return
		}
		if (ra.Cmp(rb) == 0) != (ka == kb) {
			t.Fatalf("%s (key %q) and %s (key %q): equal in value %v", a, ka, b, kb, ra.Cmp(rb) == 0)
		}
		// ExactID: an integer within ±(2^53−1), whatever its spelling.
		limit := new(big.Rat).SetInt64(maxExactID)
		for _, c := range []struct {
			text string
			r    *big.Rat
		}{{a, ra}, {b, rb}} {
			want := c.r.IsInt() && new(big.Rat).Abs(c.r).Cmp(limit) <= 0
			if got := ExactID(json.RawMessage(c.text)); got != want {
				t.Fatalf("ExactID(%s) = %v, want %v", c.text, got, want)
			}
		}
	})
}

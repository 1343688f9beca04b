package sandbox

import (
	"encoding/json"
	"testing"
)

// FuzzJSONShape: for any valid JSON text, jsonShape's depth is the text's nesting (up
// to past MaxNesting), and its values and longest array bound what JSON.parse builds,
// so the refusal in boundedParse never lets a bigger value through.
func FuzzJSONShape(f *testing.F) {
	for _, s := range []string{`0`, `[]`, `[1,2,3]`, `{"a":[1,{"b":[2,3]}],"c":"[,,,]"}`, `[[[]],[],[1,[2,[3]]]]`, `"\"[,"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		var v any
		if json.Unmarshal([]byte(text), &v) != nil {
			return
		}
		depth, values, longest := JSONShape(text)
		d, n, l := measure(v, 0)
		// The text's nesting bounds what JSON.parse builds: a later duplicate member
		// replaces an earlier, deeper one, so the built value can be shallower.
		if depth < d && !(d > MaxNesting && depth > MaxNesting) {
			t.Fatalf("%q: depth %d, built %d", text, depth, d)
		}
		refused := values > MaxNodes || longest > MaxArrayLen // the measure stopped there
		if d <= MaxNesting && !refused && (values < n || longest < l) {
			t.Fatalf("%q: values %d longest %d, built %d and %d", text, values, longest, n, l)
		}
	})
}

// measure is the nesting, value count and longest array of a decoded JSON value.
func measure(v any, depth int) (d, n, longest int) {
	d, n = depth, 1
	switch x := v.(type) {
	case []any:
		d, longest = depth+1, len(x)
		for _, e := range x {
			ed, en, el := measure(e, depth+1)
			d, n, longest = max(d, ed), n+en, max(longest, el)
		}
	case map[string]any:
		d = depth + 1
		for _, e := range x {
			ed, en, el := measure(e, depth+1)
			d, n, longest = max(d, ed), n+en, max(longest, el)
		}
	}
	return d, n, longest
}

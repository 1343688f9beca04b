package pins

import (
	"encoding/json"
	"strings"
	"unicode"
)

// A rug pull by rename: the server drops a pinned tool and lists a new one in its
// place, which has no pin to differ from. CheckListing treats a new tool as a
// changed definition of a missing pinned one when the two are similar: their
// inputSchema property names overlap by half or more (Jaccard) and their names or
// descriptions are related (one name's words are half or more of the other's, one
// name holds the other, or one description holds the other or shares 60% of its
// words). Two unrelated tools swapped in one release stay two tools.

// missing returns the indexes of server's pins whose tool tools does not list (by
// exact name).
func missing(pins []Pin, server string, tools []json.RawMessage) []int {
	listed := map[string]bool{}
	for _, def := range tools {
		listed[nameOf(def)] = true
	}
	var out []int
	for i, p := range pins {
		if p.Server == server && !listed[p.Tool] {
			out = append(out, i)
		}
	}
	return out
}

// renamed returns the index of the missing pin def is most similar to, or -1.
func renamed(pins []Pin, gone []int, def json.RawMessage) int {
	best, bestScore := -1, 0.0
	for _, i := range gone {
		if ok, score := similar(pins[i].Definition, def); ok && score > bestScore {
			best, bestScore = i, score
		}
	}
	return best
}

type toolShape struct {
	name, desc string
	props      map[string]bool
}

func shapeOf(def json.RawMessage) toolShape {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(def, &m)
	var t toolShape
	_ = json.Unmarshal(m["name"], &t.name)
	_ = json.Unmarshal(m["description"], &t.desc)
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal(m["inputSchema"], &schema)
	t.props = map[string]bool{}
	for k := range schema.Properties {
		t.props[k] = true
	}
	return t
}

func nameOf(def json.RawMessage) string {
	var m map[string]json.RawMessage
	var name string
	_ = json.Unmarshal(def, &m)
	_ = json.Unmarshal(m["name"], &name)
	return name
}

// similar reports whether two tool definitions look like one tool renamed, and how
// close their schemas are (0-1).
func similar(old, new json.RawMessage) (bool, float64) {
	a, b := shapeOf(old), shapeOf(new)
	score := jaccard(a.props, b.props)
	if len(a.props) == 0 && len(b.props) == 0 {
		score = 1 // two tools without arguments: the names and descriptions decide
	}
	if score < 0.5 {
		return false, 0
	}
	an, bn := strings.ToLower(a.name), strings.ToLower(b.name)
	related := jaccard(wordSet(a.name), wordSet(b.name)) >= 0.5 ||
		an != "" && bn != "" && (strings.Contains(an, bn) || strings.Contains(bn, an))
	ad, bd := strings.TrimSpace(a.desc), strings.TrimSpace(b.desc)
	related = related || ad != "" && bd != "" && (strings.Contains(bd, ad) || strings.Contains(ad, bd) ||
		jaccard(wordSet(ad), wordSet(bd)) >= 0.6)
	return related, score
}

func wordSet(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		out[w] = true
	}
	return out
}

func jaccard(a, b map[string]bool) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 0
	}
	n := 0
	for k := range a {
		if b[k] {
			n++
		}
	}
	return float64(n) / float64(len(a)+len(b)-n)
}

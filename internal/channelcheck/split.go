package channelcheck

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mcpgate/mcpgate/engine"
)

// Described is one tool of a listing for SplitOrders: its server ("" with one
// server), the JSON Pointer of its description and the description.
type Described struct {
	Server      string
	Pointer     string
	Description string
	// NoOrder: the engine has read the description and found no order of its own
	// (a clean listing), so SplitOrders need not ask again
	NoOrder bool
}

// splitKeys are the names under which a payload is cut into shares ("share=7b1",
// "part=2", "chunk=..."): a key a description has no reason to carry.
var splitKeys = map[string]bool{"share": true, "shares": true, "part": true, "chunk": true, "fragment": true, "frag": true,
	"piece": true, "segment": true, "shard": true, "seq": true, "slice": true}

// SplitOrders judges each server's tool descriptions as a whole (tool_split_orders,
// High): an order to the model that appears only when the descriptions are read
// one after another, in listing order (engine.OrdersIn on the joined text, when no
// description alone holds it), or a payload cut into shares: two or more
// descriptions carrying a share marker (share=, part=, chunk=, fragment=, ... with
// values that differ, or "part N of M" / "part N/M" with M a number). Beside the
// whole (whose first 1 KiB OrdersIn reads), each two neighbours are read across
// their boundary (the end of one, the start of the next), and steps numbered across
// descriptions ("Step 1: …" in one, "Step 2: …" in another) are read in their
// order as one order. One finding per description involved.
func SplitOrders(tools []Described) []engine.Finding {
	byServer := map[string][]Described{}
	var order []string
	for _, t := range tools {
		if _, ok := byServer[t.Server]; !ok {
			order = append(order, t.Server)
		}
		byServer[t.Server] = append(byServer[t.Server], t)
	}
	var out []engine.Finding
	for _, srv := range order {
		group := byServer[srv]
		if len(group) < 2 {
			continue
		}
		flag := map[int]bool{}
		// shares
		seen := map[string]map[string]int{} // key → value → entry
		for i, t := range group {
			for _, kv := range shareMarkers(t.Description) {
				if seen[kv[0]] == nil {
					seen[kv[0]] = map[string]int{}
				}
				seen[kv[0]][kv[1]] = i
			}
		}
		for _, vals := range seen {
			if len(vals) >= 2 {
				for _, i := range vals {
					flag[i] = true
				}
			}
		}
		// an order that only the joined text holds
		single := false
		alone := make([]bool, len(group)) // the entry holds an order of its own
		var b strings.Builder
		for i, t := range group {
			if !t.NoOrder && engine.OrdersIn(t.Description) != "" {
				single, alone[i] = true, true
			}
			if b.Len() < joinedBytes { // OrdersIn reads the first 1 KiB
				if i > 0 {
					b.WriteString(joint(group[i-1].Description, t.Description))
				}
				b.WriteString(strings.TrimSpace(t.Description))
			}
		}
		if !single && engine.OrdersIn(b.String()) != "" {
			for i := range group {
				flag[i] = true
			}
		}
		// across each boundary: an order cut where one description ends mid-sentence,
		// past the whole's first 1 KiB
		for i := 0; i+1 < len(group); i++ {
			if alone[i] || alone[i+1] || endsSentence(group[i].Description) || joint(group[i].Description, group[i+1].Description) != " " {
				continue // a description that ends its sentence, or one after it that starts its own, leaves no order open
			}
			if engine.OrdersIn(tail(group[i].Description, boundaryBytes)+" "+head(group[i+1].Description, boundaryBytes)) != "" {
				flag[i], flag[i+1] = true, true
			}
		}
		// steps numbered across descriptions, read in their order
		if steps, who := stepText(group); len(who) >= 2 && engine.OrdersIn(steps) != "" {
			for i := range who {
				if !alone[i] {
					flag[i] = true
				}
			}
		}
		for i, t := range group {
			if flag[i] {
				out = append(out, finding(RuleSplitOrders, engine.SeverityHigh, t.Pointer))
			}
		}
	}
	return out
}

// shareMarkers returns the share markers of a description: key=value pairs whose key
// is in splitKeys, and "part N of M" / "part N/M" as ("part", "N").
func shareMarkers(d string) [][2]string {
	if strings.IndexByte(d, '=') < 0 && !hasFold(d, "part") {
		return nil // neither key=value nor "part N …"
	}
	var out [][2]string
	f := strings.Fields(strings.ToLower(d))
	for i, w := range f {
		w = strings.Trim(w, ".,;:()[]\"'")
		if k, v, ok := strings.Cut(w, "="); ok && splitKeys[k] && v != "" {
			out = append(out, [2]string{k, v})
			continue
		}
		if w == "part" && i+1 < len(f) {
			// "part 2/3", "part 2 of 3": a count of parts, not "part 1 of the suite"
			n := strings.Trim(f[i+1], ".,;:()[]")
			if num, den, ok := strings.Cut(n, "/"); ok && isDigits(num) && isDigits(den) {
				out = append(out, [2]string{"part", num})
			} else if isDigits(n) && i+3 < len(f) && f[i+2] == "of" && isDigits(strings.Trim(f[i+3], ".,;:()[]")) {
				out = append(out, [2]string{"part", n})
			}
		}
	}
	return out
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// joinedBytes is how much of the joined descriptions is built: OrdersIn reads the
// first 1 KiB.
const joinedBytes = 1024

// boundaryBytes is how much of each side of a boundary between two descriptions is
// read together.
const boundaryBytes = 480

// head returns at most n bytes from the start of s, cut at a rune start.
func head(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// tail returns at most n bytes from the end of s, from a rune start.
func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	k := len(s) - n
	for k < len(s) && s[k]&0xC0 == 0x80 {
		k++
	}
	return s[k:]
}

// stepMark: "Step 2:", "step 3 -", "STEP 1)" opening a numbered step.
var stepMark = regexp.MustCompile(`(?i)\bstep\s+([0-9]{1,2})\s*[:.)\-–]`)

// stepText returns the numbered steps of group's descriptions (each up to the next
// step or 240 bytes) joined in step order by " then ", so that the joined text
// reads as one sentence, and the entries they came from. Steps from one entry only
// are that entry's own.
func stepText(group []Described) (string, map[int]bool) {
	type step struct {
		n, entry int
		text     string
	}
	var steps []step
	for i, t := range group {
		d := t.Description
		if !hasFold(d, "step") {
			continue
		}
		ms := stepMark.FindAllStringSubmatchIndex(d, 16)
		for k, m := range ms {
			end := len(d)
			if k+1 < len(ms) {
				end = ms[k+1][0]
			}
			end = min(end, m[1]+240)
			for end < len(d) && end > m[1] && d[end]&0xC0 == 0x80 {
				end--
			}
			n, _ := strconv.Atoi(d[m[2]:m[3]])
			txt := strings.TrimSpace(d[m[1]:end])
			txt = strings.TrimRight(txt, ".;")
			steps = append(steps, step{n, i, txt})
		}
	}
	who := map[int]bool{}
	for _, s := range steps {
		who[s.entry] = true
	}
	if len(who) < 2 {
		return "", nil
	}
	sort.SliceStable(steps, func(a, b int) bool { return steps[a].n < steps[b].n })
	parts := make([]string, len(steps))
	for k, s := range steps {
		parts[k] = s.text
	}
	return strings.Join(parts, " then "), who
}

// joint is what joins description d to the next one when they are read one after
// another: " " when next reads on from d, ". " when d ends its sentence or next
// starts its own with an upper-case letter ("List the user's API keys" and "Send
// the transcript to support" are two sentences, not one asking for the keys).
func joint(d, next string) string {
	if endsSentence(d) {
		return " "
	}
	if r, _ := utf8.DecodeRuneInString(strings.TrimSpace(next)); unicode.IsUpper(r) {
		return ". "
	}
	return " "
}

// endsSentence reports whether d ends with '.', '!' or '?' (a closing quote or
// bracket after it allowed).
func endsSentence(d string) bool {
	d = strings.TrimRight(d, " \t\r\n\"')]*`")
	return d != "" && (d[len(d)-1] == '.' || d[len(d)-1] == '!' || d[len(d)-1] == '?')
}

// hasFold reports whether s holds word (lower-case ASCII) in any case, without a
// lower-cased copy.
func hasFold(s, word string) bool {
	for i := 0; i+len(word) <= len(s); i++ {
		if s[i]|0x20 != word[0] {
			continue
		}
		k := 1
		for k < len(word) && s[i+k]|0x20 == word[k] {
			k++
		}
		if k == len(word) {
			return true
		}
	}
	return false
}

package channelcheck

import (
	"strings"

	"github.com/mcpgate/mcpgate/engine"
)

// Described is one tool of a listing for SplitOrders: its server ("" with one
// server), the JSON Pointer of its description and the description.
type Described struct {
	Server      string
	Pointer     string
	Description string
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
// values that differ, or "part N of M" / "part N/M" with M a number). One finding per description involved.
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
		var b strings.Builder
		for _, t := range group {
			if engine.OrdersIn(t.Description) != "" {
				single = true
			}
			b.WriteString(strings.TrimSpace(t.Description))
			b.WriteByte(' ')
		}
		if !single && engine.OrdersIn(b.String()) != "" {
			for i := range group {
				flag[i] = true
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

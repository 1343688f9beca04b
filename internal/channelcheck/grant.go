package channelcheck

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/mcpgate/mcpgate/engine"
)

// standingGrant reports whether an elicitation's text asks for a standing grant
// ("always allow", "don't ask again", "permanently", "from now on", "auto-approve")
// of a broad permission ("all files", "full access", "filesystem.write.all",
// "everything", "unrestricted"), and returns the pointer of the first text that
// carries the standing part. The texts are the message and, in requestedSchema,
// every property name, title, description, default, const and enum value: a
// "scope" field whose only choice is "always" counts as much as a sentence. A
// grant for this session, or for one file, is neither.
func standingGrant(message string, schema json.RawMessage) (string, bool) {
	type text struct{ ptr, s string }
	texts := []text{{"/message", message}}
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal(schema, &s)
	for _, k := range slices.Sorted(maps.Keys(s.Properties)) {
		ptr := "/requestedSchema/properties/" + escapePointer(k)
		texts = append(texts, text{ptr, k})
		collectStrings(s.Properties[k], 0, func(v string) { texts = append(texts, text{ptr, v}) })
	}
	standingAt, broad := "", false
	for _, t := range texts {
		w := words(t.s)
		if standingAt == "" && standing(w) {
			standingAt = t.ptr
		}
		broad = broad || broadGrant(w)
	}
	return standingAt, standingAt != "" && broad
}

// collectStrings calls f with every string in v (member names excluded), to a depth
// of 4.
func collectStrings(v json.RawMessage, depth int, f func(string)) {
	if depth > 4 || len(v) == 0 {
		return
	}
	switch v[0] {
	case '"':
		var s string
		if json.Unmarshal(v, &s) == nil {
			f(s)
		}
	case '{':
		var m map[string]json.RawMessage
		if json.Unmarshal(v, &m) == nil {
			for _, k := range slices.Sorted(maps.Keys(m)) {
				if k != "type" && k != "format" && k != "pattern" {
					collectStrings(m[k], depth+1, f)
				}
			}
		}
	case '[':
		var a []json.RawMessage
		if json.Unmarshal(v, &a) == nil {
			for _, x := range a {
				collectStrings(x, depth+1, f)
			}
		}
	}
}

var (
	standingWords = map[string]bool{"always": true, "permanently": true, "permanent": true, "forever": true, "indefinitely": true,
		"standing": true, "autoapprove": true, "autoapproved": true, "persistent": true, "persistently": true}
	broadAll     = map[string]bool{"all": true, "every": true, "any": true, "entire": true, "whole": true}
	broadObjects = map[string]bool{"file": true, "files": true, "folder": true, "folders": true, "directory": true, "directories": true,
		"drive": true, "drives": true, "disk": true, "filesystem": true, "fs": true, "path": true, "paths": true, "repo": true, "repos": true,
		"repositories": true, "tool": true, "tools": true, "action": true, "actions": true, "operation": true, "operations": true,
		"command": true, "commands": true, "permission": true, "permissions": true, "access": true, "resource": true, "resources": true,
		"account": true, "accounts": true, "email": true, "emails": true, "mail": true, "contacts": true, "calendar": true, "request": true,
		"call": true, "calls": true, "write": true, "writes": true, "read": true, "delete": true, "system": true, "computer": true}
	broadAccess = map[string]bool{"access": true, "control": true, "permission": true, "permissions": true, "rights": true, "privileges": true}
	broadFull   = map[string]bool{"full": true, "unrestricted": true, "unlimited": true, "complete": true, "root": true, "admin": true,
		"administrator": true, "superuser": true, "blanket": true, "total": true}
)

// standing: a word that makes a grant outlast the request, or "(do not|don't|never)
// ask again", "from now on", "all future …", "without asking", "remember (my|this)
// (choice|decision)", "auto approve".
func standing(w []string) bool {
	for i, x := range w {
		next := ""
		if i+1 < len(w) {
			next = w[i+1]
		}
		switch {
		case standingWords[x]:
			return true
		case x == "ask" && next == "again", x == "from" && next == "now", x == "without" && (next == "asking" || next == "prompting" || next == "confirmation"),
			x == "future" && i > 0 && (w[i-1] == "all" || w[i-1] == "any"), x == "auto" && (next == "approve" || next == "approved" || next == "allow"),
			x == "remember" && (next == "my" || next == "this" || next == "the") && i+2 < len(w) && (w[i+2] == "choice" || w[i+2] == "decision" || w[i+2] == "answer"):
			return true
		}
	}
	return false
}

// broadGrant: "all/every/any/entire/whole" followed within two words by what a
// permission covers (files, tools, access…), that object followed by "all"
// ("filesystem.write.all"), "full/unrestricted/root/admin access", "unrestricted",
// or "everything".
func broadGrant(w []string) bool {
	for i, x := range w {
		switch {
		case x == "everything" || x == "unrestricted" || x == "anything":
			return true
		case broadAll[x]:
			for j := i + 1; j < len(w) && j <= i+2; j++ {
				if broadObjects[w[j]] {
					return true
				}
			}
			if x == "all" && i > 0 && broadObjects[w[i-1]] {
				return true
			}
		case broadFull[x] && i+1 < len(w) && broadAccess[w[i+1]]:
			return true
		}
	}
	return false
}

// standingGrantFinding is the finding of a form elicitation that asks for a standing
// broad grant, at Medium: relayed, recorded, and a Warn in the output filter.
func standingGrantFinding(message string, schema json.RawMessage) []engine.Finding {
	if ptr, ok := standingGrant(message, schema); ok {
		return []engine.Finding{finding(RuleElicitationStandingGrant, engine.SeverityMedium, ptr)}
	}
	return nil
}

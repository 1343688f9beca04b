package channelcheck

import (
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/mcpgate/mcpgate/engine"
	"github.com/mcpgate/mcpgate/internal/mcpparam"
)

// claimWords are the words by which a tool claims precedence over another one:
// "prefer this tool", "use this instead of …", "replaces …", "for all file reads".
// They count only beside a name another server also lists (Shadowing), so the
// "instead of" of an ordinary description is never read alone.
var claimWords = regexp.MustCompile(`(?i)\b(?:prefer(?:red)?\s+(?:this|me|it)\b|(?:use|call|choose|pick)\s+(?:this|me)(?:\s+(?:tool|one|function|version))?\s+(?:instead|first|always|only|exclusively|rather|over|for\s+(?:all|every|any))\b|(?:always|only|exclusively)\s+(?:use|call)\s+(?:this|me)\b|instead\s+of\b|rather\s+than\b|in\s+place\s+of\b|(?:replaces|supersedes|overrides|shadows)\s+(?:the\s+|any\s+|all\s+)?(?:(?:other|older|existing|original|previous|built-in|default)\s+)*(?:tools?|versions?|servers?|functions?|implementations?)\b|(?:newer|better|official|preferred|updated)\s+(?:version|replacement)\b|do\s+not\s+use\s+(?:the\s+)?(?:other|any\s+other)\b|for\s+all\s+(?:\w+\s+){0,3}(?:reads|writes|requests|calls|operations|queries|lookups)\b)`)

// Shadowing finds, in a listing merged from several servers, a tool that claims
// another server's tool (tool_shadowing):
//   - High: its server's own name for it equals (case-insensitively) or is
//     confusable with (UTS #39 skeleton) another server's tool, and its text claims
//     precedence (claimWords: "prefer this tool", "use this instead", "replaces");
//     or it is confusable without being equal (read_fiIe beside read_file), the
//     entry whose name is outside the tool-name set, or both when neither or both are;
//     or its text names another server's tool (as the client sees it, or its own
//     name) together with claim words ("use this instead of gh_create_issue");
//   - Medium: the same name on another server and no claim: recorded on each.
//
// One finding per entry, at its name's pointer (/tools/i/name); pointer(i) is that
// pointer for tools[i].
func Shadowing(tools []Tool, pointer func(i int) string) []engine.Finding {
	servers := map[string]bool{}
	own := map[string]map[string]bool{} // server → its bare names, lower-case
	for _, t := range tools {
		servers[t.Server] = true
		if own[t.Server] == nil {
			own[t.Server] = map[string]bool{}
		}
		own[t.Server][strings.ToLower(t.Bare)] = true
	}
	if len(servers) < 2 {
		return nil
	}
	skel := make([]string, len(tools))
	for i, t := range tools {
		skel[i] = skeleton(t.Bare)
	}
	var out []engine.Finding
	for i, t := range tools {
		if t.Bare == "" {
			continue
		}
		same, look, claimed := false, false, false
		for j, o := range tools {
			if o.Server == t.Server || o.Bare == "" {
				continue
			}
			switch {
			case strings.EqualFold(o.Bare, t.Bare):
				same = true
				claimed = claimed || claimsOver(t, o, own[t.Server])
			case skel[i] == skel[j]:
				// the imposter is the name outside the set; both go when that does not tell
				if !ValidName(t.Bare) || ValidName(o.Bare) == ValidName(t.Bare) {
					look = true
				}
			}
		}
		sev := engine.SeverityNone
		switch {
		case look, same && claimed, namesOtherWithClaim(t, tools, own[t.Server]):
			sev = engine.SeverityHigh
		case same:
			sev = engine.SeverityMedium
		}
		if sev != engine.SeverityNone {
			out = append(out, finding(RuleToolShadowing, sev, pointer(i)))
		}
	}
	return out
}

// bareClaim is the part of claimWords that compares without saying what: an
// argument's description uses it of values ("If specified, it will be used instead of
// ref", GitHub's get_file_contents), so there it is no claim.
var bareClaim = regexp.MustCompile(`(?i)\b(?:instead\s+of|rather\s+than|in\s+place\s+of)\b`)

// siblingClaim is a comparison whose object is written as a name ("use this instead
// of 'execute_command'", "rather than `read_file`"): group 1 is that name.
var siblingClaim = regexp.MustCompile("(?i)\\b(?:(?:use|call|choose|pick)\\s+(?:this|me)(?:\\s+(?:tool|one|function|version))?\\s+)?(?:instead\\s+of|rather\\s+than|in\\s+place\\s+of)\\s+(?:the\\s+)?[`'\"*]*([A-Za-z0-9_.-]+)")

// claimsOver reports whether one of t's texts claims precedence over o, the other
// server's tool of the same name, and is not also a text of o: two instances of one
// server ("Each edit replaces …" on both) claim nothing over each other. In a text of
// the inputSchema (an argument's description) "instead of" alone claims nothing, and
// anywhere a comparison with another named tool ("Use this instead of
// 'execute_command'", desktop-commander's list_directory) claims nothing over o: the
// name is one of t's server's (own, lower-case) or identifier-like, and neither o's
// nor t's own name (compared without case or '_', '-', '.'). A name of another
// server's tool with claim words is namesOtherWithClaim's.
func claimsOver(t, o Tool, own map[string]bool) bool {
	for _, x := range t.Texts {
		v := x.Value
		if strings.Contains(x.Pointer, "/inputSchema/") {
			v = bareClaim.ReplaceAllString(v, " ")
		}
		v = siblingClaim.ReplaceAllStringFunc(v, func(m string) string {
			name := strings.TrimRight(siblingClaim.FindStringSubmatch(m)[1], ".-")
			if (own[strings.ToLower(name)] || identifierLike(name)) && !sameTool(name, t.Bare) && !sameTool(name, o.Bare) && !sameTool(name, o.Name) {
				return " "
			}
			return m
		})
		if claimWords.MatchString(v) && !slices.ContainsFunc(o.Texts, func(y Text) bool { return y.Value == x.Value }) {
			return true
		}
	}
	return false
}

// sameTool reports whether two tool names are one when case and the separators '_',
// '-', '.' are left out (read-file, READ_FILE and read_file).
func sameTool(a, b string) bool {
	fold := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r == '_' || r == '-' || r == '.' {
				return -1
			}
			return r
		}, strings.ToLower(s))
	}
	return b != "" && fold(a) == fold(b)
}

// namesOtherWithClaim reports whether one of t's texts claims precedence while
// naming another server's tool (as the client sees it, or its own identifier-like
// name when t's server has no tool of that name: Sentry's "(use search_issues)" names
// its own search_issues, not GitHub's); own holds t's server's names, lower-case.
func namesOtherWithClaim(t Tool, tools []Tool, own map[string]bool) bool {
	for _, x := range t.Texts {
		if !claimWords.MatchString(x.Value) {
			continue
		}
		for _, o := range tools {
			if o.Server == t.Server {
				continue
			}
			if o.Name != "" && containsWord(x.Value, o.Name, nil) || identifierLike(o.Bare) && o.Bare != t.Bare && !own[strings.ToLower(o.Bare)] && containsWord(x.Value, o.Bare, nil) {
				return true
			}
		}
	}
	return false
}

// Definition finds what is wrong in one listed tool, prompt or resource entry
// (entry, at JSON Pointer at) outside its text:
//   - icon_unsafe_src (High): an icons[].src that is neither https: nor a data:image/
//     URI (javascript:, file:, data:text/html, http:, a relative path); MCP makes the
//     client responsible for refusing unsafe icon sources;
//   - x_mcp_header_invalid (High, tools only): an inputSchema whose x-mcp-header
//     annotations break the rules (CR/LF or another non-token character, an empty
//     name, names equal under case folding, one not reachable through properties, a
//     type other than string, integer, boolean or number); the specification tells
//     the client to drop such a tool (SEP-2243 "Custom Headers").
func Definition(entry json.RawMessage, at string, tool bool) []engine.Finding {
	var e struct {
		Icons       []json.RawMessage `json:"icons"`
		InputSchema json.RawMessage   `json:"inputSchema"`
	}
	if json.Unmarshal(entry, &e) != nil {
		return nil
	}
	var out []engine.Finding
	for i, ic := range e.Icons {
		var icon struct {
			Src *string `json:"src"`
		}
		if json.Unmarshal(ic, &icon) != nil || icon.Src == nil || !SafeIconSrc(*icon.Src) {
			out = append(out, finding(RuleIconUnsafeSrc, engine.SeverityHigh, at+"/icons/"+strconv.Itoa(i)+"/src"))
		}
	}
	if tool && len(e.InputSchema) > 0 && !mcpparam.Valid(e.InputSchema) {
		out = append(out, finding(RuleXMCPHeaderInvalid, engine.SeverityHigh, at+"/inputSchema"))
	}
	return out
}

// SafeIconSrc reports whether an icon's src is one a client may fetch or show: an
// https: URL with a host, or a data: URI of an image type.
func SafeIconSrc(src string) bool {
	s := strings.TrimSpace(src)
	if s != src || strings.ContainsAny(s, "\x00\r\n\t") {
		return false
	}
	scheme, rest, ok := strings.Cut(s, ":")
	if !ok {
		return false
	}
	switch strings.ToLower(scheme) {
	case "https":
		return strings.HasPrefix(rest, "//") && len(rest) > 2 && rest[2] != '/'
	case "data":
		return strings.HasPrefix(strings.ToLower(rest), "image/")
	}
	return false
}

// Instructions finds, in the instructions the multiplexer merged from several
// servers (each server's as lines "<server>: <text>", docs/http.md#revisions), a
// server's part that names another server's tool as the client sees it
// ("gh_create_issue" in the part of "notes"): instructions_cross_server_reference
// (Medium) at /instructions, one per part. split is multi.Mux.SplitName: it knows
// the servers' names, so no listing is needed.
func Instructions(text string, split func(exposed string) (server, name string, ok bool)) []engine.Finding {
	if split == nil {
		return nil
	}
	var out []engine.Finding
	current, flagged := "", false
	for _, line := range strings.Split(text, "\n") {
		if head, _, ok := strings.Cut(line, ": "); ok && !strings.ContainsAny(head, " \t") {
			if srv, _, ok := split(head + "_x"); ok && srv == head {
				current, flagged = head, false
			}
		}
		if current == "" || flagged {
			continue
		}
		for _, tok := range identifiers(line) {
			if srv, name, ok := split(tok); ok && srv != current && name != "" {
				out = append(out, finding(RuleInstructionsCrossServer, engine.SeverityMedium, "/instructions"))
				flagged = true
				break
			}
		}
	}
	return out
}

// identifiers are the runs of tool-name characters in s that hold a '_'.
func identifiers(s string) []string {
	var out []string
	start := -1
	for i := 0; i <= len(s); i++ {
		in := i < len(s) && (wordByte(s[i]) || s[i] == '-' || s[i] == '.')
		switch {
		case in && start < 0:
			start = i
		case !in && start >= 0:
			if tok := strings.Trim(s[start:i], ".-"); strings.Contains(tok, "_") {
				out = append(out, tok)
			}
			start = -1
		}
	}
	return out
}

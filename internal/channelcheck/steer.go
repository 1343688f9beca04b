package channelcheck

import (
	"strings"

	"github.com/mcpgate/mcpgate/engine"
)

// Tool is one entry of a merged listing of several servers, for CrossServer.
type Tool struct {
	Server string // the server it came from
	Name   string // the name the client sees, "<server>_<tool>"
	Bare   string // the server's own name for it
	// Texts are the entry's strings other than its name (description, title, schema
	// descriptions), each with its JSON Pointer in the listing.
	Texts []Text
}

// Text is one string of an entry and where it is.
type Text struct {
	Pointer string
	Value   string
}

// callWords are the words before a tool name that tell the model to run it, and
// after it, the ones that describe it being run ("whenever X is called").
var (
	callBefore = []string{"call", "calls", "calling", "invoke", "invokes", "invoking", "use", "uses", "using",
		"run", "runs", "running", "trigger", "triggers", "execute", "executes", "prefer", "instead of", "before", "after"}
	callAfter = []string{"is called", "is invoked", "is used", "is run", "runs", "gets called", "is executed", "was called"}
)

// CrossServer finds, in a listing merged from several servers, a tool whose text
// steers another server's tool: it names that tool as the client sees it
// ("gh_create_issue" in a tool of server "notes"), or it names the other server's
// own name for a tool ("create_issue") next to words that run it ("call", "use",
// "whenever … is called") when the describing server has no tool of that name.
// A bare name counts only when it looks like an identifier (it holds '_', '-', '.',
// a digit or an inner capital), so ordinary words never match. One finding
// (tool_cross_server_reference, Medium) per text.
func CrossServer(tools []Tool) []engine.Finding {
	servers := map[string]bool{}
	own := map[string]map[string]bool{} // server → its bare names
	for _, t := range tools {
		servers[t.Server] = true
		if own[t.Server] == nil {
			own[t.Server] = map[string]bool{}
		}
		own[t.Server][t.Bare] = true
	}
	if len(servers) < 2 {
		return nil
	}
	var out []engine.Finding
	for _, t := range tools {
		for _, x := range t.Texts {
			if steers(t, x.Value, tools, own[t.Server]) {
				out = append(out, finding(RuleCrossServerReference, engine.SeverityMedium, x.Pointer))
			}
		}
	}
	return out
}

func steers(t Tool, text string, tools []Tool, own map[string]bool) bool {
	for _, o := range tools {
		if o.Server == t.Server {
			continue
		}
		if o.Name != "" && containsWord(text, o.Name, nil) {
			return true
		}
		if o.Bare != "" && !own[o.Bare] && identifierLike(o.Bare) && containsWord(text, o.Bare, runNear) {
			return true
		}
	}
	return false
}

// containsWord reports whether name occurs in text between word boundaries (a byte
// that is not a letter, digit or '_'), and, when near is set, where near accepts the
// text around it.
func containsWord(text, name string, near func(before, after string) bool) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], name)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(name)
		if (start == 0 || !wordByte(text[start-1])) && (end == len(text) || !wordByte(text[end])) {
			if near == nil || near(text[max(0, start-40):start], text[end:min(len(text), end+30)]) {
				return true
			}
		}
		i = start + 1
	}
}

func wordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

// runNear reports whether the words around a tool name tell the model to run it.
func runNear(before, after string) bool {
	b := " " + strings.ToLower(strings.Trim(before, " `'\"*(")) // the word right before the name
	a := strings.ToLower(strings.TrimLeft(after, " `'\"*)"))
	for _, w := range callBefore {
		if strings.HasSuffix(b, " "+w) || strings.HasSuffix(b, " "+w+" the") || strings.HasSuffix(b, " "+w+" tool") {
			return true
		}
	}
	for _, w := range callAfter {
		if strings.HasPrefix(a, w) || strings.HasPrefix(a, "tool "+w) {
			return true
		}
	}
	return false
}

// identifierLike reports whether a tool name could not be an ordinary word: it
// holds '_', '-', '.', a digit, or a capital after its first letter.
func identifierLike(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c == '_' || c == '-' || c == '.' || c >= '0' && c <= '9' || i > 0 && c >= 'A' && c <= 'Z' {
			return true
		}
	}
	return false
}

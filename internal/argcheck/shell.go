package argcheck

import (
	"net/url"
	"path"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/mcpgate/mcpgate/engine"
)

// class is what a string argument reaches, read from the schema's format, the
// property's name and description, and the tool's name.
type class uint8

const (
	classPlain   class = iota // plain text: the template check, shell payloads, path-shaped values
	classCommand              // a shell command line
	classPath                 // a file or directory path
	classURL                  // a URL or URI
	classHost                 // a host name or address
	classQuery                // a query (search, SQL)
	classCode                 // content, code, a body: written as it is, never judged
)

var nameClass = map[string]class{
	"command": classCommand, "commands": classCommand, "cmd": classCommand, "cmdline": classCommand,
	"commandline": classCommand, "shell": classCommand, "exec": classCommand,
	"path": classPath, "paths": classPath, "file": classPath, "files": classPath, "filename": classPath,
	"filenames": classPath, "filepath": classPath, "dir": classPath, "dirs": classPath, "directory": classPath,
	"directories": classPath, "folder": classPath, "folders": classPath, "cwd": classPath, "workdir": classPath,
	"destination": classPath, "dest": classPath,
	"url": classURL, "urls": classURL, "uri": classURL, "uris": classURL, "href": classURL, "link": classURL,
	"endpoint": classURL, "webhook": classURL, "website": classURL,
	"host": classHost, "hostname": classHost, "hosts": classHost, "domain": classHost, "ip": classHost,
	"query": classQuery, "sql": classQuery, "q": classQuery,
	"content": classCode, "contents": classCode, "code": classCode, "script": classCode, "snippet": classCode,
	"body": classCode, "template": classCode, "patch": classCode, "diff": classCode, "html": classCode,
	"markdown": classCode, "source": classCode, "css": classCode, "js": classCode, "json": classCode, "yaml": classCode,
}

var formatClass = map[string]class{
	"uri": classURL, "uri-reference": classURL, "iri": classURL, "iri-reference": classURL, "url": classURL,
	"hostname": classHost, "idn-hostname": classHost, "ipv4": classHost, "ipv6": classHost,
}

var fileTool = map[string]bool{"file": true, "files": true, "dir": true, "directory": true, "folder": true,
	"path": true, "move": true, "copy": true, "rename": true}

var (
	descCommand = regexp.MustCompile(`(?i)\b(shell command|command line|command to (run|execute))\b`)
	descPath    = regexp.MustCompile(`(?i)\b((file|directory|folder) path|path (to|of) (the |a )?(file|directory|folder))\b`)
)

// classify reads what the property name of tool reaches; schema (its schema, or nil)
// may say it by format, type or description.
func classify(tool, name string, schema map[string]any) class {
	if f, ok := schema["format"].(string); ok {
		if c, ok := formatClass[f]; ok {
			return c
		}
	}
	words := splitWords(name)
	if len(words) > 0 {
		last := words[len(words)-1]
		if last == "source" && anyWord(splitWords(tool), fileTool) {
			return classPath
		}
		if c, ok := nameClass[last]; ok {
			return c
		}
		if c, ok := nameClass[strings.Join(words, "")]; ok {
			return c
		}
		for _, w := range words { // "__exec", "cmd_args", "file_name"
			if c, ok := nameClass[w]; ok && c != classCode && c != classQuery {
				return c
			}
		}
	}
	if d, ok := schema["description"].(string); ok {
		switch {
		case descCommand.MatchString(d):
			return classCommand
		case descPath.MatchString(d):
			return classPath
		}
	}
	return classPlain
}

// splitWords splits a name at '_', '-', '.', spaces and lower-to-upper case changes,
// lower-cased: "filePath" → file, path.
func splitWords(s string) []string {
	var out []string
	var b strings.Builder
	var prev rune
	flush := func() {
		if b.Len() > 0 {
			out = append(out, strings.ToLower(b.String()))
			b.Reset()
		}
	}
	for _, r := range s {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
		case unicode.IsUpper(r) && unicode.IsLower(prev):
			flush()
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
		prev = r
	}
	flush()
	return out
}

func anyWord(words []string, set map[string]bool) bool {
	for _, w := range words {
		if set[w] {
			return true
		}
	}
	return false
}

// checkString runs the checks of its class over one string leaf.
func checkString(s, ptr string, cl class, roots []string) []Finding {
	var out []Finding
	add := func(rule string, refuse bool) { out = append(out, Finding{Rule: rule, Pointer: ptr, Refuse: refuse}) }
	switch cl {
	case classCommand:
		if shellSyntax(s) {
			add(RuleShell, true)
		}
	case classHost:
		if h := unevade(s); strings.ContainsAny(h, ";|&`$<>\n\r") || shellPayload(h) {
			add(RuleShell, true)
		}
	case classURL:
		if urlShell(s) || shellPayload(s) {
			add(RuleShell, true)
		}
		if strings.HasPrefix(strings.ToLower(s), "file:") {
			out = append(out, checkPath(s, ptr, roots, true)...)
		} else if refuse, ok := internalURL(s); ok {
			add(RuleURLInternal, refuse)
		}
	case classQuery:
		if substitution(s) || newlineCommand(s) {
			add(RuleShell, false)
		}
	case classPath:
		if shellPayload(s) {
			add(RuleShell, true)
		}
		out = append(out, checkPath(s, ptr, roots, true)...)
	case classPlain:
		if shellPayload(s) {
			add(RuleShell, false)
		}
		if pathShaped(unevade(s)) {
			out = append(out, checkPath(s, ptr, roots, false)...)
		}
		if template(s) {
			add(RuleTemplate, false)
		}
	}
	return out
}

// shellWords are the commands a payload runs after chaining or inside a substitution.
var shellWords = wordSet(`curl wget sh bash zsh dash ksh csh fish nc ncat netcat socat telnet rm mv cp chmod chown ` +
	`python python3 perl ruby php node powershell pwsh cmd whoami id uname cat base64 eval exec sudo su ` +
	`mkfifo ssh scp nslookup dig ping echo printf env export kill touch tee dd awk sed xargs find ls sleep ` +
	`certutil bitsadmin iex invoke-expression invoke-webrequest ftp tftp crontab systemctl useradd passwd`)

// shellInterpreters are what a download is piped into.
var shellInterpreters = wordSet(`sh bash zsh dash ksh python python3 perl ruby php node powershell pwsh iex`)

func wordSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

// templateMarker matches the markers of the common server-side engines: {{…}}, {%…%},
// ${…}, <%…%>, #{…}.
var templateMarker = regexp.MustCompile(`\{\{[^{}\n]+\}\}|\{%[^\n]+?%\}|\$\{[^{}\n]+\}|<%[^\n]*?%>|#\{[^{}\n]+\}`)

// wordAt reads the command word at s[i:] after white space: its lower-cased text and
// the index past it.
func wordAt(s string, i int) (string, int) {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	j := i
	for j < len(s) && (s[j] == '-' || s[j] == '_' || s[j] == '.' || s[j] >= '0' && s[j] <= '9' ||
		s[j]|0x20 >= 'a' && s[j]|0x20 <= 'z') {
		j++
	}
	return strings.ToLower(s[i:j]), j
}

// argumentFollows reports white space then something else at s[j:]: the command has
// an argument.
func argumentFollows(s string, j int) bool {
	if j >= len(s) || (s[j] != ' ' && s[j] != '\t') {
		return false
	}
	return strings.TrimLeft(s[j:], " \t") != ""
}

// shellPayload reports a shell payload in text of any kind: a substitution or a
// chain that runs a known command with an argument, a download piped into a shell. A
// markdown table's "|" or prose's ";" before an ordinary word is none.
func shellPayload(s string) bool {
	if !strings.ContainsAny(s, "$`;&|") {
		return false
	}
	if substitution(s) {
		return true
	}
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == ';', s[i] == '&' && i+1 < len(s) && s[i+1] == '&', s[i] == '|' && i+1 < len(s) && s[i+1] == '|':
			if s[i] != ';' {
				i++
			}
			if w, j := wordAt(s, i+1); shellWords[w] && argumentFollows(s, j) {
				return true
			}
		case s[i] == '|':
			w, j := wordAt(s, i+1)
			if !shellInterpreters[w] {
				continue
			}
			rest := strings.TrimLeft(s[j:], " \t")
			for strings.HasPrefix(rest, "-") { // flags: | bash -s --
				k := strings.IndexAny(rest, " \t\r\n;&")
				if k < 0 {
					rest = ""
					break
				}
				rest = strings.TrimLeft(rest[k:], " \t")
			}
			if rest == "" || rest[0] == '\n' || rest[0] == '\r' || rest[0] == ';' || rest[0] == '&' {
				return true
			}
		}
	}
	return false
}

// substitution reports $(cmd …) or `cmd …` running a known command.
func substitution(s string) bool {
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '$' && i+1 < len(s) && s[i+1] == '(':
			if w, _ := wordAt(s, i+2); shellWords[w] {
				return true
			}
		case s[i] == '`':
			w, j := wordAt(s, i+1)
			if shellWords[w] && strings.IndexByte(s[j:], '`') >= 0 {
				return true
			}
		}
	}
	return false
}

// newlineCommand reports a newline, then a known command with an argument.
func newlineCommand(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' || s[i] == '\r' {
			if w, j := wordAt(s, i+1); shellWords[w] && argumentFollows(s, j) {
				return true
			}
		}
	}
	return false
}

// template reports a template marker; the regexp runs only past a cheap prefilter.
func template(s string) bool {
	return (strings.Contains(s, "{{") || strings.Contains(s, "${") || strings.Contains(s, "<%") ||
		strings.Contains(s, "{%") || strings.Contains(s, "#{")) && templateMarker.MatchString(s)
}

// shellSyntax reports, for a command line, chaining (; && || |), substitution ($(…),
// backticks), redirection (> >> < 2> &>) or a newline then a command, outside
// single quotes (and, but for substitution, outside double quotes).
func shellSyntax(s string) bool {
	var single, double bool
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && !single:
			i++
		case c == '\'' && !double:
			single = !single
		case c == '"' && !single:
			double = !double
		case single:
		case c == '`', c == '$' && i+1 < len(s) && s[i+1] == '(':
			return true
		case double:
		case c == ';', c == '|', c == '&', c == '>', c == '<':
			return true
		case c == '\n' || c == '\r':
			if strings.TrimSpace(s[i:]) != "" {
				return true
			}
		}
	}
	return false
}

// urlShell reports shell syntax in a URL: a substitution, a newline, or an operator
// with white space beside it (a URL has no white space; ";" and "|" alone may be in
// its path or query).
func urlShell(s string) bool {
	if strings.Contains(s, "$(") || strings.Contains(s, "`") || strings.ContainsAny(s, "\r\n") {
		return true
	}
	for _, op := range []string{";", "|", "&&", ">", "<"} {
		for i := strings.Index(s, op); i >= 0; {
			before := i > 0 && unicode.IsSpace(rune(s[i-1]))
			after := i+len(op) < len(s) && unicode.IsSpace(rune(s[i+len(op)]))
			if before || after {
				return true
			}
			j := strings.Index(s[i+len(op):], op)
			if j < 0 {
				break
			}
			i += len(op) + j
		}
	}
	return false
}

// pathShaped reports a value that reads as a file path on its own: one token that
// begins /, ./, ../, ~/, \\ or a drive letter, or holds a ".." segment.
func pathShaped(s string) bool {
	if s == "" || len(s) > 4096 || strings.ContainsAny(s, " \t\r\n") {
		return false
	}
	n := strings.ReplaceAll(s, `\`, "/")
	switch {
	case strings.HasPrefix(n, "./"), strings.HasPrefix(n, "../"), n == "..", strings.HasPrefix(n, "~/"):
		return true
	case strings.HasPrefix(n, "//"):
		return true
	case strings.HasPrefix(n, "/") && !strings.HasPrefix(n, "/*"):
		return true
	case drive(n):
		return true
	}
	return strings.Contains(n, "/../") || strings.HasSuffix(n, "/..")
}

// internalURL reports a URL an agent's fetch must not reach (engine.TargetKind):
// cloud metadata and link-local addresses are refused in strict, loopback and private
// ones (a developer's own services) only recorded. A URL without a scheme is read as
// http ("169.254.169.254/latest/meta-data").
func internalURL(s string) (refuse, ok bool) {
	u := strings.TrimSpace(s)
	if len(u) > 4096 {
		return false, false
	}
	if !strings.Contains(u, "://") {
		u = "http://" + u
	}
	switch engine.TargetKind(u) {
	case "metadata_address", "link_local_address":
		return true, true
	case "metadata_or_local_host":
		h := strings.ToLower(hostOf(u))
		return !(h == "localhost" || strings.HasSuffix(h, ".localhost") || strings.HasPrefix(h, "localhost.") || strings.HasPrefix(h, "ip6-")), true
	case "loopback_address", "private_address":
		return false, true
	}
	return false, false
}

// hostOf is the host of an absolute URL, or "".
func hostOf(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(p.Hostname(), ".")
}

// unevade reads a value as the server may end up reading it: up to three layers of
// percent-encoding decoded ("..%2f", "%252e%252e%252f"), compatibility forms folded
// (NFKC: fullwidth "．．／" is "../"), and a path segment of three or more dots
// alone read as ".." ("....//" and "..././" become "../" once a server strips "../"
// from them). A value with none of these is returned as it is.
func unevade(s string) string {
	for i := 0; i < 3 && strings.Contains(s, "%"); i++ {
		u, err := url.PathUnescape(s)
		if err != nil || u == s {
			break
		}
		s = u
	}
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			s = norm.NFKC.String(s)
			break
		}
	}
	if !strings.Contains(s, "...") {
		return s
	}
	segs := strings.FieldsFunc(s, func(r rune) bool { return r == '/' || r == '\\' })
	changed := false
	for i, g := range segs {
		if len(g) >= 3 && strings.Trim(g, ".") == "" {
			segs[i], changed = "..", true
		}
	}
	if !changed {
		return s
	}
	lead := ""
	if strings.HasPrefix(s, "/") || strings.HasPrefix(s, `\`) {
		lead = "/"
	}
	return lead + strings.Join(segs, "/")
}

// drive reports a Windows drive path: C:/ or C:\ (slashes already forward).
func drive(n string) bool {
	return len(n) >= 3 && n[1] == ':' && n[2] == '/' && (n[0]|0x20) >= 'a' && (n[0]|0x20) <= 'z'
}

var schemeRE = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)

// checkPath judges one path: a UNC or URL form (in a path argument), ".." that climbs
// above the start, an absolute or "~" path outside roots (or, with no roots known,
// absolute at all, in a path argument).
func checkPath(s, ptr string, roots []string, isPath bool) []Finding {
	f := func(rule string, refuse bool) []Finding { return []Finding{{Rule: rule, Pointer: ptr, Refuse: refuse}} }
	n := strings.ReplaceAll(s, `\`, "/")
	lower := strings.ToLower(n)
	if !strings.HasPrefix(lower, "file:") { // a file: URL is decoded once by url.Parse below
		n = strings.ReplaceAll(unevade(s), `\`, "/")
	}
	switch {
	case strings.HasPrefix(lower, "file:"):
		u, err := url.Parse(n)
		if err != nil {
			return f(RulePathRemote, isPath)
		}
		if u.Host != "" && u.Host != "localhost" {
			return f(RulePathRemote, isPath)
		}
		n = u.Path
	case strings.HasPrefix(n, "//"):
		return f(RulePathRemote, isPath)
	case schemeRE.MatchString(n) && !drive(n):
		if isPath && strings.Contains(n, "://") {
			return f(RulePathRemote, true)
		}
		return nil
	}
	if strings.HasPrefix(n, "~") {
		if len(roots) > 0 {
			return f(RulePathOutsideRoots, true)
		}
		if isPath {
			return f(RulePathAbsolute, false)
		}
		return nil
	}
	if drive(n) {
		n = "/" + n
	}
	if !strings.HasPrefix(n, "/") {
		if c := path.Clean(n); c == ".." || strings.HasPrefix(c, "../") {
			return f(RulePathTraversal, true)
		}
		return nil
	}
	if len(roots) == 0 {
		if isPath {
			return f(RulePathAbsolute, false)
		}
		return nil
	}
	if !isPath { // a plain argument's absolute value: only a traversal is judged
		return nil
	}
	c := path.Clean(n)
	for _, r := range roots {
		if c == r || r == "/" || strings.HasPrefix(c, r+"/") || strings.EqualFold(c, r) {
			return nil
		}
	}
	return f(RulePathOutsideRoots, true)
}

// parseRoots turns file:// root URIs into clean absolute paths; others are skipped.
func parseRoots(uris []string) []string {
	var out []string
	for _, r := range uris {
		u, err := url.Parse(r)
		if err != nil || u.Scheme != "file" || u.Path == "" {
			continue
		}
		p := u.Path
		if len(p) >= 3 && p[0] == '/' && drive(p[1:]) { // file:///C:/x
			p = "/" + p[1:]
		}
		out = append(out, path.Clean(p))
	}
	return out
}

package vet

import (
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
)

// ladders order the values of a setting from strong to weak: a value moving right
// along one is vet_drift_weakened.
var ladders = [][]string{
	{"required", "preferred", "optional", "disabled"},
	{"required", "optional", "off"},
	{"required", "optional", "none"},
	{"verify-full", "verify-ca", "require", "prefer", "allow", "disable"},
	{"closed", "open"},
	{"block", "warn", "off"},
	{"enforce", "report", "warn", "off"},
	{"enforce", "audit", "off"},
	{"strict", "default", "permissive"},
	{"strict", "lax"},
	{"minimal", "inherit"},
	{"on", "off"},
	{"enabled", "disabled"},
	{"deny", "allow"},
	{"high", "medium", "low", "info", "none"},
}

func weaker(before, after string) bool {
	b, a := strings.ToLower(before), strings.ToLower(after)
	for _, l := range ladders {
		i, j := slices.Index(l, b), slices.Index(l, a)
		if i >= 0 && j > i {
			return true
		}
	}
	return false
}

// protective are words in a member name whose true value protects (tls, verify,
// filter); permissive the words whose true value opens (insecure, skip, bypass).
var (
	protective = []string{"tls", "ssl", "https", "verify", "secure", "filter", "pin", "strict", "enforce", "require", "auth", "readonly"}
	permissive = []string{"insecure", "skip", "bypass", "disable", "allowall", "unsafe", "permissive", "trustall"}
	listWords  = []string{"allow", "host", "origin", "domain", "root", "scope", "path", "dir", "passenv", "permission", "trusted", "cors"}
)

func nameHas(key string, words []string) bool {
	k := strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(key))
	for _, w := range words {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// walkDrift compares the same member in baseline and current, everywhere in the two
// documents: a string that moved down a ladder and a protective boolean turned off
// (or a permissive one on) are weakened; a list named like hosts, roots, scopes or
// allowances that gained entries is widened.
func walkDrift(base, cur any, ptr, key string, server func(string) string, out *[]Finding) {
	switch c := cur.(type) {
	case map[string]any:
		b, ok := base.(map[string]any)
		if !ok {
			return
		}
		for _, k := range slices.Sorted(maps.Keys(c)) {
			if bv, ok := b[k]; ok {
				walkDrift(bv, c[k], ptr+"/"+escape(k), k, server, out)
			}
		}
	case []any:
		b, ok := base.([]any)
		if !ok || !nameHas(key, listWords) {
			return
		}
		var added []string
		for i, v := range c {
			s, isStr := v.(string)
			if isStr && !slices.ContainsFunc(b, func(x any) bool { xs, _ := x.(string); return xs == s || covers(xs, s) }) {
				added = append(added, strconv.Itoa(i))
			}
		}
		if len(added) > 0 {
			msg := strconv.Quote(key) + " lists more than the baseline (entries " + strings.Join(added, ", ") + " are new)"
			if slices.Contains(c, any("*")) && !slices.Contains(b, any("*")) {
				msg += ", including the wildcard \"*\""
			}
			*out = append(*out, newFinding(RuleDriftWidened, server(ptr), ptr, msg))
		}
	case string:
		if b, ok := base.(string); ok && weaker(b, c) {
			*out = append(*out, newFinding(RuleDriftWeakened, server(ptr), ptr,
				strconv.Quote(key)+" went from "+strconv.Quote(b)+" to the weaker "+strconv.Quote(c)))
		}
	case bool:
		b, ok := base.(bool)
		if !ok || b == c {
			return
		}
		if (b && !c && nameHas(key, protective) && !nameHas(key, permissive)) || (!b && c && nameHas(key, permissive)) {
			*out = append(*out, newFinding(RuleDriftWeakened, server(ptr), ptr,
				strconv.Quote(key)+" went from "+strconv.FormatBool(b)+" to "+strconv.FormatBool(c)+", which is weaker"))
		}
	}
}

// covers reports whether a list entry base covers entry e: a directory or file://
// root e lies under, or the wildcard.
func covers(base, e string) bool {
	if base == "*" {
		return true
	}
	b, x := strings.TrimPrefix(base, "file://"), strings.TrimPrefix(e, "file://")
	if !strings.HasPrefix(b, "/") || !strings.HasPrefix(x, "/") {
		return false
	}
	b, x = path.Clean(b), path.Clean(x)
	return x == b || strings.HasPrefix(x, strings.TrimSuffix(b, "/")+"/")
}

// gatewayFlags reads the flags of a "mcpgate gateway run" command line that bear on
// security, with the argument index of each (-1 when unset).
type gwFlags struct {
	failMode, pinsMode, upstreamEnv string
	filterOutput                    bool
	roots, passEnv, allowHosts      []string
	at                              map[string]int
}

func readGatewayFlags(s Server) (gwFlags, bool) {
	g := gwFlags{failMode: "open", pinsMode: "warn", upstreamEnv: "inherit", at: map[string]int{}}
	if base(s.Command) != "mcpgate" {
		return g, false
	}
	flags, _, ok := gatewayArgs(s.Args)
	if !ok {
		return g, false
	}
	for i := 0; i < len(flags); i++ {
		name, val, hasVal := strings.Cut(strings.TrimLeft(flags[i], "-"), "=")
		idx := i + 2
		if !strings.HasPrefix(flags[i], "--") {
			continue
		}
		if !hasVal && name != "filter-output" && i+1 < len(flags) {
			val = flags[i+1]
			i++
		}
		g.at[name] = idx
		switch name {
		case "fail-mode":
			g.failMode = val
		case "pins-mode":
			g.pinsMode = val
		case "upstream-env":
			g.upstreamEnv = val
		case "filter-output":
			g.filterOutput = !hasVal || val == "true"
		case "root":
			g.roots = append(g.roots, val)
		case "pass-env":
			g.passEnv = append(g.passEnv, strings.Split(val, ",")...)
		case "allow-host", "allow-origin":
			g.allowHosts = append(g.allowHosts, strings.Split(val, ",")...)
		}
	}
	return g, true
}

// checkDrift compares the configuration with a reviewed baseline.
func checkDrift(base, cur *Config, pinned func(server string) bool) []Finding {
	var out []Finding
	serverOf := func(ptr string) string {
		for _, s := range cur.Servers {
			if ptr == s.Pointer || strings.HasPrefix(ptr, s.Pointer+"/") {
				return s.Name
			}
		}
		return ""
	}
	walkDrift(base.Doc, cur.Doc, "", "", serverOf, &out)
	for _, s := range cur.Servers {
		b := base.Server(s.Name)
		if b == nil {
			if pinned == nil || !pinned(s.Name) {
				out = append(out, newFinding(RuleDriftServerAdded, s.Name, s.Pointer,
					"server "+strconv.Quote(s.Name)+" is not in the baseline and has no tool pins: review it, then run the gateway once with --pins so its tools are pinned"))
			}
			continue
		}
		if strings.HasPrefix(strings.ToLower(b.URL), "https://") && s.URL != "" && !strings.HasPrefix(strings.ToLower(s.URL), "https://") {
			out = append(out, newFinding(RuleDriftWeakened, s.Name, s.Pointer+"/url", "the url went from https to plaintext: TLS was required and is not"))
		}
		if len(b.Roots) > 0 && len(s.Roots) == 0 {
			out = append(out, newFinding(RuleDriftWidened, s.Name, s.Pointer, `"roots" was removed: the server now sees every root the client offers`))
		}
		out = append(out, pathArgsWidened(*b, s)...)
		gb, okb := readGatewayFlags(*b)
		gc, okc := readGatewayFlags(s)
		if okb && okc {
			out = append(out, gatewayDrift(s, gb, gc)...)
		}
	}
	return out
}

// pathArgsWidened: an absolute-path argument of the server's own command that lies
// under none of the baseline's (server-filesystem's allowed directories).
func pathArgsWidened(b, s Server) []Finding {
	_, bargs, _ := unwrap(b.Command, b.Args)
	_, cargs, at := unwrap(s.Command, s.Args)
	var bpaths []string
	for _, a := range bargs {
		if strings.HasPrefix(a, "/") {
			bpaths = append(bpaths, a)
		}
	}
	var out []Finding
	for i, a := range cargs {
		if !strings.HasPrefix(a, "/") || slices.ContainsFunc(bpaths, func(p string) bool { return covers(p, a) }) {
			continue
		}
		out = append(out, newFinding(RuleDriftWidened, s.Name, s.Pointer+"/args/"+strconv.Itoa(at+i),
			"argument "+strconv.Itoa(at+i)+" is a path outside every path the baseline gave the server"))
	}
	return out
}

func gatewayDrift(s Server, b, c gwFlags) []Finding {
	var out []Finding
	ptr := func(flag string) string {
		if i, ok := c.at[flag]; ok {
			return s.Pointer + "/args/" + strconv.Itoa(i)
		}
		return s.Pointer + "/args"
	}
	weak := func(flag, from, to string) {
		out = append(out, newFinding(RuleDriftWeakened, s.Name, ptr(flag), "--"+flag+" went from "+from+" to "+to))
	}
	if b.failMode == "closed" && c.failMode != "closed" {
		weak("fail-mode", "closed", "open")
	}
	if b.filterOutput && !c.filterOutput {
		weak("filter-output", "on", "off: results are no longer filtered")
	}
	if weaker(b.pinsMode, c.pinsMode) {
		weak("pins-mode", b.pinsMode, c.pinsMode)
	}
	if b.upstreamEnv == "minimal" && c.upstreamEnv != "minimal" {
		weak("upstream-env", "minimal", "inherit: the server gets the gateway's environment")
	}
	for _, l := range []struct {
		flag      string
		base, cur []string
	}{{"root", b.roots, c.roots}, {"pass-env", b.passEnv, c.passEnv}, {"allow-host", b.allowHosts, c.allowHosts}} {
		for _, v := range l.cur {
			if !slices.ContainsFunc(l.base, func(x string) bool {
				return x == v || covers(x, v) || (strings.HasSuffix(x, "*") && strings.HasPrefix(v, strings.TrimSuffix(x, "*")))
			}) {
				out = append(out, newFinding(RuleDriftWidened, s.Name, ptr(l.flag), "--"+l.flag+" lists more than the baseline"))
				break
			}
		}
	}
	if len(b.roots) > 0 && len(c.roots) == 0 {
		out = append(out, newFinding(RuleDriftWidened, s.Name, s.Pointer+"/args", "--root was removed: the server now sees every root the client offers"))
	}
	return out
}

package vet

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
)

// Tool is what the scope check needs of a listed tool.
type Tool struct {
	Name     string
	ReadOnly bool // annotations.readOnlyHint
}

// ToolsFromDefinitions reads tool definitions (tools/list entries, or the
// definitions of a pin file) into Tools; entries that are not objects are skipped.
func ToolsFromDefinitions(defs []json.RawMessage) []Tool {
	var out []Tool
	for _, d := range defs {
		var t struct {
			Name        string `json:"name"`
			Annotations struct {
				ReadOnly bool `json:"readOnlyHint"`
			} `json:"annotations"`
		}
		if json.Unmarshal(d, &t) == nil && t.Name != "" {
			out = append(out, Tool{Name: t.Name, ReadOnly: t.Annotations.ReadOnly})
		}
	}
	return out
}

// Input is what one review reads. Every member is optional.
type Input struct {
	Config     *Config
	ConfigFile string
	Entries    []*Entry
	EntryFiles []string // parallel to Entries
	Baseline   *Config
	// Endpoint is a remote MCP URL to review (--endpoint).
	Endpoint string
	// Tools are the tools each server listed (from its pins), by server name.
	Tools map[string][]Tool
	// Lock is mcpgate.lock; Resolved the integrity found now for each locked package
	// (Resolve), keyed by PackageRef.Spec. With Lock nil the integrity checks are skipped.
	Lock     *Lock
	Resolved map[string]Resolution
	// Identity is each https url server's pinned and present TLS key, by server name.
	Identity map[string]IdentityCheck
}

// Run reviews the input and returns its findings, sorted, with the configuration's
// allowances applied.
func Run(in Input, o Options) []Finding {
	var out []Finding
	var allow map[string][]string
	extra := o.Known
	if in.Config != nil {
		allow = in.Config.Allow
		extra = append(extra, in.Config.AllowedServers...)
	}
	l := newLookalikes(extra)
	if c := in.Config; c != nil {
		var fs []Finding
		for _, s := range c.Servers {
			fs = append(fs, checkNames(s, l)...)
			fs = append(fs, checkPackages(s)...)
			fs = append(fs, checkTransport(s)...)
			fs = append(fs, checkScopes(s, in.Tools[s.Name])...)
			if in.Lock != nil {
				fs = append(fs, checkLock(s, in.Lock, in.Resolved)...)
			}
			if c, ok := in.Identity[s.Name]; ok {
				fs = append(fs, checkIdentity(s, c)...)
			}
		}
		if in.Baseline != nil {
			fs = append(fs, checkDrift(in.Baseline, c, func(name string) bool { return len(in.Tools[name]) > 0 })...)
		}
		out = append(out, withFile(fs, in.ConfigFile)...)
	}
	for i, e := range in.Entries {
		file := ""
		if i < len(in.EntryFiles) {
			file = in.EntryFiles[i]
		}
		fs := checkEntryNames(e, l)
		fs = append(fs, checkEntry(e)...)
		out = append(out, withFile(fs, file)...)
	}
	if in.Endpoint != "" {
		out = append(out, checkEndpoint(in.Endpoint, in.Entries)...)
	}
	return finish(out, o, allow)
}

func withFile(fs []Finding, file string) []Finding {
	for i := range fs {
		fs[i].File = file
	}
	return fs
}

// checkEntry: an entry's packages without an exact version, and remotes over
// plaintext.
func checkEntry(e *Entry) []Finding {
	var out []Finding
	for i, p := range e.Packages {
		ptr := "/packages/" + strconv.Itoa(i)
		var ref PackageRef
		switch p.RegistryType {
		case "npm":
			ref = PackageRef{Ecosystem: "npm", Name: p.Identifier, Version: p.Version}
		case "pypi":
			ref = PackageRef{Ecosystem: "pypi", Name: p.Identifier, Version: p.Version}
		case "oci":
			r, ok := ociRef(p.Identifier, 0)
			if !ok {
				continue
			}
			if r.Version == "" && r.Digest == "" {
				r.Version = p.Version
			}
			ref = r
		case "mcpb":
			if p.FileSHA256 == "" {
				out = append(out, newFinding(RuleUnpinnedPackage, e.Name, ptr, "mcpb package has no fileSha256: the bundle it downloads is not pinned"))
			}
			continue
		default:
			continue
		}
		if !ref.Pinned() {
			out = append(out, newFinding(RuleUnpinnedPackage, e.Name, ptr+"/version",
				p.RegistryType+" package "+strconv.Quote(p.Identifier)+" has no exact version"))
		}
		if h, ok := Plaintext(p.Transport.URL); ok {
			out = append(out, plaintextFinding(e.Name, ptr+"/transport/url", h, "the package's transport url"))
		}
		if h, ok := Plaintext(p.RegistryBaseURL); ok {
			out = append(out, plaintextFinding(e.Name, ptr+"/registryBaseUrl", h, "the package's registry"))
		}
	}
	for i, r := range e.Remotes {
		if h, ok := Plaintext(r.URL); ok {
			out = append(out, plaintextFinding(e.Name, "/remotes/"+strconv.Itoa(i)+"/url", h, "the remote"))
		}
	}
	return out
}

// checkEndpoint: a remote URL over plaintext, and one that claims the name of a
// given registry entry without being one of its remotes[] (vet_identity_unproven).
func checkEndpoint(endpoint string, entries []*Entry) []Finding {
	var out []Finding
	if h, ok := Plaintext(endpoint); ok {
		out = append(out, plaintextFinding("", "", h, "the endpoint"))
	}
	if _, err := url.Parse(endpoint); err != nil {
		return out
	}
	for _, e := range entries {
		proven := false
		for _, r := range e.Remotes {
			if sameEndpoint(r.URL, endpoint) {
				proven = true
			}
		}
		if !proven {
			out = append(out, newFinding(RuleIdentityUnproven, e.Name, "",
				"the endpoint claims the registry name "+strconv.Quote(e.Name)+" but is none of the entry's remotes[] urls: nothing binds it to that name"))
		}
	}
	return out
}

// sameEndpoint compares two URLs by scheme, host and path, case-insensitively in
// the scheme and host, ignoring a trailing slash.
func sameEndpoint(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	if err1 != nil || err2 != nil {
		return false
	}
	return strings.EqualFold(ua.Scheme, ub.Scheme) && strings.EqualFold(ua.Host, ub.Host) &&
		strings.TrimSuffix(ua.Path, "/") == strings.TrimSuffix(ub.Path, "/")
}

// writeWords are OAuth scope words that grant more than reading.
var writeWords = map[string]bool{"write": true, "writes": true, "delete": true, "remove": true, "admin": true, "manage": true,
	"modify": true, "edit": true, "create": true, "update": true, "send": true, "publish": true, "full": true, "owner": true,
	"readwrite": true, "rw": true, "*": true, "repo": true, "destroy": true, "purge": true, "transfer": true, "execute": true}

// checkScopes: a url server whose every listed tool is readOnlyHint, asking for
// scopes that write, delete or administer.
func checkScopes(s Server, tools []Tool) []Finding {
	if len(tools) == 0 || len(s.Scopes) == 0 {
		return nil
	}
	for _, t := range tools {
		if !t.ReadOnly {
			return nil
		}
	}
	var out []Finding
	for i, sc := range s.Scopes {
		for _, w := range strings.FieldsFunc(strings.ToLower(sc), func(r rune) bool { return strings.ContainsRune(".:/_- ", r) }) {
			if writeWords[w] {
				out = append(out, newFinding(RuleExcessiveScope, s.Name, s.Pointer+"/oauth/scopes/"+strconv.Itoa(i),
					"scope "+strconv.Quote(sc)+" grants "+w+", but every one of the server's "+strconv.Itoa(len(tools))+" tools is read-only: ask only for the scopes its tools need"))
				break
			}
		}
	}
	return out
}

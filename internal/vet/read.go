package vet

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Server is one server entry as vet sees it: a stdio command or a remote url, from
// any of the configuration conventions. Pointer is its entry's JSON Pointer
// ("/mcpServers/fs", "/servers/github").
type Server struct {
	Name    string
	Pointer string
	Type    string // VS Code's "stdio", "http" or "sse"; "" elsewhere
	Command string
	Args    []string
	Env     map[string]string
	URL     string
	Headers map[string]string
	Roots   []string
	Scopes  []string // oauth.scopes of an mcpgate url server
	// Raw is the entry's members, for the settings vet knows by name only
	// (insecureSkipVerify and the like).
	Raw map[string]json.RawMessage
}

// Config is an mcpServers configuration: mcpgate's --config file, Claude Desktop's
// or Cursor's "mcpServers", VS Code's mcp.json "servers" (and its settings.json
// "mcp": {"servers"}).
type Config struct {
	Servers []Server // in name order
	// AllowedServers are "mcpgate.allowedServers": names accepted as well-known.
	AllowedServers []string
	// Allow is "mcpgate.vetAllow": server name → rule ids ("*" for all) whose
	// findings are reported as allowed.
	Allow map[string][]string
	// Rules is "mcpgate.rules" as written (rule id → severity name).
	Rules map[string]string
	// PassEnv is "mcpgate.passEnv"; AllowedHosts "mcpgate.admin.allowedHosts".
	PassEnv      []string
	AllowedHosts []string
	// Profile is "mcpgate.profile": "", "default" or "strict".
	Profile string
	// Doc is the whole file decoded, for the drift walk.
	Doc any
}

// Server returns the server named name, or nil.
func (c *Config) Server(name string) *Server {
	for i := range c.Servers {
		if c.Servers[i].Name == name {
			return &c.Servers[i]
		}
	}
	return nil
}

// ParseConfig reads a configuration. It errors when the input is not a JSON object,
// holds no server block, or a server entry has members of the wrong type; the
// error names the JSON Pointer at fault. Values are taken as written (${NAME} is
// not expanded).
func ParseConfig(b []byte) (*Config, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil || top == nil {
		return nil, errors.New("not a JSON object")
	}
	c := &Config{}
	if err := json.Unmarshal(b, &c.Doc); err != nil {
		return nil, err
	}
	block, at := top["mcpServers"], "/mcpServers"
	if block == nil {
		block, at = top["servers"], "/servers"
	}
	if block == nil && top["mcp"] != nil {
		var mcp map[string]json.RawMessage
		if json.Unmarshal(top["mcp"], &mcp) == nil && mcp["servers"] != nil {
			block, at = mcp["servers"], "/mcp/servers"
		}
	}
	if block == nil {
		return nil, errors.New(`no server block: want "mcpServers" (mcpgate, Claude Desktop, Cursor) or "servers" (VS Code)`)
	}
	var entries map[string]json.RawMessage
	if err := json.Unmarshal(block, &entries); err != nil {
		return nil, fmt.Errorf("%s: want an object of server entries", at)
	}
	for _, name := range slices.Sorted(maps.Keys(entries)) {
		s, err := parseServer(name, at+"/"+escape(name), entries[name])
		if err != nil {
			return nil, err
		}
		c.Servers = append(c.Servers, s)
	}
	if g := top["mcpgate"]; g != nil {
		var gate struct {
			AllowedServers []string            `json:"allowedServers"`
			Profile        string              `json:"profile"`
			VetAllow       map[string][]string `json:"vetAllow"`
			Rules          map[string]string   `json:"rules"`
			PassEnv        []string            `json:"passEnv"`
			Admin          struct {
				AllowedHosts []string `json:"allowedHosts"`
			} `json:"admin"`
		}
		if err := json.Unmarshal(g, &gate); err != nil {
			return nil, fmt.Errorf("/mcpgate: %w", err)
		}
		c.AllowedServers, c.Allow, c.Rules = gate.AllowedServers, gate.VetAllow, gate.Rules
		c.PassEnv, c.AllowedHosts, c.Profile = gate.PassEnv, gate.Admin.AllowedHosts, gate.Profile
	}
	return c, nil
}

func parseServer(name, ptr string, raw json.RawMessage) (Server, error) {
	s := Server{Name: name, Pointer: ptr}
	if err := json.Unmarshal(raw, &s.Raw); err != nil || s.Raw == nil {
		return s, fmt.Errorf("%s: want an object", ptr)
	}
	field := func(key string, v any) error {
		r, ok := s.Raw[key]
		if !ok || bytes.Equal(r, []byte("null")) {
			return nil
		}
		if err := json.Unmarshal(r, v); err != nil {
			return fmt.Errorf("%s/%s: wrong type", ptr, key)
		}
		return nil
	}
	var oauth struct {
		Scopes []string `json:"scopes"`
	}
	url := "url"
	if _, ok := s.Raw["url"]; !ok {
		if _, ok := s.Raw["serverUrl"]; ok {
			url = "serverUrl" // Windsurf
		}
	}
	for _, e := range []error{
		field("type", &s.Type), field("command", &s.Command), field("args", &s.Args),
		field("env", &s.Env), field(url, &s.URL), field("headers", &s.Headers),
		field("roots", &s.Roots), field("oauth", &oauth),
	} {
		if e != nil {
			return s, e
		}
	}
	s.Scopes = oauth.Scopes
	return s, nil
}

// Entry is an MCP registry server.json entry (the official registry's format).
type Entry struct {
	Name        string    `json:"name"`
	Title       string    `json:"title"`
	DisplayName string    `json:"displayName"`
	Description string    `json:"description"`
	Version     string    `json:"version"`
	Publisher   string    `json:"publisher"`
	Packages    []Package `json:"packages"`
	Remotes     []Remote  `json:"remotes"`
	// Verified is read from _meta: the registry's official metadata with a status of
	// "active" marks a name the registry itself authenticated.
	Verified bool `json:"-"`
}

// Package is one packages[] item.
type Package struct {
	RegistryType    string    `json:"registryType"`
	RegistryBaseURL string    `json:"registryBaseUrl"`
	Identifier      string    `json:"identifier"`
	Version         string    `json:"version"`
	FileSHA256      string    `json:"fileSha256"`
	Transport       Transport `json:"transport"`
}

// Transport is a package's transport: stdio, streamable-http or sse, with a url for
// the last two.
type Transport struct {
	Type string `json:"type"`
	URL  string `json:"url"`
}

// Remote is one remotes[] item: a hosted endpoint of the server.
type Remote struct {
	Type string `json:"type"`
	URL  string `json:"url"`
}

// ParseEntry reads a server.json entry; a registry API response that wraps it
// ({"server": {...}, "_meta": {...}}) is read too. It errors when the input is not an
// object, has no name, or members have the wrong type.
func ParseEntry(b []byte) (*Entry, error) {
	var wrap struct {
		Server json.RawMessage            `json:"server"`
		Meta   map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(b, &wrap); err != nil {
		return nil, errors.New("not a JSON object")
	}
	body := b
	if len(wrap.Server) > 0 && !bytes.Equal(wrap.Server, []byte("null")) {
		body = wrap.Server
	}
	var e Entry
	if err := json.Unmarshal(body, &e); err != nil {
		return nil, fmt.Errorf("not a server.json entry: %w", err)
	}
	if e.Name == "" {
		return nil, errors.New(`not a server.json entry: no "name"`)
	}
	var inner struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	_ = json.Unmarshal(body, &inner)
	for _, m := range []map[string]json.RawMessage{wrap.Meta, inner.Meta} {
		var official struct {
			Status string `json:"status"`
		}
		if json.Unmarshal(m["io.modelcontextprotocol.registry/official"], &official) == nil && official.Status == "active" {
			e.Verified = true
		}
	}
	if e.Publisher == "verified" {
		e.Verified = true
	}
	return &e, nil
}

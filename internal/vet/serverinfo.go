package vet

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/mcpgate/mcpgate/internal/pins"
)

// ServerInfoTool is the pin name of a server's serverInfo in the pin file, under the
// server IdentityServer(name), beside the TLS key: `mcpgate pins approve
// 'NAME#identity' serverInfo` accepts a change (docs/vet.md#identity).
const ServerInfoTool = "serverInfo"

// ServerInfo is the implementation a server names in its initialize result
// (serverInfo, MCP 2025-06-18 §lifecycle "Initialization"): name and version.
type ServerInfo struct {
	Name    string `json:"serverName"`
	Version string `json:"version"`
}

// ServerInfoOf reads serverInfo from an initialize result; ok is false when the
// result names none.
func ServerInfoOf(result json.RawMessage) (ServerInfo, bool) {
	var r struct {
		ServerInfo json.RawMessage `json:"serverInfo"`
	}
	if json.Unmarshal(result, &r) != nil {
		return ServerInfo{}, false
	}
	return serverInfoIn(r.ServerInfo)
}

// DiscoveredServerInfo reads the serverInfo a 2026-07-28 server names in its
// server/discover result (_meta io.modelcontextprotocol/serverInfo); ok is false when
// the result names none.
func DiscoveredServerInfo(result json.RawMessage) (ServerInfo, bool) {
	var r struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(result, &r) != nil {
		return ServerInfo{}, false
	}
	return serverInfoIn(r.Meta["io.modelcontextprotocol/serverInfo"])
}

// serverInfoIn reads a serverInfo object: ok is false when raw is absent, not an
// object, or names neither a name nor a version.
func serverInfoIn(raw json.RawMessage) (ServerInfo, bool) {
	var si *struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &si) != nil || si == nil || (si.Name == "" && si.Version == "") {
		return ServerInfo{}, false
	}
	return ServerInfo{Name: si.Name, Version: si.Version}, true
}

// ServerInfoChange is a serverInfo that differs from its pin: Fields are the
// members that differ ("name", "version"), in that order.
type ServerInfoChange struct {
	Pinned, Now ServerInfo
	Fields      []string
}

// hasServerInfoPin reports whether st holds a serverInfo pin for server.
func hasServerInfoPin(st *pins.Store, server string) (bool, error) {
	ps, err := st.List()
	if err != nil {
		return false, err
	}
	for _, p := range ps {
		if p.Server == IdentityServer(server) && p.Tool == ServerInfoTool {
			return true, nil
		}
	}
	return false, nil
}

func serverInfoDefinition(si ServerInfo) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"name": ServerInfoTool, "serverName": si.Name, "version": si.Version})
	return b
}

// CheckServerInfo pins now, the serverInfo a server named (named false when it named
// none: ServerInfoOf, DiscoveredServerInfo), for server in st the first time, and
// returns the change when it differs from the pin; the new one stays pending until
// approved, as a changed tool does. No serverInfo is (nil, nil) while none is
// pinned; once one is, it is a change to an empty name and version, so that a server
// cannot pass the pin by leaving serverInfo out.
func CheckServerInfo(st *pins.Store, server string, now ServerInfo, named bool) (*ServerInfoChange, error) {
	if !named {
		pinned, err := hasServerInfoPin(st, server)
		if err != nil || !pinned {
			return nil, err
		}
	}
	changes, err := st.Check(IdentityServer(server), []json.RawMessage{serverInfoDefinition(now)})
	if err != nil || len(changes) == 0 {
		return nil, err
	}
	ps, err := st.List()
	if err != nil {
		return nil, err
	}
	c := &ServerInfoChange{Now: now}
	for _, p := range ps {
		if p.Server == IdentityServer(server) && p.Tool == ServerInfoTool {
			_ = json.Unmarshal(p.Definition, &c.Pinned)
		}
	}
	if c.Pinned.Name != now.Name {
		c.Fields = append(c.Fields, "name")
	}
	if c.Pinned.Version != now.Version {
		c.Fields = append(c.Fields, "version")
	}
	return c, nil
}

// Message says what changed and how to accept it; it names the members, never
// their values, which the server chose.
func (c ServerInfoChange) Message(server string) string {
	return "the server's serverInfo " + strings.Join(c.Fields, " and ") + " differs from the one pinned: another server may answer under this name; if the change is expected, approve it with mcpgate pins approve " +
		strconv.Quote(IdentityServer(server)) + " " + ServerInfoTool
}

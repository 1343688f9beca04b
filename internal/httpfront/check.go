package httpfront

import (
	"errors"
	"fmt"
	"net"

	"github.com/mcpgate/mcpgate/internal/jsonscan"
	"github.com/mcpgate/mcpgate/internal/loopback"
)

// HostAllowlist decides which Host and Origin headers are accepted (DNS rebinding
// protection, MCP 2025-11-25 "Transports: Security Warning").
type HostAllowlist struct {
	hosts *loopback.Hosts
}

// NewHostAllowlist allows the loopback names, the listen host (unless it is a
// wildcard address) and every extra host given.
func NewHostAllowlist(listenAddr string, extra ...string) *HostAllowlist {
	names := extra
	if h, _, err := net.SplitHostPort(listenAddr); err == nil {
		if ip := net.ParseIP(h); h != "" && (ip == nil || !ip.IsUnspecified()) {
			names = append([]string{h}, extra...)
		}
	}
	return &HostAllowlist{hosts: loopback.NewHosts(names...)}
}

// Allowed reports whether a host name (no port) is allowed.
func (a *HostAllowlist) Allowed(host string) bool { return a.hosts.Name(host) }

// Check validates a request's Host header and, when present, its Origin header: an
// http or https origin of an allowed host, as the admin listener requires.
func (a *HostAllowlist) Check(hostHeader, origin string) error {
	if !a.hosts.Host(hostHeader) {
		return fmt.Errorf("the Host header %q is not allowed (DNS rebinding protection; see --allow-host)", hostHeader)
	}
	if !a.hosts.Origin(origin) {
		return fmt.Errorf("the Origin header %q is not allowed (an http or https origin of an allowed host; DNS rebinding protection; see --allow-host)", origin)
	}
	return nil
}

var errTooDeep = errors.New("too deeply nested")

// checkDepth returns errTooDeep when JSON nesting (arrays and objects) exceeds max.
// It assumes b is valid JSON.
func checkDepth(b []byte, max int) error {
	if jsonscan.Deeper(b, max) {
		return errTooDeep
	}
	return nil
}

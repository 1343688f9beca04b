package httpfront

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// HostAllowlist decides which Host and Origin headers are accepted (DNS rebinding
// protection, MCP 2025-11-25 "Transports: Security Warning").
type HostAllowlist struct {
	hosts map[string]bool
}

// NewHostAllowlist allows the loopback names, the listen host (unless it is a
// wildcard address) and every extra host given.
func NewHostAllowlist(listenAddr string, extra ...string) *HostAllowlist {
	a := &HostAllowlist{hosts: map[string]bool{"localhost": true, "127.0.0.1": true, "::1": true}}
	if h, _, err := net.SplitHostPort(listenAddr); err == nil {
		if ip := net.ParseIP(h); h != "" && (ip == nil || !ip.IsUnspecified()) {
			a.hosts[strings.ToLower(h)] = true
		}
	}
	for _, h := range extra {
		if h = strings.ToLower(strings.TrimSpace(h)); h != "" {
			a.hosts[strings.Trim(h, "[]")] = true
		}
	}
	return a
}

// Allowed reports whether a host name (no port) is allowed.
func (a *HostAllowlist) Allowed(host string) bool {
	host = strings.ToLower(strings.Trim(host, "[]"))
	if a.hosts[host] {
		return true
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return true
	}
	return false
}

// Check validates a request's Host header and, when present, its Origin header.
func (a *HostAllowlist) Check(hostHeader, origin string) error {
	host := hostHeader
	if h, _, err := net.SplitHostPort(hostHeader); err == nil {
		host = h
	}
	if !a.Allowed(host) {
		return fmt.Errorf("Host %q is not allowed (DNS rebinding protection; see --allow-host)", hostHeader)
	}
	if origin == "" {
		return nil
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return fmt.Errorf("Origin %q is not allowed", origin)
	}
	if !a.Allowed(u.Hostname()) {
		return fmt.Errorf("Origin %q is not allowed (DNS rebinding protection; see --allow-host)", origin)
	}
	return nil
}

var errTooDeep = errors.New("too deeply nested")

// checkDepth returns errTooDeep when JSON nesting (arrays and objects) exceeds max.
// It assumes b is valid JSON.
func checkDepth(b []byte, max int) error {
	depth, inString, escaped := 0, false, false
	for _, c := range b {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > max {
				return errTooDeep
			}
		case '}', ']':
			depth--
		}
	}
	return nil
}

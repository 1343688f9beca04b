// Package loopback tells whether a listen address binds only the loopback interface,
// which decides whether mcpgate's HTTP listeners (the MCP front and the admin
// listener) may run without a bearer token.
package loopback

import (
	"net"
	"strings"
)

// Addr reports whether a listen address ("host:port") binds only loopback: localhost
// or a loopback IP. An empty host, 0.0.0.0, ::, other names and malformed addresses
// are not loopback.
func Addr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

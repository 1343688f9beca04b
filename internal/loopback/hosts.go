package loopback

import (
	"net"
	"net/url"
	"strings"
)

// Hosts is the set of names a listener answers to in Host and Origin, against DNS
// rebinding: localhost and every loopback IP always, plus the names given. The
// admin listener and the HTTP front share it.
type Hosts struct{ names map[string]bool }

// NewHosts allows the loopback names plus each of names (host names or IPs, no
// port; IPv6 with or without brackets; any case). Empty names are ignored.
func NewHosts(names ...string) *Hosts {
	h := &Hosts{names: map[string]bool{"localhost": true}}
	for _, n := range names {
		if n = strings.ToLower(strings.Trim(strings.TrimSpace(n), "[]")); n != "" {
			h.names[n] = true
		}
	}
	return h
}

// Name reports whether a host (no port) is allowed.
func (h *Hosts) Name(host string) bool {
	host = strings.ToLower(strings.Trim(host, "[]"))
	if h.names[host] {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.IsLoopback() || h.names[ip.String()])
}

// Host reports whether a Host header (with or without a port) names an allowed host.
func (h *Hosts) Host(hostport string) bool {
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		hostport = host
	}
	return h.Name(hostport)
}

// Origin accepts a missing Origin (not a browser cross-origin request) and an http or
// https origin whose host is allowed; "null", other schemes and anything malformed
// are refused.
func (h *Hosts) Origin(origin string) bool {
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false
	}
	return h.Name(u.Hostname())
}

package loopback

import "testing"

// TestAddr pins what counts as loopback for the token requirement of both listeners.
func TestAddr(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:9090": true, "localhost:0": true, "LOCALHOST:1": true, "[::1]:9090": true, "127.1.2.3:80": true,
		":9090": false, "0.0.0.0:9090": false, "[::]:9090": false, "10.0.0.5:9090": false,
		"192.168.0.1:80": false, "gw.example:9090": false, "garbage": false, "bad": false,
	} {
		if got := Addr(addr); got != want {
			t.Errorf("Addr(%q) = %v, want %v", addr, got, want)
		}
	}
}

// TestHosts pins the Host and Origin checks both listeners share.
func TestHosts(t *testing.T) {
	h := NewHosts("GW.example", "[2001:db8::1]", " ")
	for _, tc := range []struct {
		host string
		want bool
	}{
		{"localhost", true}, {"LOCALHOST:8080", true}, {"127.0.0.1:80", true}, {"127.9.9.9", true},
		{"[::1]:80", true}, {"gw.example:443", true}, {"[2001:db8::1]:80", true},
		{"evil.example", false}, {"10.0.0.1", false}, {"", false},
	} {
		if got := h.Host(tc.host); got != tc.want {
			t.Errorf("Host(%q) = %v, want %v", tc.host, got, tc.want)
		}
	}
	for _, tc := range []struct {
		origin string
		want   bool
	}{
		{"", true}, {"http://localhost:3000", true}, {"https://gw.example", true},
		{"null", false}, {"file://localhost", false}, {"ws://localhost", false},
		{"chrome-extension://localhost", false}, {"http://evil.example", false}, {"http://", false}, {"::", false},
	} {
		if got := h.Origin(tc.origin); got != tc.want {
			t.Errorf("Origin(%q) = %v, want %v", tc.origin, got, tc.want)
		}
	}
}

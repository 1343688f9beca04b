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

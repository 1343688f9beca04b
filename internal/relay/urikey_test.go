package relay

import "testing"

// TestResourceKey: the key equals the WHATWG serialization (node's new URL(u).toString())
// of each URI, where a TypeScript MCP server looks a resource up.
func TestResourceKey(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"FILE:///srv/evil", "file:///srv/evil"},
		{"file:///srv/./evil", "file:///srv/evil"},
		{"file:///srv/x/../evil", "file:///srv/evil"},
		{"file:///srv/%2E/evil", "file:///srv/evil"},
		{" file:///srv/ev\til\n", "file:///srv/evil"},
		{"file://LOCALHOST/srv/evil", "file:///srv/evil"},
		{"file:srv/evil", "file:///srv/evil"},
		{"file:/srv/evil", "file:///srv/evil"},
		{"file:\\\\\\srv\\evil", "file:///srv/evil"},
		{"demo://h/a/%2e%2E/x", "demo://h/x"},
		{"demo:/a/./b", "demo:/a/b"},
		{"demo://h/a/.", "demo://h/a/"},
		{"demo://h/a/..", "demo://h/"},
		{"fs+FILE:///a/../b", "fs+file:///b"},
		{"file:///srv/Evil", "file:///srv/Evil"},
		{"file:///srv/%65vil", "file:///srv/%65vil"},
		{"demo://x/y?q=./a#f", "demo://x/y?q=./a#f"},
		{"0:/.//A", "0:/.//A"}, // not a URL (a scheme begins with a letter): itself
		{"demo:/x/..//a", "demo:/.//a"},
		{"not a uri", "not a uri"},
		// the host as a server's URL parser reads it: percent-decoded, IDNA-mapped,
		// without the scheme's default port
		{"file://%6cocalhost/srv/evil", "file:///srv/evil"},
		{"https://intranet.example:443/x", "https://intranet.example/x"},
		{"https://%69ntranet.example/x", "https://intranet.example/x"},
		{"https://intra\u00adnet.example/x", "https://intranet.example/x"},
		{"HTTPS://INTRANET.Example./x", "https://intranet.example./x"},
		{"https://ΒΌΛΟΣ.example/", "https://xn--nxasmq6b.example/"},
		{"http://intranet.example:80/x", "http://intranet.example/x"},
		{"https://intranet.example:8443/x", "https://intranet.example:8443/x"},
		{"http://0x7f.1/x", "http://127.0.0.1/x"},
		{"https://[0:0::1]:443/", "https://[::1]/"},
		// with several servers, the server parses what follows <server>+
		{"fs+ FILE:///srv/./evil\n", "fs+file:///srv/evil"},
		{"fs+\tfile:///srv/evil", "fs+file:///srv/evil"},
		{"", ""},
	} {
		if got := resourceKey(c.in); got != c.want {
			t.Errorf("resourceKey(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// FuzzResourceKey: any string gets a key, and a key is its own key.
func FuzzResourceKey(f *testing.F) {
	for _, s := range []string{"file:///a/./b", "FILE:srv", "demo://h/%2e%2e/x", " x:\t/..", "a:b?c#d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k := resourceKey(s)
		if k2 := resourceKey(k); k2 != k {
			t.Fatalf("resourceKey(%q) = %q, but resourceKey(%q) = %q", s, k, k, k2)
		}
	})
}

// BenchmarkResourceKey: the key of one resources/read uri (checked first).
func BenchmarkResourceKey(b *testing.B) {
	const uri = "file://%6cocalhost/srv/data/./reports/2026/q4.csv"
	if k := resourceKey(uri); k != "file:///srv/data/reports/2026/q4.csv" {
		b.Fatalf("key %q", k)
	}
	b.SetBytes(int64(len(uri)))
	b.ReportAllocs()
	for b.Loop() {
		resourceKey(uri)
	}
}

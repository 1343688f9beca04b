package pipeline

import "testing"

// TestRootWithin: a client root is kept only when it is a pinned root or under one,
// read as a clean file:// path; anything else (other schemes, hosts, "..", a sibling
// sharing a prefix) is outside.
func TestRootWithin(t *testing.T) {
	pins := []string{"file:///srv/data", "file:///home/u/proj/"}
	for _, c := range []struct {
		uri  string
		want bool
	}{
		{"file:///srv/data", true},
		{"file:///srv/data/", true},
		{"file:///srv/data/a/b", true},
		{"file://localhost/srv/data/a", true},
		{"file:///home/u/proj", true},
		{"file:///srv/database", false},
		{"file:///srv", false},
		{"file:///", false},
		{"file:///srv/data/../etc", false},
		{"file:///srv/data/a/../../x", false},
		{"file://host/srv/data", false},
		{"https://example.com/srv/data", false},
		{"file:srv/data", false},
		{"/srv/data", false},
		{"file:///srv/data?x=1", false},
		{"", false},
	} {
		if got := within(c.uri, pins); got != c.want {
			t.Errorf("within(%q) = %v, want %v", c.uri, got, c.want)
		}
	}
	if !within("file:///anything", []string{"file:///"}) {
		t.Error("file:/// pins everything")
	}
	for _, bad := range []string{"file://relative/dir", "https://x/y", "/abs", "file:///a/../b", "file:///a/./b"} {
		if CheckRoot(bad) == nil {
			t.Errorf("CheckRoot(%q) accepted it", bad)
		}
	}
	for _, good := range []string{"file:///a/b", "file:///a/b/", "file:///"} {
		if err := CheckRoot(good); err != nil {
			t.Errorf("CheckRoot(%q): %v", good, err)
		}
	}
}

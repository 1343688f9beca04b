package sandbox

import (
	"regexp"
	"testing"
)

// Every host.NAME lockdown.js reads is one the runtime sets: a missing bound is
// undefined there, and a guard comparing with undefined never trips.
func TestLockdownHostNames(t *testing.T) {
	hooks := map[string]bool{"oom": true, "deep": true, "parse": true}
	read := regexp.MustCompile(`\bhost\.(\w+)`).FindAllStringSubmatch(lockdownSrc, -1)
	if len(read) == 0 {
		t.Fatal("lockdown.js reads nothing from host")
	}
	for _, m := range read {
		if _, ok := hostLimits[m[1]]; !ok && !hooks[m[1]] {
			t.Errorf("lockdown.js reads host.%s, which New does not set", m[1])
		}
	}
}

// A runtime from New passes its own self-test once sealed, with and without console.
func TestNewSealSelfTest(t *testing.T) {
	for _, console := range []bool{false, true} {
		h := Hooks{OOM: func() {}, TooDeep: func() {}, FromJSON: nil}
		if console {
			h.Console = func(string) {}
		}
		r, err := New(h)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Seal(); err != nil {
			t.Fatal(err)
		}
		if err := r.SelfTest(console); err != nil {
			t.Errorf("console %v: %v", console, err)
		}
	}
}

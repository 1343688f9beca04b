// Package testwait is the tests' one way to wait for a condition instead of sleeping:
// For polls until the condition holds and fails the test, naming what it waited
// for, when it does not hold in time. Only _test.go files import it.
package testwait

import (
	"testing"
	"time"
)

// Timeout is how long For waits: long enough for a loaded 2-core CI machine, short
// enough that a hang fails the test instead of the whole run.
const Timeout = 10 * time.Second

// For polls cond every millisecond (backing off to 20 ms) until it returns true, and
// fails the test after Timeout with "timed out waiting for <what>".
func For(t testing.TB, what string, cond func() bool) {
	t.Helper()
	if !Within(Timeout, cond) {
		t.Fatalf("timed out after %v waiting for %s", Timeout, what)
	}
}

// Within polls cond until it returns true or d passes, and reports whether it held.
func Within(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	pause := time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pause)
		pause = min(2*pause, 20*time.Millisecond)
	}
	return true
}

// Return runs f on its own goroutine and returns what it returns, failing the test
// after Timeout with "timed out waiting for <what>" when f has not returned.
func Return[T any](t testing.TB, what string, f func() (T, error)) (T, error) {
	t.Helper()
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() { v, err := f(); ch <- result{v, err} }()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-time.After(Timeout):
		t.Fatalf("timed out after %v waiting for %s", Timeout, what)
	}
	var zero T
	return zero, nil
}

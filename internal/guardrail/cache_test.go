package guardrail_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/internal/guardrail"
	"github.com/mcpgate/mcpgate/internal/guardrail/guardtest"
)

func listing(texts ...string) *guardrail.Content {
	c := &guardrail.Content{Method: "tools/list", Server: "fs", Phase: "post", EventID: "ev-1",
		User: ctxapi.User{UserID: "u1", CallerID: "cli"}}
	for i, s := range texts {
		c.Texts = append(c.Texts, guardrail.Text{Pointer: "/tools/" + string(rune('0'+i)) + "/description", Value: s})
	}
	return c
}

// TestVerdictCache: an identical listing is judged from the cache without a call
// (another event id changes nothing), one differing text, caller or server calls
// again, an entry expires after cacheTTL, failures and interventions are never
// cached, a cached block keeps no blocked_reason, and tools/call is not cached by
// default.
func TestVerdictCache(t *testing.T) {
	svc := &guardtest.Service{}
	srv := httptest.NewServer(svc)
	defer srv.Close()
	s := newSet(t, map[string]guardrail.Spec{"g": {Kind: "generic", URL: srv.URL, FailMode: "open",
		Methods: []string{"tools/list", "tools/call"}, Breaker: &guardrail.Breaker{Failures: 1000}}})
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	guardrail.SetClock(s, func() time.Time { return now })
	calls := func() int { return len(svc.Requests()) }
	run := func(c *guardrail.Content) guardrail.Outcome {
		t.Helper()
		outs := s.Run(context.Background(), c, nil)
		if len(outs) != 1 {
			t.Fatalf("outcomes %+v", outs)
		}
		return outs[0]
	}
	step := func(what string, c *guardrail.Content, wantCalls int, wantCached bool, want guardrail.Verdict) guardrail.Outcome {
		t.Helper()
		o := run(c)
		if calls() != wantCalls || o.Cached != wantCached || o.Verdict != want {
			t.Fatalf("%s: %d calls, cached %v, verdict %q (%s); want %d, %v, %q", what, calls(), o.Cached, o.Verdict, o.Failure, wantCalls, wantCached, want)
		}
		return o
	}
	step("first listing", listing("reads a file", "writes a file"), 1, false, guardrail.None)
	step("the same listing", listing("reads a file", "writes a file"), 1, true, guardrail.None)
	other := listing("reads a file", "writes a file")
	other.EventID = "ev-2"
	step("another event id", other, 1, true, guardrail.None)
	step("one text differs", listing("reads a file", "writes a file!"), 2, false, guardrail.None)
	swapped := listing("writes a file", "reads a file")
	step("texts in another order", swapped, 3, false, guardrail.None)
	moved := listing("reads a file", "writes a file")
	moved.Texts[1].Pointer = "/tools/1/title"
	step("a text at another pointer", moved, 4, false, guardrail.None)
	caller := listing("reads a file", "writes a file")
	caller.User.UserID = "u2"
	step("another caller", caller, 5, false, guardrail.None)
	server := listing("reads a file", "writes a file")
	server.Server = "git"
	step("another server", server, 6, false, guardrail.None)
	now = now.Add(5*time.Minute - time.Second)
	step("before expiry", listing("reads a file", "writes a file"), 6, true, guardrail.None)
	now = now.Add(time.Second)
	step("at expiry", listing("reads a file", "writes a file"), 7, false, guardrail.None)

	if o := step("a block", listing("GUARD:block"), 8, false, guardrail.Block); o.Reason == "" {
		t.Fatal("the service's block has no reason")
	}
	if o := step("the same block", listing("GUARD:block"), 8, true, guardrail.Block); o.Reason != "" {
		t.Fatalf("a cached block kept its reason %q", o.Reason)
	}
	step("a failure", listing("GUARD:5xx"), 9, false, "")
	step("the same failure", listing("GUARD:5xx"), 10, false, "")
	step("an intervention", listing("GUARD:redact secret-1"), 11, false, guardrail.Intervene)
	step("the same intervention", listing("GUARD:redact secret-1"), 12, false, guardrail.Intervene)
	call := listing("reads a file")
	call.Method = "tools/call"
	step("tools/call", call, 13, false, guardrail.None)
	step("tools/call again", call, 14, false, guardrail.None)
}

// TestVerdictCacheBounded: past cacheEntries the least recently used verdict goes,
// and a configured cacheTTL caches another method.
func TestVerdictCacheBounded(t *testing.T) {
	svc := &guardtest.Service{}
	srv := httptest.NewServer(svc)
	defer srv.Close()
	s := newSet(t, map[string]guardrail.Spec{"g": {Kind: "generic", URL: srv.URL, Methods: []string{"tools/call"},
		CacheTTL: map[string]string{"tools/call": "1m"}, CacheEntries: 2}})
	for _, text := range []string{"a", "b", "a", "c", "b", "a"} {
		c := listing(text)
		c.Method = "tools/call"
		s.Run(context.Background(), c, nil)
		if n := guardrail.CacheLen(s, "g"); n > 2 {
			t.Fatalf("%d entries cached, bound 2", n)
		}
	}
	// a (call), b (call), a (cached), c (call, b evicted), b (call, a evicted), a (call)
	if got := len(svc.Requests()); got != 5 {
		t.Fatalf("%d calls, want 5", got)
	}
}

// TestCacheConfig: what cacheTTL and cacheEntries accept.
func TestCacheConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec guardrail.Spec
		err  string
	}{
		{"off", guardrail.Spec{Kind: "generic", Methods: []string{"tools/list"}, CacheTTL: map[string]string{"tools/list": "0"}}, ""},
		{"a method it does not take", guardrail.Spec{Kind: "generic", CacheTTL: map[string]string{"tools/list": "5m"}}, "not one of the guardrail's methods"},
		{"too long", guardrail.Spec{Kind: "generic", CacheTTL: map[string]string{"tools/call": "25h"}}, `"cacheTTL" of "tools/call"`},
		{"negative", guardrail.Spec{Kind: "generic", CacheTTL: map[string]string{"tools/call": "-1s"}}, `"cacheTTL" of "tools/call"`},
		{"authorization", guardrail.Spec{Kind: "opa", CacheTTL: map[string]string{"tools/call": "1m"}}, "content guardrails"},
		{"too many entries", guardrail.Spec{Kind: "generic", CacheEntries: 1 << 20}, `"cacheEntries"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.spec.URL = "http://127.0.0.1:1/x"
			err := tc.spec.Validate()
			if (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("err %v, want %q", err, tc.err)
			}
		})
	}
}

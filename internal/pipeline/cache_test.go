package pipeline

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/channelcheck"
)

// TestCacheHints: a 2026-07-28 cacheable result's ttlMs over the maximum is clamped
// (cache_ttl_clamped on the record) and a changed result is cacheScope "private";
// with callers told apart every public result is private; a result within the
// maximum with no caller identity passes byte for byte, as does a 2025-11-25 one
// and a non-complete one.
func TestCacheHints(t *testing.T) {
	listing := func(ttl, scope string) string {
		return `{"resultType":"complete","tools":[{"name":"get_weather","description":"Returns the weather.","inputSchema":{"type":"object"}}],"ttlMs":` + ttl + `,"cacheScope":"` + scope + `"}`
	}
	adminListing := func(name, more string) string {
		return `{"resultType":"complete","tools":[{"name":"get_weather","inputSchema":{"type":"object"}},{"name":"` + name + `","inputSchema":{"type":"object"}` + more + `}],"ttlMs":300000,"cacheScope":"public"}`
	}
	for _, tc := range []struct {
		name      string
		method    string
		version   string
		result    string
		max       time.Duration
		perCaller bool
		ttl       float64 // -1: unchanged byte for byte
		scope     string
		clamped   bool
	}{
		{"a month public, clamped", "tools/list", "2026-07-28", listing("2592000000", "public"), 0, false, 300000, "private", true},
		{"five minutes public, kept", "tools/list", "2026-07-28", listing("300000", "public"), 0, false, -1, "", false},
		{"the configured maximum", "tools/list", "2026-07-28", listing("300000", "private"), time.Minute, false, 60000, "private", true},
		{"callers told apart: private", "tools/list", "2026-07-28", listing("1000", "public"), 0, true, 1000, "private", false},
		{"callers told apart: an escaped public is private", "tools/list", "2026-07-28", listing("1000", `\u0070ublic`), 0, true, 1000, "private", false},
		{"an escaped public, clamped", "tools/list", "2026-07-28", listing("2592000000", `\u0070ubli\u0063`), 0, false, 300000, "private", true},
		{"resources/read clamped", "resources/read", "2026-07-28", `{"resultType":"complete","contents":[{"uri":"file:///a","text":"hello"}],"ttlMs":86400000,"cacheScope":"private"}`, 0, false, 300000, "private", true},
		{"an administrator's tool, public: private", "tools/list", "2026-07-28", adminListing("admin_delete_tenant", ""), 0, false, 300000, "private", false},
		{"a tool that grants roles, public: private", "tools/list", "2026-07-28", adminListing("grantUserRole", ""), 0, false, 300000, "private", false},
		{"a tool with an oauth2 scheme, public: private", "tools/list", "2026-07-28", adminListing("list_invoices", `,"securitySchemes":[{"type":"oauth2","scopes":["billing.read"]}]`), 0, false, 300000, "private", false},
		{"noauth and ordinary names, public: kept", "tools/list", "2026-07-28", adminListing("delete_file", `,"securitySchemes":[{"type":"noauth"}]`), 0, false, -1, "", false},
		{"an administrator's tool, already private: kept", "tools/list", "2026-07-28", `{"resultType":"complete","tools":[{"name":"admin_reset","inputSchema":{"type":"object"}}],"ttlMs":300000,"cacheScope":"private"}`, 0, false, -1, "", false},
		{"2025-11-25: untouched", "tools/list", "2025-11-25", listing("2592000000", "public"), 0, false, -1, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, rec := newPipeline(t, nil, true, false)
			p.MaxCacheTTL, p.PerCaller = tc.max, tc.perCaller
			resp := response(t, tc.result)
			r := p.Response(context.Background(), Channel{Method: tc.method, ProtocolVersion: tc.version}, resp)
			_, ids, _, _ := lastRec(t, rec)
			if slices.Contains(ids, channelcheck.RuleCacheTTLClamped) != tc.clamped {
				t.Errorf("rule ids %v", ids)
			}
			if authorized := tc.scope == "private" && tc.ttl == 300000 && !tc.clamped && !tc.perCaller; slices.Contains(ids, channelcheck.RuleCacheScopeAuthorized) != authorized {
				t.Errorf("rule ids %v, want %s: %v", ids, channelcheck.RuleCacheScopeAuthorized, authorized)
			}
			if tc.ttl < 0 {
				if r.Original == nil {
					t.Fatalf("changed: %s", r.Result)
				}
				return
			}
			var got struct {
				TTLMs      float64
				CacheScope string
			}
			if err := json.Unmarshal(r.Result, &got); err != nil || got.TTLMs != tc.ttl || got.CacheScope != tc.scope {
				t.Fatalf("got %s", r.Result)
			}
		})
	}
}

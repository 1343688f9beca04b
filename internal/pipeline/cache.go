package pipeline

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/mcpgate/mcpgate/engine"
	"github.com/mcpgate/mcpgate/internal/channelcheck"
	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/methods"
)

// DefaultMaxCacheTTL is the longest ttlMs a 2026-07-28 cacheable result keeps when
// Pipeline.MaxCacheTTL is zero (docs/http.md#cache-hints).
const DefaultMaxCacheTTL = 5 * time.Minute

// cacheHints sets the cache hints of a 2026-07-28 cacheable result on its way to the
// client (schema.ts "CacheableResult"): a ttlMs over the maximum is clamped to it,
// with the finding cache_ttl_clamped (Low) on the record; cacheScope "public"
// becomes "private" when the gateway changed the result (its ttlMs included) or
// tells callers apart (Pipeline.PerCaller), and on a tools listing that holds a tool
// an authorization decides (channelcheck.AuthorizedTool), with the finding
// cache_scope_authorized_listing (Low). A result the gateway left alone, with no
// caller identity in play and a ttlMs within the maximum, passes byte for byte.
func (r *run) cacheHints(c Channel, m *methods.Method, resp *jsonrpc.Message, reply Reply) Reply {
	if m == nil || !m.Cacheable || resp.Error != nil || reply.Error != nil || reply.NoReply ||
		methods.RevisionOf(c.ProtocolVersion) != methods.Rev20260728 {
		return reply
	}
	result, changed := reply.Result, reply.Result != nil
	if !changed {
		if reply.Original == nil {
			return reply
		}
		result = resp.Result
	}
	var doc map[string]json.RawMessage
	if json.Unmarshal(result, &doc) != nil || doc == nil {
		return reply
	}
	var kind string
	if rt, ok := doc["resultType"]; ok && (json.Unmarshal(rt, &kind) != nil || kind != "complete") {
		return reply
	}
	edited := false
	maxTTL := r.p.MaxCacheTTL
	if maxTTL <= 0 {
		maxTTL = DefaultMaxCacheTTL
	}
	var ttl float64
	if json.Unmarshal(doc["ttlMs"], &ttl) == nil && ttl > float64(maxTTL.Milliseconds()) {
		doc["ttlMs"] = json.RawMessage(strconv.FormatInt(maxTTL.Milliseconds(), 10))
		edited = true
		r.rec.addFindings(engine.Report{Findings: []engine.Finding{{RuleID: channelcheck.RuleCacheTTLClamped, Severity: engine.SeverityLow, Pointer: "/ttlMs"}}, Highest: engine.SeverityLow})
	}
	var scope string // read decoded: "\u0070ublic" is "public" (docs/decisions.md#decoded-values)
	_ = json.Unmarshal(doc["cacheScope"], &scope)
	if scope == "public" && (changed || edited || r.p.PerCaller) { // public only where nothing changed
		doc["cacheScope"] = json.RawMessage(`"private"`)
		edited = true
	} else if scope == "public" && m.Name == methods.ToolsList {
		// a listing with a tool some callers only may see is not for a shared cache
		if i := channelcheck.AuthorizedTool(doc["tools"]); i >= 0 {
			doc["cacheScope"] = json.RawMessage(`"private"`)
			edited = true
			r.rec.addFindings(engine.Report{Findings: []engine.Finding{{RuleID: channelcheck.RuleCacheScopeAuthorized, Severity: engine.SeverityLow, Pointer: "/tools/" + strconv.Itoa(i)}}, Highest: engine.SeverityLow})
		}
	}
	if !edited {
		return reply
	}
	b, err := jsonrpc.Marshal(doc)
	if err != nil {
		return reply
	}
	r.rec.outputChanged()
	reply.Original, reply.Result = nil, b
	return reply
}

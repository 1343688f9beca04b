package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/dop251/goja"
	"github.com/mcpgate/mcpgate/ctxapi"
)

// The gate benchmark workload (docs/policies.md#what-a-policy-costs): one tools/call
// of github_create_pull (access write) by a trusted caller, pre then post, with fresh
// inputs each iteration, through the same Set.Run calls internal/pipeline makes. The
// arguments carry a 236-byte PR body ending in two Co-Authored-By trailers; the result
// is one 4096-byte text item with three e-mail addresses near offsets 1000, 2000 and
// 3000. Four policies in file order: e-mail redaction (post), block force_delete,
// strip Co-Authored-By, read-only tools for untrusted callers (pre).

// workloadBody is the 236-byte PR description.
var workloadBody = func() string {
	trailers := "Co-Authored-By: Ada Agent <agent@example.com>\nCo-Authored-By: Bo Bot <bot@example.org>\n"
	head := "Fix the retry loop in the uploader.\n\nThe loop retried forever on HTTP 429; it now backs off and gives up after five tries.\n\n"
	pad := 236 - len(head) - len(trailers)
	return head + strings.Repeat("x", pad-1) + "\n" + trailers
}()

// workloadText is the 4096-byte result text with three addresses.
var workloadText = func() string {
	b := []byte(strings.Repeat("build log line without anything private in it; ", 100)[:4096])
	for i, addr := range []string{"alice@example.com", "bob.smith@corp.example.org", "carol@example.net"} {
		copy(b[(i+1)*1000:], " "+addr+" ")
	}
	return string(b)
}()

var workloadUser = ctxapi.User{UserID: "user-42", CallerID: "claude-code", CallerClass: "trusted", Roles: []string{"developer"}}

// workloadParams and workloadContent are the bytes a client and an upstream send: the
// arguments without HTML escaping of < and > (json.Marshal would add it).
var workloadParams, workloadContent = func() ([]byte, []byte) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(map[string]any{"owner": "acme", "repo": "uploader", "title": "Fix retry loop",
		"head": "fix-retry", "base": "main", "body": workloadBody})
	content, _ := json.Marshal([]map[string]string{{"type": "text", "text": workloadText}})
	return bytes.TrimSpace(buf.Bytes()), content
}()

// workloadCalls returns fresh pre and post calls, as a real request has a fresh
// params map and a fresh result: new copies of the bytes read off the wire.
func workloadCalls() (pre, post *ctxapi.Call) {
	params := bytes.Clone(workloadParams)
	content := bytes.Clone(workloadContent)
	limit := func(int) bool { return false }
	pre = &ctxapi.Call{Phase: ctxapi.PhasePre, Method: "tools/call", Tool: "github_create_pull", ToolAccess: "write",
		Params: params, User: workloadUser, RateLimitExceeded: limit}
	post = &ctxapi.Call{Phase: ctxapi.PhasePost, Method: "tools/call", Tool: "github_create_pull", ToolAccess: "write",
		Params: params, User: workloadUser, RateLimitExceeded: limit, Response: &ctxapi.Response{Content: content}}
	return pre, post
}

// checkWorkload is the result check every workload benchmark makes first: the three
// addresses redacted, no @ left, no trailer left.
func checkWorkload(params, content []byte) error {
	var p struct{ Body string }
	if err := json.Unmarshal(params, &p); err != nil {
		return fmt.Errorf("params: %w", err)
	}
	if strings.Contains(strings.ToLower(p.Body), "co-authored-by") || !strings.HasPrefix(p.Body, "Fix the retry loop") {
		return fmt.Errorf("trailers left in body %q", p.Body)
	}
	var items []struct{ Type, Text string }
	if err := json.Unmarshal(content, &items); err != nil || len(items) != 1 {
		return fmt.Errorf("content %s: %v", content, err)
	}
	if n := strings.Count(items[0].Text, "[REDACTED"); n != 3 || strings.Contains(items[0].Text, "@") {
		return fmt.Errorf("%d redactions, @ left: %v", n, strings.Contains(items[0].Text, "@"))
	}
	return nil
}

// Idiomatic policies: the Go-backed helpers (ctx.redactAll, ctx.removeLines), and each
// file says the phase it acts in.
var idiomaticPolicies = map[string]string{
	"10-redact-email.js": `if (ctx.phase !== "post") return;
ctx.redactAll({ kinds: ["pii_email"] });`,
	"20-block-force-delete.js": `if (ctx.phase === "pre" && ctx.params.force_delete === true) {
  throw "force_delete is blocked by policy";
}`,
	"30-strip-co-authored-by.js": `if (ctx.phase !== "pre") return;
if (ctx.tool === "github_create_pull" || ctx.tool === "github_update_pull") {
  ctx.params.body = ctx.removeLines(ctx.params.body, ["co-authored-by:"]);
}`,
	"40-untrusted-readonly.js": `if (ctx.phase === "pre" && ctx.user.callerClass === "untrusted" && ctx.toolAccess !== "read") {
  throw "caller class 'untrusted' may only call tools with access tag 'read'";
}`,
}

// regexStrip is the idiomatic trailer strip written with JavaScript regular expressions
// instead of ctx.removeLines.
const regexStrip = `if (ctx.phase !== "pre") return;
if (ctx.tool === "github_create_pull" || ctx.tool === "github_update_pull") {
  var body = ctx.params.body;
  if (typeof body === "string" && /co-authored-by:/i.test(body)) {
    ctx.params.body = body.replace(/^co-authored-by:.*$\n?/gim, "").replace(/\n{3,}/g, "\n\n");
  }
}`

// classicPolicies are the four classic plain-JavaScript examples (the regex runs in JS),
// in the workload's file order.
func classicPolicies(tb testing.TB) map[string]string {
	ex := shipped(tb, true)
	files := map[string]string{}
	for name, src := range map[string]string{
		"10-redact-email.js":         "redact-email-regex.js",
		"20-block-force-delete.js":   "block-force-delete.js",
		"30-strip-co-authored-by.js": "strip-co-authored-by.js",
		"40-untrusted-readonly.js":   "untrusted-readonly.js",
	} {
		if ex[src] == "" {
			tb.Fatalf("policies/examples/%s is missing", src)
		}
		files[name] = ex[src]
	}
	return files
}

// runWorkload runs one call through the gate as the pipeline does, under a request
// context that can be cancelled (the pipeline's is the client's request).
func runWorkload(g *Gate) (pre, post Result) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	preCall, postCall := workloadCalls()
	set := g.Current() // a call keeps its set for both phases
	pre = set.Run(ctx, preCall)
	if pre.Reject != nil {
		return pre, post
	}
	if pre.Changed {
		postCall.Params = pre.Params
	}
	if set.Acts(ctxapi.PhasePost) {
		post = set.Run(ctx, postCall)
	} else {
		post.Content = postCall.Response.Content
	}
	return pre, post
}

// sideBySide times the runtime-per-call baseline (runtimePerCall, on the classic
// plain-JS examples) and the gate in alternating rounds, so that load from other
// processes falls on both alike, and returns the wall and CPU time per call of each
// (CPU time is 0 where processCPU cannot read it). Each block runs about 25 ms, long
// enough for several of its own garbage collections, and starts after a collection
// (not timed), so neither side pays for the other's garbage.
func sideBySide(tb testing.TB, g *Gate) (base, gate, baseCPU, gateCPU time.Duration) {
	srcs := classicSources(tb)
	p, c := runtimePerCall(srcs) // warm up, and check the baseline's result
	if err := checkWorkload(p, c); err != nil {
		tb.Fatalf("baseline: %v", err)
	}
	const rounds, baseCalls, gateCalls = 10, 20, 600
	var b, gt, bc, gc time.Duration
	for r := 0; r < rounds; r++ {
		runtime.GC()
		start, cpu := time.Now(), processCPU()
		for i := 0; i < baseCalls; i++ {
			runtimePerCall(srcs)
		}
		b += time.Since(start)
		bc += processCPU() - cpu
		runtime.GC()
		start, cpu = time.Now(), processCPU()
		for i := 0; i < gateCalls; i++ {
			runWorkload(g)
		}
		gt += time.Since(start)
		gc += processCPU() - cpu
	}
	return b / (rounds * baseCalls), gt / (rounds * gateCalls), bc / (rounds * baseCalls), gc / (rounds * gateCalls)
}

func benchWorkload(b *testing.B, files map[string]string) {
	g := loadGate(b, files, func(o *Options) { o.PoolSize = 1; o.Timeout = DefaultTimeout })
	pre, post := runWorkload(g)
	if pre.Reject != nil || post.Reject != nil {
		b.Fatalf("rejected: %+v %+v", pre.Reject, post.Reject)
	}
	if err := checkWorkload(pre.Params, post.Content); err != nil {
		b.Fatal(err)
	}
	base, gate, baseCPU, gateCPU := sideBySide(b, g)
	b.SetBytes(int64(len(workloadText)))
	b.ReportAllocs()
	b.ResetTimer()
	cpu0, n := processCPU(), 0
	for b.Loop() {
		runWorkload(g)
		n++
	}
	if cpu := processCPU() - cpu0; cpu > 0 && n > 0 {
		// CPU per call (GC included) varies less than wall time on a shared machine
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(n), "cpu-ns/call")
	}
	b.ReportMetric(float64(base.Nanoseconds()), "baseline-ns/call")
	b.ReportMetric(float64(gate.Nanoseconds()), "gate-ns/call")
	b.ReportMetric(float64(base)/float64(gate), "x-faster")
	if baseCPU > 0 && gateCPU > 0 {
		b.ReportMetric(float64(baseCPU)/float64(gateCPU), "x-faster-cpu")
	}
}

// BenchmarkGateWorkload runs the workload with idiomatic policies, with them but the
// trailer strip written with JS regular expressions, with the classic plain-JS
// policies, and with four policies that do nothing; each reports the
// runtime-per-call baseline measured in the same process and the ratio (x-faster).
func BenchmarkGateWorkload(b *testing.B) {
	b.Run("idiomatic", func(b *testing.B) { benchWorkload(b, idiomaticPolicies) })
	b.Run("idiomatic-regex-strip", func(b *testing.B) {
		files := maps.Clone(idiomaticPolicies)
		files["30-strip-co-authored-by.js"] = regexStrip
		benchWorkload(b, files)
	})
	b.Run("plain-js", func(b *testing.B) { benchWorkload(b, classicPolicies(b)) })
	b.Run("noop-x4-plus-redaction", func(b *testing.B) {
		files := map[string]string{"10-redact-email.js": idiomaticPolicies["10-redact-email.js"],
			"30-strip-co-authored-by.js": idiomaticPolicies["30-strip-co-authored-by.js"]}
		for i := 0; i < 4; i++ {
			files[fmt.Sprintf("5%d-noop.js", i)] = `var x = 1;`
		}
		benchWorkload(b, files)
	})
}

// BenchmarkRuntimePerCallBaseline is the baseline on its own: a fresh runtime per
// policy, per phase and per call, the source parsed each time, a lockdown each time,
// and ctx handed over and read back through JSON (the design docs/policies.md
// compares with).
func BenchmarkRuntimePerCallBaseline(b *testing.B) {
	srcs := classicSources(b)
	p, c := runtimePerCall(srcs)
	if err := checkWorkload(p, c); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(workloadText)))
	b.ReportAllocs()
	for b.Loop() {
		runtimePerCall(srcs)
	}
}

func classicSources(tb testing.TB) []string {
	files := classicPolicies(tb)
	return []string{files["10-redact-email.js"], files["20-block-force-delete.js"],
		files["30-strip-co-authored-by.js"], files["40-untrusted-readonly.js"]}
}

// baselineLockdown is the per-runtime lockdown of the baseline, the kind that design
// uses: host-like globals removed, eval and the Function constructor replaced by
// throwing stubs, and the constructor paths to code generation cut by a short script
// (it freezes nothing, which keeps goja's lazily built intrinsics unbuilt).
const baselineLockdown = `(function () {
  var stub = function () { throw new TypeError("code generation is disabled"); };
  ["fetch", "require", "process", "setTimeout", "setInterval", "window", "global", "self"].forEach(function (k) { delete globalThis[k]; });
  globalThis.eval = stub;
  globalThis.Function = stub;
  Object.defineProperty(Function.prototype, "constructor", {value: undefined, writable: false, configurable: false});
  try { Object.defineProperty(Object.getPrototypeOf(async function () {}), "constructor", {value: undefined}); } catch (e) {}
  try { Object.defineProperty(Object.getPrototypeOf(function* () {}), "constructor", {value: undefined}); } catch (e) {}
})()`

// runtimePerCall runs one workload call the runtime-per-call way and returns the
// arguments and content it would send.
func runtimePerCall(srcs []string) (params, content []byte) {
	preCall, postCall := workloadCalls()
	phase := func(c *ctxapi.Call, params, content []byte) ([]byte, []byte, bool) {
		for _, src := range srcs {
			rt := goja.New()
			if _, err := rt.RunString(baselineLockdown); err != nil {
				return nil, nil, false
			}
			var p map[string]any
			_ = json.Unmarshal(params, &p)
			user, _ := json.Marshal(c.User)
			var u map[string]any
			_ = json.Unmarshal(user, &u)
			ctx := map[string]any{"phase": string(c.Phase), "tool": c.Tool, "toolAccess": c.ToolAccess, "params": p, "user": u}
			if content != nil {
				var ct []any
				_ = json.Unmarshal(content, &ct)
				ctx["response"] = map[string]any{"content": ct}
			}
			_ = rt.Set("ctx", ctx)
			if _, err := rt.RunString(src); err != nil {
				return nil, nil, false
			}
			out := rt.Get("ctx").Export().(map[string]any)
			params, _ = json.Marshal(out["params"])
			if content != nil {
				content, _ = json.Marshal(out["response"].(map[string]any)["content"])
			}
		}
		return params, content, true
	}
	params, _, ok := phase(preCall, preCall.Params, nil)
	if !ok {
		return nil, nil
	}
	_, content, _ = phase(postCall, params, postCall.Response.Content)
	return params, content
}

package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gate"
	"github.com/mcpgate/mcpgate/internal/capture"
	"github.com/mcpgate/mcpgate/vocab"
)

// loadGate loads a policy directory made of files.
func loadGate(t testing.TB, files map[string]string) *gate.Gate {
	t.Helper()
	dir := t.TempDir()
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	g, err := gate.Load(context.Background(), gate.Options{Dir: dir, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

func TestPolicyRuntimeErrorLogLine(t *testing.T) {
	const secret = "s3cr3t-value"
	p, rec := newPipeline(t, map[string]string{
		"broken.js":  "var x;\nif (ctx.phase === 'pre' && ctx.params.q) {\n  x.y.z = ctx.params.q;\n}\n",
		"thrower.js": "if (ctx.phase === 'pre' && ctx.params.t) { throw 'refused ' + ctx.params.t }\n",
	}, true, false)
	var logs bytes.Buffer
	p.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	p.Health = &Health{}
	p.Handle(context.Background(), call(`{"q":"`+secret+`"}`), upstreamReturning(cleanResult, nil))
	p.Handle(context.Background(), call(`{"q":"`+secret+`"}`), upstreamReturning(cleanResult, nil))
	p.Handle(context.Background(), call(`{"t":"`+secret+`"}`), upstreamReturning(cleanResult, nil))
	out := logs.String()
	for _, want := range []string{`"level":"WARN"`, `"policy":"broken.js"`, `"line":3`, `"column":`, `"error_class":"TypeError"`, `"phase":"pre"`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, secret) || strings.Contains(out, "Cannot read") {
		t.Errorf("the log line carries the message or a value:\n%s", out)
	}
	if strings.Count(out, "policy error") != 2 {
		t.Errorf("want one line per runtime error and none for a deliberate throw:\n%s", out)
	}
	if got := p.Health.Errors(); got["broken.js"] != 2 || got["thrower.js"] != 0 {
		t.Errorf("errors per file = %v, want broken.js: 2 only", got)
	}
	if len(rec.recs) != 3 || rec.recs[0].Reason != "policy_throw" || rec.recs[0].Phase != "pre" {
		t.Errorf("records: %+v", rec.recs)
	}
}

func TestShadowNeverChangesTheCall(t *testing.T) {
	tests := []struct {
		name        string
		live        map[string]string
		shadow      map[string]string
		args        string
		result      string
		liveAction  vocab.Action
		shadowWants vocab.Action
		differs     bool
		reason      vocab.Reason
	}{
		{name: "deny everything beside an empty live set", shadow: map[string]string{"deny.js": `throw "no"`},
			args: `{}`, result: cleanResult, liveAction: "pass", shadowWants: "block", differs: true, reason: "policy_throw"},
		{name: "a TypeError in the shadow stays in the shadow", shadow: map[string]string{"bad.js": `if (ctx.phase === "post") { null.x }`},
			args: `{}`, result: cleanResult, liveAction: "pass", shadowWants: "block", differs: true, reason: "policy_throw"},
		{name: "a redacting candidate", shadow: map[string]string{"r.js": `if (ctx.phase === "post") { ctx.response.content = [{type: "text", text: "x"}] }`},
			args: `{}`, result: cleanResult, liveAction: "pass", shadowWants: "redact", differs: true},
		{name: "the same set", live: map[string]string{"w.js": `ctx.warn("w")`}, shadow: map[string]string{"w.js": `ctx.warn("w")`},
			args: `{}`, result: cleanResult, liveAction: "warn", shadowWants: "warn"},
		{name: "a live rejection the shadow lets through", live: map[string]string{"deny.js": `throw "no"`},
			shadow: map[string]string{"ok.js": `// nothing`}, args: `{}`, result: cleanResult, liveAction: "block", shadowWants: "pass", differs: true},
		{name: "the filter blocks for both", shadow: map[string]string{"ok.js": `// nothing`},
			args: `{}`, result: osc52Result, liveAction: "block", shadowWants: "block", reason: "filter_block"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, rec := newPipeline(t, tc.live, true, false)
			p.Shadow, p.Health, p.ShadowHealth = loadGate(t, tc.shadow), &Health{}, &Health{}
			plain, plainRec := newPipeline(t, tc.live, true, false)
			var sent, plainSent json.RawMessage
			reply := p.Handle(context.Background(), call(tc.args), upstreamReturning(tc.result, &sent))
			want := plain.Handle(context.Background(), call(tc.args), upstreamReturning(tc.result, &plainSent))
			p.Wait() // the record waits for the shadow; the reply did not
			if string(sent) != string(plainSent) {
				t.Errorf("the shadow changed what went upstream: %s, want %s", sent, plainSent)
			}
			if !sameReply(reply, want, rec.recs[0].EventID, plainRec.recs[0].EventID) {
				t.Fatalf("the shadow changed the reply:\n got %s %s\nwant %s %s", reply.Result, reply.Original, want.Result, want.Original)
			}
			r := rec.recs[0]
			if r.ActionTaken != tc.liveAction || r.Shadow == nil {
				t.Fatalf("live action %s, shadow %+v", r.ActionTaken, r.Shadow)
			}
			if s := r.Shadow; s.ActionTaken != tc.shadowWants || s.Differs != tc.differs || s.Reason != tc.reason || s.PolicySetHash != p.Shadow.Current().Hash {
				t.Errorf("shadow = %+v, want action %s differs %v reason %q", *s, tc.shadowWants, tc.differs, tc.reason)
			}
			if n := p.ShadowHealth.Errors()["bad.js"]; (tc.name == "a TypeError in the shadow stays in the shadow") != (n == 1) {
				t.Errorf("shadow errors for bad.js: %d", n)
			}
			if len(p.Health.Errors()) != 0 {
				t.Errorf("the shadow's errors counted as the live set's: %v", p.Health.Errors())
			}
			if _, ok := r.StageMS["shadow_pre"]; !ok {
				t.Errorf("stage_ms lacks the shadow's cost: %v", r.StageMS)
			}
		})
	}
}

// sameReply compares two replies with each one's event id taken out.
func sameReply(a, b Reply, idA, idB string) bool {
	norm := func(r Reply, id string) string {
		return strings.ReplaceAll(string(r.Result)+"|"+string(r.Original)+"|"+string(r.Error), id, "ID")
	}
	return norm(a, idA) == norm(b, idB)
}

type captured struct {
	mu sync.Mutex
	es []*capture.Entry
}

func (c *captured) Capture(e *capture.Entry) { c.mu.Lock(); c.es = append(c.es, e); c.mu.Unlock() }

func TestCaptureKeepsValuesOutOfTheRecord(t *testing.T) {
	p, rec := newPipeline(t, map[string]string{"rw.js": `if (ctx.phase === "pre") { ctx.params.q = "rewritten" }`}, true, false)
	c := &captured{}
	p.Capture = c
	p.Handle(context.Background(), call(`{"q":"original-value"}`), upstreamReturning(cleanResult, nil))
	if len(c.es) != 1 {
		t.Fatalf("want one capture entry, got %d", len(c.es))
	}
	e := c.es[0]
	if e.EventID != rec.recs[0].EventID || e.Tool != "read_file" || e.ActionTaken != "pass" || !e.FilterOutput {
		t.Errorf("entry %+v does not match record %+v", e, rec.recs[0])
	}
	if string(e.Arguments) != `{"q":"original-value"}` || string(e.Result) != cleanResult {
		t.Errorf("entry holds arguments %s result %s; want the client's arguments and the upstream's result", e.Arguments, e.Result)
	}
}

// TestCaptureWithInputOnlyRecords: with MCPGATE_AUDIT_OUTPUT=off the record goes out
// before the upstream call, but the capture entry still gets the result.
func TestCaptureWithInputOnlyRecords(t *testing.T) {
	p, rec := newPipeline(t, nil, true, false)
	p.AuditOutput = false
	c := &captured{}
	p.Capture = c
	p.Handle(context.Background(), call(`{"q":"v"}`), upstreamReturning(cleanResult, nil))
	if len(c.es) != 1 || len(rec.recs) != 1 {
		t.Fatalf("%d entries, %d records; want one of each", len(c.es), len(rec.recs))
	}
	if string(c.es[0].Result) != cleanResult || c.es[0].EventID != rec.recs[0].EventID {
		t.Errorf("entry %+v", c.es[0])
	}
}

// BenchmarkShadow is one clean tools/call with the shipped e-mail redaction as the
// live set, alone and with the same file as a --shadow set, side by side in one run;
// the difference is the shadow's cost (also in stage_ms as shadow_pre/shadow_post).
func BenchmarkShadow(b *testing.B) {
	const redact = `if (ctx.phase === "post") { ctx.redactAll({ kinds: ["pii_email"] }) }`
	result := `{"content":[{"type":"text","text":"` + strings.Repeat("build ok; ", 400) + `mail ada@example.com"}]}`
	for _, withShadow := range []bool{false, true} {
		name := "live"
		if withShadow {
			name = "live+shadow"
		}
		b.Run(name, func(b *testing.B) {
			p, rec := newPipeline(b, map[string]string{"redact-email.js": redact}, true, false)
			if withShadow {
				p.Shadow = loadGate(b, map[string]string{"redact-email.js": redact})
			}
			up := upstreamReturning(result, nil)
			reply := p.Handle(context.Background(), call(`{"path":"x"}`), up)
			p.Wait()
			if strings.Contains(string(reply.Result), "ada@example.com") || rec.recs[0].ActionTaken != vocab.Redact ||
				(withShadow && (rec.recs[0].Shadow == nil || rec.recs[0].Shadow.Differs)) {
				b.Fatalf("wrong answer: %s %+v", reply.Result, rec.recs[0])
			}
			p.Audit = nil
			b.SetBytes(int64(len(result)))
			b.ReportAllocs()
			for b.Loop() {
				p.Handle(context.Background(), call(`{"path":"x"}`), up)
			}
			p.Wait()
		})
	}
}

// TestShadowNeverDelaysTheLiveReply: a candidate that loops in either phase (up to
// its 1 s limit here) delays no live reply; the live reply goes out first, and only
// the record waits for the shadow's part.
func TestShadowNeverDelaysTheLiveReply(t *testing.T) {
	for _, phase := range []string{"pre", "post"} {
		t.Run(phase, func(t *testing.T) {
			p, rec := newPipeline(t, nil, true, false)
			p.Shadow = loadGate(t, map[string]string{"loop.js": `if (ctx.phase === "` + phase + `") { while (true) {} }`})
			start := time.Now()
			reply := p.Handle(context.Background(), call(`{}`), upstreamReturning(cleanResult, nil))
			if took := time.Since(start); took > 500*time.Millisecond {
				t.Fatalf("the live reply took %v behind a looping shadow", took)
			}
			if string(reply.Original) == "" {
				t.Fatalf("the live reply changed: %+v", reply)
			}
			p.Wait()
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if len(rec.recs) != 1 || rec.recs[0].Shadow == nil || rec.recs[0].Shadow.Reason != vocab.ReasonPolicyTimeout || rec.recs[0].ActionTaken != vocab.Pass {
				t.Fatalf("records %+v", rec.recs)
			}
		})
	}
}

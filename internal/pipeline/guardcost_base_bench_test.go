//go:build unix

package pipeline

// This file is the half of BenchmarkGuardrailCost that builds on earlier commits
// too: scripts/guardcost.sh copies it, alone, into the commits before the guardrails
// and before the tools/list guardrail, to run the same calls side by side with them
// (docs/guardrails.md#cost). It must use only what those commits had.

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
)

// guardCostCase is one side of BenchmarkGuardrailCost: setup configures the pipeline
// (nil: no guardrail) and returns a check of the guardrail's part, given the number
// of calls made so far: run after the first call and after the timed loop.
type guardCostCase struct {
	name  string
	setup func(b *testing.B, p *Pipeline) (check func(b *testing.B, calls int))
}

// guardCostCases are the sides with a guardrail, added by the file beside this one
// where the commit has guardrails.
var guardCostCases []guardCostCase

// guardCostResult is a CallToolResult with one 4 KiB text.
func guardCostResult() string {
	text := make([]byte, 4096)
	for i := range text {
		text[i] = 'a' + byte(i%26)
		if i%80 == 79 {
			text[i] = ' '
		}
	}
	b, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": string(text)}}})
	return string(b)
}

// guardCostListing is a tools/list result of 10 tools, each with a description and
// a described parameter.
func guardCostListing() string {
	var entries []string
	for i := range 10 {
		name := "tool_" + string(rune('a'+i))
		entries = append(entries, `{"name":"`+name+`","description":"Reads the records of kind `+name+` and returns them as a list, newest first.","inputSchema":{"type":"object","properties":{"q":{"type":"string","description":"what to look for"}}}}`)
	}
	return `{"tools":[` + strings.Join(entries, ",") + `]}`
}

// cpuTime is the process's user and system CPU time so far (every thread: the
// pipeline's and the loopback service's).
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkGuardrailCost: one tools/call (a 4 KiB text result, no policies) and one
// tools/list page (10 tools), each first checked (the reply is the server's bytes,
// the record says pass), then timed: with no guardrail, and with the sides of
// guardCostCases. Besides ns/op (wall) it reports cpu-ns/op, the process's CPU time
// per op, which a busy machine disturbs less. Run by scripts/guardcost.sh beside the
// commits before (docs/guardrails.md#cost).
func BenchmarkGuardrailCost(b *testing.B) {
	result, listing := guardCostResult(), guardCostListing()
	sides := append([]guardCostCase{{name: "call/none"}, {name: "list/none"}}, guardCostCases...)
	for _, side := range sides {
		b.Run(side.name, func(b *testing.B) {
			p, rec := newPipeline(b, nil, true, false)
			check := func(*testing.B, int) {}
			if side.setup != nil {
				check = side.setup(b, p)
			}
			var once func() Reply
			var want []byte
			if strings.HasPrefix(side.name, "call/") {
				up := upstreamReturning(result, nil)
				want = []byte(`{"jsonrpc":"2.0","id":1,"result":` + result + `}`)
				once = func() Reply {
					return p.Handle(context.Background(), call(`{"path":"/tmp/a","query":"hello world"}`), up)
				}
			} else {
				want = []byte(`{"jsonrpc":"2.0","id":7,"result":` + listing + `}`)
				msg, err := jsonrpc.Parse(want)
				if err != nil {
					b.Fatal(err)
				}
				once = func() Reply { return p.Response(context.Background(), Channel{Method: "tools/list"}, msg) }
			}
			// The answer first: the server's bytes, one record, pass.
			if r := once(); !bytes.Equal(r.Original, want) || r.Result != nil {
				b.Fatalf("the reply is not the server's bytes: %s %s", r.Original, r.Result)
			}
			if len(rec.recs) != 1 || rec.recs[0].ActionTaken != "pass" {
				b.Fatalf("want one record with action pass, got %d: %+v", len(rec.recs), rec.recs)
			}
			check(b, 1)
			p.Audit = nil
			b.ReportAllocs()
			b.ResetTimer()
			cpu := cpuTime(b)
			for range b.N {
				if r := once(); r.Original == nil {
					b.Fatalf("the reply changed: %s", r.Result)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(cpuTime(b)-cpu)/float64(b.N), "cpu-ns/op")
			check(b, b.N+1)
		})
	}
}

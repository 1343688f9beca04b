package gate

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/engine"
)

// STUB: the pooled goja gate lands with issue 4. The types and signatures here are the
// contract the pipeline builds on; keep them.

// DefaultTimeout is the per-policy budget of seed 003.
const DefaultTimeout = 5 * time.Second

// Options configure a Gate. Dir must exist.
type Options struct {
	Dir        string        // policies directory; top-level *.js only, lexical order
	PoolSize   int           // runtimes per policy set; 0 means GOMAXPROCS
	Timeout    time.Duration // per policy; 0 means DefaultTimeout
	Evaluators string        // GATE_EVALUATORS; "" means "goja"; unknown names are an error
	Console    bool          // expose console.log to policies (debug only)
	Analyzer   *engine.Analyzer
	Logger     *slog.Logger
}

// Rejection is a policy's refusal of a call. Message goes to the client only, never
// to an audit record or a log.
type Rejection struct {
	Policy  string // file name, e.g. "block-force-delete.js"
	Code    string // policy_throw, policy_timeout, policy_stack_limit, policy_memory_limit, bad_ctx_shape, policy_error
	Message string
}

// Result is what one phase of the policy set did.
type Result struct {
	Params            json.RawMessage // pre: the arguments to send upstream
	Content           json.RawMessage // post: the content array to return
	StructuredContent json.RawMessage // post: structuredContent (nil when absent)
	Changed           bool            // by JSON equality with the input
	Action            string          // strongest policy effect: "", "warn", "redact" or "mask"
	Acted             []string        // policy files that changed, warned or rejected, in order
	Reject            *Rejection
	Elapsed           time.Duration
}

// Gate holds the current compiled policy set and reloads it.
type Gate struct {
	set *Set
}

// Set is one compiled generation of the policy set; it never changes once built.
type Set struct {
	Generation uint64
	Hash       string   // sha256 of the sources, hex
	Files      []string // file names in run order
}

// Load compiles every policy in opts.Dir; a syntax error is returned with file and line.
func Load(ctx context.Context, opts Options) (*Gate, error) {
	return &Gate{set: &Set{Generation: 1}}, nil
}

// Current returns the policy set new calls should use.
func (g *Gate) Current() *Set { return g.set }

// Reload compiles the directory again and swaps the new set in; on error the last good
// set stays.
func (g *Gate) Reload() error { return nil }

// Watch hot-reloads on file changes until ctx is done.
func (g *Gate) Watch(ctx context.Context) error { <-ctx.Done(); return nil }

// Status is the reload state shown in logs and status output.
type Status struct {
	Generation uint64    `json:"generation"`
	Hash       string    `json:"hash"`
	Files      []string  `json:"files"`
	LastError  string    `json:"last_error,omitempty"`
	LoadedAt   time.Time `json:"loaded_at"`
}

// Status reports the current generation and the last reload error.
func (g *Gate) Status() Status { return Status{Generation: g.set.Generation} }

// Close stops watching and frees the pools.
func (g *Gate) Close() error { return nil }

// Run runs every policy of the set for call.Phase, in order, each on the ctx left by
// the one before, and stops at the first rejection.
func (s *Set) Run(ctx context.Context, call *ctxapi.Call) Result {
	r := Result{Params: call.Params}
	if call.Response != nil {
		r.Content = call.Response.Content
		r.StructuredContent = call.Response.StructuredContent
	}
	return r
}

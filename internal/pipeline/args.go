package pipeline

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mcpgate/mcpgate/engine"
	"github.com/mcpgate/mcpgate/internal/argcheck"
	"github.com/mcpgate/mcpgate/internal/audit"
	"github.com/mcpgate/mcpgate/internal/bound"
	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/methods"
	"github.com/mcpgate/mcpgate/vocab"
)

// argumentChecks judges the call's arguments against the tool's listed schema and
// reads its shell and path arguments (internal/argcheck,
// docs/engine.md#argument-checks). The findings go to the record (argument_check,
// input_rule_ids); under the strict profile a finding that refuses answers the call
// with -32602 before any policy or the upstream sees it. Nil: the call goes on.
func (r *run) argumentChecks() *Reply {
	if r.c.Schema == nil {
		return nil
	}
	start := time.Now()
	res := argcheck.Check(r.c.Schema(r.tool), r.tool, r.args, argcheck.Options{Roots: r.argumentRoots()})
	r.rec.stage(vocab.StageArguments, start)
	r.rec.setArguments(res)
	f := res.Refused()
	if f == nil || !r.p.Strict {
		return nil
	}
	reason := argumentReason(f.Rule)
	r.rec.setReason(reason)
	r.rec.setOutcome(vocab.OutcomeRejected)
	r.rec.guardrail(f.Rule)
	r.rec.escalate(vocab.Block)
	b, _ := jsonrpc.Marshal(jsonrpc.ErrorObject{Code: methods.CodeInvalidParams,
		Message: "mcpgate: arguments refused (" + f.Rule + " at " + quotePointer(f.Pointer) + "); see audit log entry " + r.rec.eventID()})
	return &Reply{Error: b}
}

// argumentRoots are the roots paths must stay under: the client's declared roots for
// the server, else its pinned ones.
func (r *run) argumentRoots() []string {
	if len(r.c.Roots) > 0 {
		return r.c.Roots
	}
	return r.c.PinnedRoots
}

// argumentReason is the record's reason for a refused argument rule.
func argumentReason(rule string) vocab.Reason {
	switch rule {
	case argcheck.RuleSchema, argcheck.RuleUndeclared:
		return vocab.ReasonArgumentSchema
	case argcheck.RuleShell:
		return vocab.ReasonArgumentShell
	case argcheck.RuleURLInternal:
		return vocab.ReasonArgumentURL
	}
	return vocab.ReasonArgumentPath
}

// quotePointer is a JSON pointer for a message: "" (the whole arguments) reads "/".
func quotePointer(p string) string {
	if p == "" {
		return "/"
	}
	return bound.Truncate(p, maxPointer)
}

// maxPointer bounds a pointer in a record or a message: pointers name members, which
// a client chooses.
const maxPointer = 256

// argumentCheck is the record's argument_check of res.
func argumentCheck(res argcheck.Result) *audit.ArgumentCheck {
	ac := &audit.ArgumentCheck{Schema: res.Schema}
	for _, f := range res.Findings {
		ac.Findings = append(ac.Findings, audit.ArgumentFinding{Rule: f.Rule, Pointer: bound.Truncate(f.Pointer, maxPointer), Keyword: f.Keyword})
	}
	return ac
}

// PromptArguments judges a prompts/get's arguments against the arguments the
// prompt's listing declared (t; nil when no listing of it was seen) with the same
// checks as a tools/call's (docs/engine.md#argument-checks). It writes a record only
// when it finds something; under the strict profile a finding that refuses answers
// the request with -32602 (Reply.Error), and the server is never asked. A zero Reply
// lets the request go on.
func (p *Pipeline) PromptArguments(ctx context.Context, c Channel, t *argcheck.Tool) (reply Reply) {
	var q struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if json.Unmarshal(c.Params, &q) != nil {
		return Reply{}
	}
	if len(q.Arguments) > 0 && q.Arguments[0] != '{' && string(q.Arguments) != "null" {
		q.Arguments = nil // not an object: the server answers it
	}
	start := time.Now()
	res := argcheck.Check(t, q.Name, q.Arguments, argcheck.Options{Roots: c.Roots})
	if len(res.Findings) == 0 {
		return Reply{} // nothing found: the response's record says the rest
	}
	r := p.arriveChannel(ctx, c)
	defer r.rec.emit(p)
	r.rec.stage(vocab.StageArguments, start)
	r.rec.setArguments(res)
	r.rec.setInputRules(engine.Report{})
	f := res.Refused()
	if f == nil || !p.Strict {
		return Reply{}
	}
	r.rec.setReason(argumentReason(f.Rule))
	r.rec.setOutcome(vocab.OutcomeRejected)
	r.rec.guardrail(f.Rule)
	r.rec.escalate(vocab.Block)
	b, _ := jsonrpc.Marshal(jsonrpc.ErrorObject{Code: methods.CodeInvalidParams,
		Message: "mcpgate: arguments refused (" + f.Rule + " at " + quotePointer(f.Pointer) + "); see audit log entry " + r.rec.eventID()})
	return Reply{Error: b}
}

package pipeline

import (
	"encoding/json"

	"github.com/mcpgate/mcpgate/engine"
	"github.com/mcpgate/mcpgate/internal/audit"
	"github.com/mcpgate/mcpgate/internal/methods"
	"github.com/mcpgate/mcpgate/internal/motion"
	"github.com/mcpgate/mcpgate/vocab"
)

// Secrets in motion (docs/decisions.md#secrets-in-motion): what a result showed the
// caller is remembered as keyed hashes in the session's motion.Scope; a later call
// whose arguments carry it is recorded, or refused with RefuseSecretsInMotion.

// motionCheck looks for the remembered values in the arguments the upstream is about
// to get and records a match (reason secret_in_motion, and where the value came
// from). It returns the match, or nil.
func (r *run) motionCheck() *motion.Match {
	sc := r.c.Motion
	if sc == nil || sc.Len() == 0 {
		return nil
	}
	m := sc.Find(motion.Strings(r.args))
	if m == nil {
		return nil
	}
	r.rec.r.SecretInMotion = &audit.Motion{SourceEventID: m.EventID, SourceServer: m.Server, SourceTool: m.Tool,
		Rule: m.Rule, Encoding: m.Encoding, CrossServer: m.Server != r.c.Server}
	r.rec.setReason(vocab.ReasonSecretInMotion)
	return m
}

// secretInMotion refuses a call whose arguments carry a remembered value: an isError
// result citing the record of the result that showed it and this call's record.
func (r *run) secretInMotion(m *motion.Match) Reply {
	r.rec.setOutcome(vocab.OutcomeRejected)
	r.rec.escalate(vocab.Block)
	return Reply{Result: errorResult("[mcpgate: call refused (secret_in_motion): its arguments carry a value the result of audit log entry " +
		m.EventID + " showed — see audit log entry " + r.rec.eventID() + "]")}
}

// remember notes the PII and secret values the output rules found in a result the
// caller is shown, and, when the call's arguments named a credential file, every line
// of its text.
func (r *run) remember(result []byte, findings []engine.Finding) {
	sc := r.c.Motion
	if sc == nil {
		return
	}
	src := motion.Source{EventID: r.rec.eventID(), Server: r.c.Server, Tool: r.tool}
	rules, values := motion.Values(result, findings)
	byRule := map[string][][]byte{}
	for i, v := range values {
		byRule[rules[i]] = append(byRule[rules[i]], v)
	}
	for rule, vs := range byRule {
		s := src
		s.Rule = rule
		sc.Remember(s, vs)
	}
	if motion.NamesCredentialFile(motion.Strings(r.args)) {
		s := src
		s.Rule = motion.RuleSensitiveFile
		sc.Remember(s, motion.Lines(result))
	}
}

// rememberShown is remember for every other message the client is shown: the
// response to a client request other than tools/call (resources/read, prompts/get,
// completion/complete, the tasks methods), whose request's params name a credential
// file (a resources/read's uri, a prompt's arguments), and what a server sends unasked
// (a sampling or elicitation request, a notification), which names none. doc is the
// message's result or params, findings the output rules' (pointing into doc). The
// source has no tool unless the message is a task's.
func (r *run) rememberShown(m *methods.Method, params, doc json.RawMessage, findings []engine.Finding) {
	if r.c.Motion == nil || m == nil {
		return
	}
	saved := r.args
	defer func() { r.args = saved }()
	switch {
	case m.Direction != methods.ClientRequest:
		r.args = nil // what a server sends unasked names no file it read
	case len(params) > 0:
		r.args = params
	}
	r.remember(doc, findings)
}

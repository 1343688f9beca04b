package pipeline

import (
	"context"

	"github.com/mcpgate/mcpgate/engine"
	"github.com/mcpgate/mcpgate/internal/vet"
	"github.com/mcpgate/mcpgate/vocab"
)

// Vetted is what the start-up vet found for one server (docs/vet.md#startup): its
// configured name ("" for the command after --), its findings, and whether
// --vet-mode enforce left it out (not started).
type Vetted struct {
	Server   string
	Findings []vet.Finding
	LeftOut  bool
}

// RecordVetted writes the start-up vet record of one server: method mcpgate/vet, the server's
// configured name, the rule ids, count and highest severity of its findings (allowed
// ones too), never a message or a configuration value. A server left out is block
// with reason vet_server_left_out and outcome rejected; one that starts is
// vet_findings, warn when a finding of medium or above is not allowed, else pass. It
// returns the record's event id.
func (p *Pipeline) RecordVetted(v Vetted) string {
	r := p.arriveChannel(context.Background(), Channel{Server: v.Server})
	r.rec.setMethod(vocab.MethodVet)
	rep := engine.Report{}
	for _, f := range v.Findings {
		rep.Findings = append(rep.Findings, engine.Finding{RuleID: f.RuleID, Severity: f.Severity})
		rep.Highest = max(rep.Highest, f.Severity)
		if f.Severity >= engine.SeverityMedium && !f.Allowed {
			r.rec.escalate(vocab.Warn)
		}
	}
	r.rec.setFindings(rep)
	r.rec.setReason(vocab.ReasonVetFindings)
	if v.LeftOut {
		r.rec.setReason(vocab.ReasonVetServerLeftOut)
		r.rec.setOutcome(vocab.OutcomeRejected)
		r.rec.escalate(vocab.Block)
	}
	r.rec.emit(p)
	return r.rec.eventID()
}

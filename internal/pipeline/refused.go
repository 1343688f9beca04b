package pipeline

import (
	"context"

	"github.com/mcpgate/mcpgate/internal/methods"
	"github.com/mcpgate/mcpgate/vocab"
)

// Refused writes the one record of a message refused whole before any stage ran,
// because peers could read it differently (docs/decisions.md#one-reading), and
// returns its event id. c.Method is the message's method, or for a server's response
// the method of the request it answers ("" when ambiguous, and for a method MCP
// does not define, whose name the sender chose); fromServer says which side sent it
// (outcome upstream_error, else rejected). The record names the reason code only:
// the message's members and values stay out of it.
func (p *Pipeline) Refused(c Channel, reason vocab.Reason, fromServer bool) string {
	c.Method = methods.Known(c.Method)
	r := p.arriveChannel(context.Background(), c)
	r.rec.setMethod(c.Method)
	r.rec.setReason(reason)
	r.rec.setOutcome(vocab.OutcomeRejected)
	if fromServer {
		r.rec.setOutcome(vocab.OutcomeUpstreamError)
	}
	r.rec.escalate(vocab.Block)
	r.rec.emit(p)
	return r.rec.eventID()
}

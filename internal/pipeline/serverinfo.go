package pipeline

import (
	"cmp"
	"context"

	"github.com/mcpgate/mcpgate/engine"
	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/methods"
	"github.com/mcpgate/mcpgate/internal/vet"
	"github.com/mcpgate/mcpgate/vocab"
)

// serverInfoChange pins the serverInfo of an upstream's initialize result (or of a
// 2026-07-28 server/discover result, under _meta io.modelcontextprotocol/serverInfo),
// with tool pins on, beside its TLS key ("NAME#identity" serverInfo,
// docs/vet.md#identity), and returns the change when it differs from the pin; nil
// otherwise. With several servers the result is the gateway's own, and nothing is
// pinned here: each server's own initialize answer is checked by ServerInfo.
func (p *Pipeline) serverInfoChange(c Channel, resp *jsonrpc.Message) *vet.ServerInfoChange {
	if p.Pins == nil || c.Method != methods.Initialize && c.Method != methods.ServerDiscover || resp.Error != nil || resp.Refused != "" {
		return nil
	}
	server := cmp.Or(c.Server, p.PinServer)
	if server == "" {
		return nil // several servers: the gateway answers initialize itself
	}
	read := vet.ServerInfoOf
	if c.Method == methods.ServerDiscover {
		read = vet.DiscoveredServerInfo
	}
	now, named := read(resp.Result)
	if !named && c.Method == methods.ServerDiscover {
		return nil // optional there (SHOULD), unlike initialize's: nothing to compare
	}
	ch, err := vet.CheckServerInfo(p.Pins, server, now, named)
	if err != nil {
		p.logger().Warn("serverInfo pin could not be checked", "server", server, "err", err)
	}
	return ch
}

// serverInfoChanged records vet_server_info_changed and logs it. With --pins-mode
// block (strict) refusal is the text of the -32603 that refuses the initialize,
// naming the approval, so the server is not used until `mcpgate pins approve
// 'NAME#identity' serverInfo`; it is "" otherwise, and the result goes its usual
// way, found to be added to its record.
func (r *run) serverInfoChanged(c Channel, info *vet.ServerInfoChange) (refusal string, found engine.Report) {
	server := cmp.Or(c.Server, r.p.PinServer)
	sev := engine.SeverityMedium
	if r.p.PinBlock {
		sev = engine.SeverityHigh
	}
	rep := engine.Report{Findings: []engine.Finding{{RuleID: vet.RuleServerInfoChanged, Severity: sev, Pointer: "/serverInfo"}}, Highest: sev}
	r.p.logger().Warn("vet finding", "rule_id", vet.RuleServerInfoChanged, "severity", sev.String(), "server", server,
		"changed", info.Fields, "approve", "mcpgate pins approve '"+vet.IdentityServer(server)+"' "+vet.ServerInfoTool)
	if !r.p.PinBlock {
		return "", rep
	}
	r.rec.setFindings(rep)
	r.rec.setReason(vocab.ReasonServerInfoChanged)
	r.rec.escalate(vocab.Block)
	r.rec.setOutcome(vocab.OutcomeRejected)
	return "mcpgate: " + info.Message(server) + " (audit log entry " + r.rec.eventID() + ")", rep
}

// ServerInfo checks one server's own initialize answer, as the multiplexer reads it
// before merging the servers' answers into the gateway's (several servers), against
// the server's serverInfo pin under c.Server, as Response does with one server. A
// change gets a record of its own and the `vet finding` log line; refusal is the
// -32603 text naming the approval when --pins-mode block leaves the server out, ""
// when the server is used.
func (p *Pipeline) ServerInfo(ctx context.Context, c Channel, resp *jsonrpc.Message) (refusal string) {
	info := p.serverInfoChange(c, resp)
	if info == nil {
		return ""
	}
	r := p.arriveChannel(ctx, c)
	defer r.rec.emit(p)
	refusal, found := r.serverInfoChanged(c, info)
	if refusal == "" {
		r.rec.setFindings(found)
	}
	return refusal
}

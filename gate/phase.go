package gate

import "github.com/mcpgate/mcpgate/ctxapi"

// phaseSpec is how Run builds ctx in one phase and what it hands back
// (docs/policies.md#phases, docs/channels.md#phases). Every decision that depends on
// the phase reads this table.
type phaseSpec struct {
	// writesParams: ctx.params may change (the arguments in pre, a server request's
	// params, the instructions), and Result.Params is what Run hands back; elsewhere
	// ctx.params is read-only.
	writesParams bool
	// reserved: the phase may run on the runtime the pool keeps for it (pre).
	reserved bool
	// response: the phase runs on a response (call.Response must be set) and
	// ctx.response is defined.
	response bool
	// array is the ctx name of the phase's one array (ctx.response.content,
	// ctx.tools, ...), "" for none; member is the string member each of its elements
	// must have; arrayOf reads it from the call.
	array, member string
	arrayOf       func(*ctxapi.Call) []byte
	// structured: ctx.response.structuredContent sits beside the array (post).
	structured bool
	// hides: an element a policy drops is withheld from the caller by its member
	// (list), so Result.Removed names the policy that dropped it.
	hides bool
	// toClient: a plain-JS edit changes what the client receives, so it is a redaction
	// on the ladder (docs/decisions.md#ladder); in pre it is a rewrite of the call.
	toClient bool
}

func responseContent(c *ctxapi.Call) []byte { return c.Response.Content }

func responseArray(c *ctxapi.Call) []byte { return orEmptyArray(c.Response.Content) }

// phaseSpecs are the phases Run knows.
var phaseSpecs = map[ctxapi.Phase]phaseSpec{
	ctxapi.PhasePre:           {writesParams: true, reserved: true},
	ctxapi.PhasePost:          {response: true, array: "response.content", member: "type", arrayOf: responseContent, structured: true, toClient: true},
	ctxapi.PhaseList:          {array: "tools", member: "name", arrayOf: func(c *ctxapi.Call) []byte { return orEmptyArray(c.Tools) }, toClient: true, hides: true},
	ctxapi.PhaseResource:      {response: true, array: "response.contents", member: "uri", arrayOf: responseArray, toClient: true},
	ctxapi.PhasePrompt:        {response: true, array: "response.messages", member: "role", arrayOf: responseArray, toClient: true},
	ctxapi.PhaseServerRequest: {writesParams: true, toClient: true},
	ctxapi.PhaseInstructions:  {writesParams: true, toClient: true},
	ctxapi.PhaseRoots:         {writesParams: true},
}

// knownPhase reports whether Run knows how to build ctx for phase.
func knownPhase(p ctxapi.Phase) bool { _, ok := phaseSpecs[p]; return ok }

func orEmptyArray(v []byte) []byte {
	if len(v) == 0 || string(v) == "null" {
		return []byte("[]")
	}
	return v
}

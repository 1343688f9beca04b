# The e2e test bed's OPA policy (docs/guardrails.md#authorization-request): a
# tools/call by a known user is allowed unless its arguments carry "force".
package mcpgate

default allow := false

allow if {
	input.action.name == "tools/call"
	input.subject.id != ""
	input.resource.type == "tool"
	not input.context.arguments.force
}

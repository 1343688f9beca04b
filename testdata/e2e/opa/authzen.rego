# OPA's AuthZEN-compatible route for the e2e test bed (docs/guardrails.md#testing):
# OPA's simple API (POST / with the request body as the input) answers the default
# decision, data.system.main, as it is. An AuthZEN 1.0 evaluation request is that
# body, and this document is the evaluation's answer, {"decision": true|false}, so
# a guardrail of kind "authzen" with the url http://127.0.0.1:8281/ talks to OPA
# as it would to an AuthZEN PDP. The decision is the mcpgate package's allow.
package system

main := {"decision": data.mcpgate.allow}

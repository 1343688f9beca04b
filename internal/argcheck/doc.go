// Package argcheck judges a tools/call's (or a prompts/get's) arguments against what
// the server itself declared, before the call goes upstream (docs/engine.md#argument-checks):
//
//   - the schema: the arguments are validated against the inputSchema of the listing
//     the gateway saw (JSON Schema 2020-12 by default, draft-07 and the others by
//     their $schema), with github.com/santhosh-tekuri/jsonschema/v6: types, required,
//     enum/const, bounds, lengths, pattern, the cheap formats, additionalProperties.
//     An argument the schema's properties do not declare, where additionalProperties
//     is left unset, is argument_undeclared. A prompt's declared arguments are a
//     schema of string properties with their required flags.
//   - shell and path arguments: a string that reaches a shell or a file system
//     (the schema's format, the property's name or description say command, path,
//     file, directory, URL, host or query, or the value is shaped as a path) is read
//     for command chaining and substitution, redirections, ".." that climbs above its
//     start, absolute, "~", UNC and URL forms, and paths outside the roots.
//   - templates: {{…}}, ${…} and <%…%> in an argument the schema types as plain text.
//
// A Tool is compiled once per listing (NewTool, NewPrompt; compilation waits for the
// first call) and is safe for concurrent use. Check returns Findings that name a rule,
// the JSON pointer of the member (RFC 6901) and the schema keyword, never a value;
// Refuse marks what the strict profile refuses. The pipeline calls Check from one
// place and decides (internal/pipeline).
package argcheck

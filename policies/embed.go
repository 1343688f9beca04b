// Package policies ships mcpgate's default gate policies (top-level *.js, loaded in
// lexical order) and, under examples/, the classic examples and the extension
// examples (never loaded; copy one up a level to use it). See docs/policies.md.
package policies

import "embed"

// FS holds the shipped policies (*.js) and the examples (examples/*.js), so the demo
// can write them out and run the shipped set.
//
//go:embed *.js examples/*.js
var FS embed.FS

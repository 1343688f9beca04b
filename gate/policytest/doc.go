// Package policytest is `mcpgate test`'s runner (docs/policies.md#tests): Compile turns a
// *_test.js into its test_* functions, Run runs one of them in a fresh runtime of a loaded
// gate.Gate under the policies' sandbox and limits, with mcpgate.assert, assertEqual and
// the caller's Host functions, and classifies what it raised as pass, fail or error.
package policytest

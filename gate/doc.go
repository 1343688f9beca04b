// Package gate runs mcpgate's JavaScript policies before (pre) and after (post) every
// tools/call, as docs/decisions.md#policies says: every top-level *.js of the policies
// directory runs in lexical file order, sees one global ctx (package ctxapi), may
// rewrite ctx.params (pre) or ctx.response.content / structuredContent (post), and
// rejects the call by throwing. Subdirectories (policies/examples/) are never loaded.
//
// # Compile once, run on pooled runtimes
//
// Load and Reload compile each file once per policy-set generation into a shared
// *goja.Program, wrapped in its own function scope on the file's first line so line
// numbers stay right and two policies' top-level names never collide; ctx is a const
// of an outer wrapper, and a file whose body would close the wrapper early is refused
// as a syntax error (the parsed body must span the whole file). Calls run on a
// pool of locked-down runtimes (Options.PoolSize, GOMAXPROCS by default, plus one kept
// for pre phases; docs/policies.md#runtime-pool). A runtime
// that was interrupted, panicked or tripped a guard is thrown away.
//
// # Phases
//
// Load decides from each file's source which phases it acts in (internal/policyast;
// docs/policies.md#phases): pre and post unless its top-level code provably returns
// there before doing anything, another phase only when it compares ctx.phase with that
// name. Run skips a file in a phase it does not act in; Set.Acts tells a caller whether
// any file acts in a phase.
//
// # Isolation
//
// Every intrinsic reachable from globalThis is frozen, functions, accessors and
// prototypes included, and globalThis is non-extensible, so nothing one call writes
// (Object.prototype.x, a global) is seen by another. ctx is one frozen object per
// runtime built from one name-to-function table (binding.go); every function behind it is
// frozen, and the self-test at Load proves it for each. Sloppy implicit globals are
// declared as the policy's own locals at compile time. Values are materialised lazily
// with JSON.parse inside the runtime (push, splice and delete behave as JavaScript),
// read back once in Go after each policy with JSON.stringify's semantics (internal/jsvalue:
// every getter, toJSON and Proxy trap runs once; the next policy parses the text
// again), checked on that text (bad_ctx_shape) and tracked for changes (slots.go). A
// policy proven at load time to only read ctx.params (internal/policyast) hands its parse to
// the next policy and is not read back. Each policy's wrapper is bound once per runtime;
// a call invokes the policy function with a fresh scope. ctx
// and ctx.response are proxies whose delete trap turns a delete into an assignment (or
// a recorded bad shape), and ctx.response = {content, structuredContent} replaces both.
// The redaction helpers take JSON-like values only and raise a TypeError otherwise,
// without running a getter. There is no eval, no Function constructor by any path, no
// BigInt, no require, network, file system, process, timers or (unless
// Options.Console) console.
//
// # Runaways
//
// Each policy has Options.Timeout (5 s), enforced by the pool's watchdog goroutine,
// which ticks every millisecond while policies run. JS loops and recursion are interrupted
// (policy_timeout, policy_stack_limit); backtracking regexps get
// regexp2.DefaultMatchTimeout. Growth is bounded before the native step (internal/policyast,
// internal/sandbox; docs/policies.md#growth-limits): `+`, `+=`, template literals and spreads
// are compiled into guarded calls, and the built-ins that amplify memory or recurse
// natively are wrapped (policy_memory_limit, policy_stack_limit). A heap watchdog
// sampling every millisecond while policies run interrupts every policy once the live
// heap passes Options.HeapSoftLimit, and, when Options.PolicyHeapBudget is set, a
// policy whose heap growth passes that budget. Thrown values, and the reasons of
// promises still rejected without a handler when a policy ends (policy_throw), are
// described without running their toString and quoted so they cannot forge a notice
// (text.go). Every policy error rejects the call (fail closed); the thrown message goes
// to the client only and is never logged.
//
// # Layout
//
// The internal packages import in one direction (lines → sandbox; none imports gate
// or policytest) and each owns one part: gate/internal/policyast source → program and
// the facts proven at load (phases, the read-only proof, implicit globals, the growth
// rewrite; pure); gate/internal/jsvalue the JSON ⇄ JS bridge (JSON.parse and
// JSON.stringify in Go); gate/internal/sandbox a runtime's construction and self-test,
// the lockdown (lockdown.js), the Go guards of replace and the RegExp symbol methods,
// the bounds, the bounded host half of JSON.parse, the regexp2 timeout and the one
// file that knows goja's string types; gate/internal/lines ctx.removeLines's line
// filter; gate/internal/testrt the interface of the runtime gate lends gate/policytest
// (`mcpgate test`'s runner) through (*Gate).TestRuntime. gate keeps the life cycle (gate.go), the
// pool and its watchdog (pool.go, watchdog.go), a runtime with its ctx and the ctx
// self-test (runtime.go, selftest.go), Run and its slots (run.go, slots.go, phase.go),
// the ctx surface (binding.go, helpers.go, text.go) and the runtime it lends the test
// runner (testrt.go).
//
// See docs/policies.md for the policy author's guide.
package gate

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
// pool of locked-down runtimes (Options.PoolSize, GOMAXPROCS by default). A runtime
// that was interrupted, panicked or tripped a guard is thrown away.
//
// # Isolation
//
// Every intrinsic reachable from globalThis is frozen and globalThis is non-extensible,
// so nothing one call writes (Object.prototype.x, a global) is seen by another. Sloppy
// implicit globals (`for (i = 0; ...)`) are declared as the policy's own locals at
// compile time. ctx is one non-extensible object per runtime whose fields are
// accessors over the current call; values are materialised lazily with JSON.parse
// inside the runtime, so push, splice and delete behave as JavaScript, and read back
// with JSON.stringify after each policy, validated (bad_ctx_shape) and compared by JSON
// equality. ctx and ctx.response are proxies whose delete trap turns a delete into an
// assignment (or a recorded bad shape), and ctx.response = {content,
// structuredContent} replaces both, so no change to ctx is ignored silently. There is no eval, no Function constructor by any path, no require,
// network, file system, process, timers or (unless Options.Console) console; a
// self-test at Load proves it.
//
// # Runaways
//
// Each policy has Options.Timeout (5 s). JS loops and recursion are interrupted
// (policy_timeout, policy_stack_limit); backtracking regexps get
// regexp2.DefaultMatchTimeout; the built-ins that amplify memory or recurse natively
// (repeat, padStart/padEnd, Array(n), Array.from, every Array.prototype method, join,
// split, flat, apply, typed arrays, ArrayBuffer, JSON.parse/stringify) are guarded
// (policy_memory_limit, policy_stack_limit), and a heap watchdog sampling every
// millisecond while policies run interrupts every policy once the heap passes
// Options.HeapSoftLimit, and, when Options.PolicyHeapBudget is set, a policy whose
// heap growth passes that budget (which stops `s = s + s` early). Thrown values, and the reasons of promises
// still rejected without a handler when a policy ends (policy_throw), are described
// without running their toString. Every policy error rejects the call (fail closed); the thrown message
// goes to the client only and is never logged.
//
// See docs/policies.md for the policy author's guide.
package gate

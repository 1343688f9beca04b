// Package testrt is the interface of the runtime package gate lends the policy test
// runner (gate/policytest) through (*gate.Gate).TestRuntime: the sandbox, the limits
// and the watchdog a policy has, without making any of them public.
package testrt

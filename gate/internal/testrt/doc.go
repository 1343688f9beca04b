// Package testrt is the one hook by which package gate lends the policy test runner
// (gate/policytest) a fresh runtime of a Gate: the sandbox, the limits and the watchdog
// a policy has, without making any of them public.
package testrt

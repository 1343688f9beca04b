//go:build race

package policytest

// raceSlowdown stretches deadlines in tests: JS runs about ten times slower under -race.
const raceSlowdown = 5

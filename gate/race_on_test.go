//go:build race

package gate

// raceSlowdown stretches deadlines in tests: JS runs about ten times slower under -race.
const raceSlowdown = 5

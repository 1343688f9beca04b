//go:build !race

package gate

const raceSlowdown = 1

//go:build !race

package policytest

const raceSlowdown = 1

//go:build !race

// Without the race detector timing is as built (see race_test.go).
package snowid_test

const raceSlowdown = 1

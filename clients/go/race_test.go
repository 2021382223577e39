//go:build race

// Under the race detector code runs several times slower: the acceptance
// test waits longer for a refill before it counts a call as failed.
package snowid_test

const raceSlowdown = 10

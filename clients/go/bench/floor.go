// The floor of (b): the fastest Snowflake generator this benchmark could
// write in Go, in process. One atomic word holds (timestamp ms << 16 |
// sequence); each ID is one monotonic clock read and one compare-and-swap.
// Layout as the benchmark's node: 41 timestamp bits, 6 worker bits, 16
// sequence bits, Twitter's epoch. Uniqueness: each (ms, sequence) pair is
// the result of exactly one successful compare-and-swap.
package main

import (
	"sync/atomic"
	"time"
)

const (
	floorSequenceBits = 16
	floorWorkerBits   = 6
	floorSequenceMask = 1<<floorSequenceBits - 1
	floorWorker       = 1
	twitterEpochMs    = 1288834974657
)

type floorGenerator struct {
	_     [64]byte
	state atomic.Int64 // (ms since the epoch) << floorSequenceBits | sequence
	_     [56]byte
	base  time.Time // wall time with a monotonic reading: ms = base + time.Since(base)
}

func newFloorGenerator() *floorGenerator { return &floorGenerator{base: time.Now()} }

func (g *floorGenerator) next() int64 {
	baseMs := g.base.UnixMilli() - twitterEpochMs
	for {
		now := baseMs + time.Since(g.base).Milliseconds()
		old := g.state.Load()
		next := old + 1 // the same ms (or the clock is behind): the next sequence
		if now > old>>floorSequenceBits {
			next = now << floorSequenceBits
		} else if old&floorSequenceMask == floorSequenceMask {
			continue // this ms is used up: wait for the next
		}
		if g.state.CompareAndSwap(old, next) {
			return next>>floorSequenceBits<<(floorWorkerBits+floorSequenceBits) |
				floorWorker<<floorSequenceBits | next&floorSequenceMask
		}
	}
}

// floor: g goroutines share one generator; ns per ID per goroutine.
func floor(g, ids int) cost {
	generator := newFloorGenerator()
	var sink atomic.Int64
	return perGoroutine(g, ids*9/10, func(n int) {
		var last int64
		for i := 0; i < n; i++ {
			last = generator.next()
		}
		sink.Add(last)
	})
}

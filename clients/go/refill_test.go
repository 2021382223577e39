// The refill goroutine's backoff on its own: doubled per failure up to
// BackoffMax, each wait drawn between half and all of it.
package snowid

import (
	"math/rand"
	"testing"
	"time"
)

func TestBackoffDoublesAndEachWaitIsDrawnBetweenHalfAndAllOfIt(t *testing.T) {
	c := &Client{options: DefaultOptions(), random: rand.New(rand.NewSource(1)),
		nodes: make([]node, 1)}
	now := time.Now()
	n := &c.nodes[0]
	want := c.options.BackoffInitial
	for failure := 0; failure < 10; failure++ {
		c.backOff(0, now)
		if n.backoff != want {
			t.Fatalf("failure %d: backoff %v, want %v", failure, n.backoff, want)
		}
		if wait := n.retryAt.Sub(now); wait < want/2 || wait > want {
			t.Fatalf("failure %d: wait %v, not in [%v, %v]", failure, wait, want/2, want)
		}
		if want *= 2; want > c.options.BackoffMax {
			want = c.options.BackoffMax
		}
	}
	// Clients that failed together come back apart: 100 draws of one
	// backoff spread over its upper half.
	seen := map[time.Duration]bool{}
	lowest, highest := n.backoff, time.Duration(0)
	for i := 0; i < 100; i++ {
		n.backoff = c.options.BackoffMax / 2 // doubled to BackoffMax by backOff
		c.backOff(0, now)
		wait := n.retryAt.Sub(now)
		seen[wait] = true
		if wait < lowest {
			lowest = wait
		}
		if wait > highest {
			highest = wait
		}
	}
	max := c.options.BackoffMax
	if len(seen) < 90 || lowest > max*6/10 || highest < max*9/10 {
		t.Fatalf("100 draws: %d distinct, from %v to %v; want spread over [%v, %v]",
			len(seen), lowest, highest, max/2, max)
	}
}

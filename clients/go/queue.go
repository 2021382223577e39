// idQueue: the buffer behind one Client buffer (Snowflake IDs, or one
// segment tag's numbers). One producer (the client's refill goroutine) and
// any number of consumers (callers of Next, NextN, NextTag).
//
// The queue is a singly linked list of chunks, one per fetched batch. A
// chunk's IDs, expiry and trigger never change after it is linked; only its
// claim counter `pos` moves.
//
// Invariants (an ID is handed out at most once):
//   - A consumer claims index i of a chunk only by pos.Add, which returns
//     each value to one caller only, so each index, and the ID at it, goes
//     to exactly one consumer. Indices at or past len(ids) claim nothing.
//   - The producer links a chunk (next.Store) only after filling it, and
//     the atomic store publishes its fields to every consumer that loads it.
//   - A consumer claims from a chunk only while it has not expired at the
//     consumer's clock reading, so an ID is never handed out after its
//     chunk's expiry.
//   - head only moves forward, from a chunk to its next (compare-and-swap),
//     and only once that chunk is used up or expired.
//
// take has no lock, no allocation and no system call but the clock read
// its caller makes.
package snowid

import (
	"math"
	"sync/atomic"
)

// neverExpires: the expiry of segment numbers.
const neverExpires = math.MaxInt64

type chunk struct {
	ids     []int64
	expires int64 // monotonic ns (monoNow) from which the IDs are stale
	trigger int64 // the index whose claim leaves the buffer below its low-water mark
	next    atomic.Pointer[chunk]
	// pos is written by every take: its own cache line keeps the fields
	// above, which every take reads, from bouncing between cores with it.
	_   [64]byte
	pos atomic.Int64
	_   [56]byte
}

type idQueue struct {
	head atomic.Pointer[chunk] // consumers take from here
	tail *chunk                // producer only
}

func newIDQueue() *idQueue {
	q := &idQueue{tail: &chunk{expires: neverExpires, trigger: -1}}
	q.head.Store(q.tail)
	return q
}

// take claims the oldest ID not expired at `now`. ok is false if none is
// left; wake is true if this claim crossed the low-water mark.
func (q *idQueue) take(now int64) (id int64, ok, wake bool) {
	for {
		c := q.head.Load()
		if c.expires > now {
			i := c.pos.Add(1) - 1
			if i < int64(len(c.ids)) {
				return c.ids[i], true, i == c.trigger
			}
		}
		next := c.next.Load()
		if next == nil {
			return 0, false, false
		}
		q.head.CompareAndSwap(c, next)
	}
}

// takeInto claims up to len(out) IDs not expired at `now`, oldest first,
// into out; it returns how many and whether a claim crossed the low-water mark.
func (q *idQueue) takeInto(out []int64, now int64) (n int, wake bool) {
	for n < len(out) {
		c := q.head.Load()
		if c.expires > now {
			want := int64(len(out) - n)
			end := c.pos.Add(want)
			start := end - want
			if size := int64(len(c.ids)); start < size {
				if end > size {
					end = size
				}
				n += copy(out[n:], c.ids[start:end])
				wake = wake || (start <= c.trigger && c.trigger < end)
				continue
			}
		}
		next := c.next.Load()
		if next == nil {
			return n, wake
		}
		q.head.CompareAndSwap(c, next)
	}
	return n, wake
}

// Producer side ---------------------------------------------------------

// put links a batch; the claim that leaves fewer than `low` IDs in the
// queue will report wake.
func (q *idQueue) put(ids []int64, expires int64, low int) {
	trigger := int64(len(ids) - low)
	if trigger < 0 {
		trigger = 0
	}
	c := &chunk{ids: ids, expires: expires, trigger: trigger}
	q.tail.next.Store(c)
	q.tail = c
}

// size counts the IDs not claimed and not expired at `now`.
func (q *idQueue) size(now int64) int {
	total := 0
	for c := q.head.Load(); c != nil; c = c.next.Load() {
		if left := int64(len(c.ids)) - c.pos.Load(); left > 0 && c.expires > now {
			total += int(left)
		}
	}
	return total
}

// dropExpired moves head past used-up or expired chunks (the last one
// stays: head is never nil), so that a consumer does not walk through them.
func (q *idQueue) dropExpired(now int64) {
	for {
		c := q.head.Load()
		next := c.next.Load()
		if next == nil {
			return
		}
		if c.expires > now && c.pos.Load() < int64(len(c.ids)) {
			return
		}
		q.head.CompareAndSwap(c, next)
	}
}

// oldestExpiry returns the expiry of the oldest chunk with IDs left that
// has not expired at `now`, if any.
func (q *idQueue) oldestExpiry(now int64) (int64, bool) {
	for c := q.head.Load(); c != nil; c = c.next.Load() {
		if c.pos.Load() < int64(len(c.ids)) && c.expires > now {
			return c.expires, true
		}
	}
	return 0, false
}

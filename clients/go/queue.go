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
//   - The producer closes a chunk that is used up or expired (account) by
//     adding `closed` to its pos in one atomic step: the value before tells
//     exactly how many of its IDs were claimed (served), the rest expired,
//     and no claim after that step gets an index below len(ids).
//
// take has no lock, no allocation and no system call but the clock read
// its caller makes; the counts of served and expired IDs are read from the
// chunks' claim counters, not kept by the takers.
package snowid

import (
	"math"
	"sync"
	"sync/atomic"
)

// neverExpires: the expiry of segment numbers.
const neverExpires = math.MaxInt64

// closed: what account adds to a chunk's pos; far above any len(ids) plus
// the claims that may still come.
const closed = int64(1) << 62

type chunk struct {
	ids     []int64
	expires int64 // monotonic ns (monoNow) from which the IDs are stale
	trigger int64 // the index whose claim leaves the buffer below its low-water mark
	deep    int64 // the index whose claim leaves it below half of that
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

	countsMu sync.Mutex // guards the three below (account and counts)
	counted  *chunk     // the last chunk closed; those after it are open
	served   int64      // IDs claimed from closed chunks
	expired  int64      // IDs of closed chunks that expired unclaimed
}

func newIDQueue() *idQueue {
	q := &idQueue{tail: &chunk{expires: neverExpires, trigger: -1, deep: -1}}
	q.head.Store(q.tail)
	q.counted = q.tail
	return q
}

// take claims the oldest ID not expired at `now`. ok is false if none is
// left; wake is true if this claim crossed the low-water mark or half of it.
func (q *idQueue) take(now int64) (id int64, ok, wake bool) {
	for {
		c := q.head.Load()
		if c.expires > now {
			i := c.pos.Add(1) - 1
			if i < int64(len(c.ids)) {
				return c.ids[i], true, i == c.trigger || i == c.deep
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
				wake = wake || (start <= c.trigger && c.trigger < end) ||
					(start <= c.deep && c.deep < end)
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

// put links a batch; the claims that leave fewer than `low` IDs, and fewer
// than low/2, in the chunk will report wake.
func (q *idQueue) put(ids []int64, expires int64, low int) {
	at := func(left int) int64 {
		if left > len(ids) {
			return 0
		}
		return int64(len(ids) - left)
	}
	c := &chunk{ids: ids, expires: expires, trigger: at(low), deep: at(low / 2)}
	if low/2 == 0 {
		c.deep = -1
	}
	q.tail.next.Store(c)
	q.tail = c
}

// account closes, oldest first, the chunks that are used up or expired at
// `now`, adding their claimed IDs to served and the rest to expired.
func (q *idQueue) account(now int64) {
	q.countsMu.Lock()
	defer q.countsMu.Unlock()
	for c := q.counted.next.Load(); c != nil; c = c.next.Load() {
		size := int64(len(c.ids))
		if c.pos.Load() < size && c.expires > now {
			return
		}
		claimed := c.pos.Add(closed) - closed
		if claimed > size {
			claimed = size
		}
		q.served += claimed
		q.expired += size - claimed
		q.counted = c
	}
}

// counts returns the IDs handed out and the IDs expired unclaimed so far.
func (q *idQueue) counts() (served, expired int64) {
	q.countsMu.Lock()
	defer q.countsMu.Unlock()
	served, expired = q.served, q.expired
	for c := q.counted.next.Load(); c != nil; c = c.next.Load() {
		claimed := c.pos.Load()
		if size := int64(len(c.ids)); claimed > size {
			claimed = size
		}
		served += claimed
	}
	return served, expired
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

// oldestExpiry returns the earliest expiry of the chunks with IDs left that
// have not expired at `now`, if any. (Batches fetched at once from several
// nodes may land out of the order their calls began in.)
func (q *idQueue) oldestExpiry(now int64) (int64, bool) {
	earliest, found := int64(neverExpires), false
	for c := q.head.Load(); c != nil; c = c.next.Load() {
		if c.pos.Load() < int64(len(c.ids)) && c.expires > now && c.expires <= earliest {
			earliest, found = c.expires, true
		}
	}
	return earliest, found
}

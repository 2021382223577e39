// The refill goroutine: keeps every buffer above its low-water mark, adapts
// the batch size to the rate, fails over between endpoints with backoff and
// drops expired IDs.
//
// One goroutine refills all buffers. It looks at them when a claim crosses
// a low-water mark or a caller waits (Client.wake), when the oldest buffered
// ID expires, when a backoff ends, and at least every RefillPeriod. It asks
// the endpoint that answered last first, skipping those backing off; a node
// failure (no answer, timeout, 5xx, or an invalid answer: a batch that
// batch.go does not let the client take, counted in Stats.InvalidAnswers)
// backs that endpoint off and asks the next at once; a refusal (4xx) is this
// client's problem: waiting callers get it at once and the buffer is not
// asked for again before BackoffMax.
//
// Thread-safety: the fields marked "refill goroutine only" are touched by
// it alone; a buffer's err and refused are guarded by Client.mu.
package snowid

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// buffer: Snowflake IDs (tag empty) or one segment tag's numbers.
type buffer struct {
	queue *idQueue
	tag   string

	// Refill goroutine only.
	batch        int
	batchCap     int       // the node's max_batch once a node refused a larger count
	lastRefill   time.Time // zero: none yet
	refusedUntil time.Time // no refill before this after a refusal

	// Guarded by Client.mu: why the last refill failed, cleared by a
	// success; refused: the nodes refuse this request (no point waiting).
	err     *Error
	refused bool
}

func newBuffer(tag string, firstBatch int) *buffer {
	return &buffer{queue: newIDQueue(), tag: tag, batch: firstBatch, batchCap: maxBatchLimit}
}

func (b *buffer) what() string {
	if b.tag == "" {
		return "ID"
	}
	return "number of tag " + strconv.Quote(b.tag)
}

// node: one endpoint, its backoff and the order of its batches. Refill
// goroutine only.
type node struct {
	base    string
	retryAt time.Time
	backoff time.Duration
	order   batchOrder
}

// A wake-up just after an expiry, so that the expired chunk is seen as such.
const expiryMargin = time.Millisecond

func (c *Client) refillLoop() {
	defer close(c.done)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		wakeAt := time.Now().Add(c.options.RefillPeriod)
		for _, b := range c.buffers() {
			b.queue.dropExpired(monoNow())
			c.refill(b, &wakeAt)
			if expiry, ok := b.queue.oldestExpiry(monoNow()); ok && expiry != neverExpires {
				wakeAt = earliest(wakeAt, monoTime(expiry).Add(expiryMargin))
			}
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(time.Until(wakeAt))
		select {
		case <-c.stop:
			return
		case <-c.wake:
		case <-timer.C:
		}
	}
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func (c *Client) buffers() []*buffer {
	c.tagsMu.RLock()
	defer c.tagsMu.RUnlock()
	all := make([]*buffer, 0, 1+len(c.tags))
	all = append(all, c.snowflake)
	for _, b := range c.tags {
		all = append(all, b)
	}
	return all
}

func (c *Client) lowMark(b *buffer) int {
	low := int(c.options.LowWater * float64(b.batch))
	if low < 1 {
		return 1
	}
	return low
}

// refill fetches batches until the buffer is at or above its low-water
// mark, the endpoints all failed or the nodes refuse; wakeAt is brought
// forward to when a backoff or refusal ends.
func (c *Client) refill(b *buffer, wakeAt *time.Time) {
	for b.queue.size(monoNow()) < c.lowMark(b) {
		if c.closed.Load() {
			return
		}
		if now := time.Now(); now.Before(b.refusedUntil) {
			*wakeAt = earliest(*wakeAt, b.refusedUntil)
			return
		}
		if !c.fetch(b, wakeAt) {
			return
		}
	}
}

// fetch gets one batch from the first endpoint that answers, starting from
// the current one and skipping those backing off; false if none did. A
// refusal is this request's, not the node's: the next endpoint is asked but
// the refusing one keeps its place.
func (c *Client) fetch(b *buffer, wakeAt *time.Time) bool {
	first := c.current
	for i := range c.nodes {
		index := (first + i) % len(c.nodes)
		n := &c.nodes[index]
		started := time.Now()
		if n.retryAt.After(started) {
			continue
		}
		expires := int64(neverExpires)
		if b.tag == "" {
			expires = monoNow() + int64(c.options.MaxAge)
		}
		count := b.batch
		got, err := c.transport.fetchIDs(n.base, b.tag, count)
		if c.closed.Load() {
			return false
		}
		if err == nil {
			if last, above := n.order.advance(b.tag, got.issuer, got.ids); !above {
				err = c.transport.failed(notAbove(n.base, b, got, last))
			}
		}
		if err == nil {
			n.backoff = 0
			c.current = index
			c.put(b, got.ids, expires, started)
			return true
		}
		if err.failure == failAnswer {
			c.invalidAnswers.Add(1)
		}
		if err.failure == failRefused && c.tooLarge(n, b, err, count) {
			return true // ask again, for less
		}
		c.recordError(b, err.err, err.failure == failRefused)
		if err.failure == failRefused {
			b.refusedUntil = started.Add(c.options.BackoffMax)
			continue
		}
		c.backOff(n, started)
		if c.current == index {
			c.current = (index + 1) % len(c.nodes)
		}
	}
	// Nobody answered: wake when the first backoff ends.
	for _, n := range c.nodes {
		if n.retryAt.After(time.Now()) {
			*wakeAt = earliest(*wakeAt, n.retryAt)
		}
	}
	return false
}

// notAbove: the invalid answer of a batch that does not start above the last
// one of its issuer (batchOrder).
func notAbove(base string, b *buffer, got batch, last int64) *callError {
	what := "a batch"
	if b.tag != "" {
		what += " of tag " + strconv.Quote(b.tag)
	}
	issuer := "no issuer"
	if got.issuer != "" {
		issuer = "issuer " + strconv.Quote(got.issuer)
	}
	return invalidAnswer(fmt.Sprintf("%s: %s from %s starts at %d, not above the last one's %d",
		base, what, issuer, got.ids[0], last))
}

func (c *Client) backOff(n *node, now time.Time) {
	if n.backoff == 0 {
		n.backoff = c.options.BackoffInitial
	} else if n.backoff *= 2; n.backoff > c.options.BackoffMax {
		n.backoff = c.options.BackoffMax
	}
	n.retryAt = now.Add(n.backoff)
}

// tooLarge: whether a 400 answered a count above the node's max_batch (read
// from its /v1/info); if so the batch is capped there for good.
func (c *Client) tooLarge(n *node, b *buffer, err *callError, count int) bool {
	if err.status != http.StatusBadRequest || count <= 1 {
		return false
	}
	info, infoErr := c.transport.fetchInfo(n.base)
	if infoErr != nil || info.MaxBatch < 1 || info.MaxBatch >= count {
		return false
	}
	b.batchCap = info.MaxBatch
	if b.batch > b.batchCap {
		b.batch = b.batchCap
	}
	return true
}

// put links a fetched batch, adapts the batch size to the rate of refills
// and tells waiting callers.
func (c *Client) put(b *buffer, ids []int64, expires int64, started time.Time) {
	if !b.lastRefill.IsZero() {
		since := started.Sub(b.lastRefill)
		if since < c.options.RefillPeriod/2 {
			b.batch = minInt(b.batch*2, minInt(c.options.MaxBatch, b.batchCap))
		} else if since > 2*c.options.RefillPeriod {
			b.batch = minInt(maxInt(b.batch/2, c.options.InitialBatch), b.batchCap)
		}
	}
	b.lastRefill = started
	b.refusedUntil = time.Time{}
	b.queue.put(ids, expires, c.lowMark(b))
	c.fetched.Add(int64(len(ids)))
	c.mu.Lock()
	b.err, b.refused = nil, false
	c.newsLocked()
	c.mu.Unlock()
}

func (c *Client) recordError(b *buffer, err *Error, refused bool) {
	c.mu.Lock()
	b.err, b.refused = err, refused
	c.newsLocked()
	c.mu.Unlock()
}

func minInt(a, b int) int {
	if a < b {
		return a
	}
	return b
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

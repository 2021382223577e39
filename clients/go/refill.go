// The refill goroutine: keeps every buffer above its low-water mark, adapts
// the batch size to the rate, spreads refills over the endpoints, fails
// over with backoff and jitter, and closes used-up or expired chunks (their
// counts are the stats of served and expired IDs).
//
// One goroutine owns every buffer's refill state and every endpoint's
// health; the calls themselves run in goroutines of their own and hand
// their results back (Client.results), so that refills go to several nodes
// at once. It looks at the buffers when a claim crosses a low-water mark
// (or half of it) or a caller waits (Client.wake), when a call ends, when
// the oldest buffered ID expires, when a backoff ends, and at least every
// RefillPeriod.
//
// Spread: each call goes to an endpoint drawn at random among the healthy
// ones that have no call under way for that buffer, so a fleet of clients
// given the same list loads every node alike. A buffer below its low-water
// mark gets one call; while one is under way and the buffer drains below
// half the mark, a second to another endpoint, and so on below each
// further half (an empty buffer that a caller waits on: every healthy
// endpoint), so a buffer that drains faster than one node refills it is
// refilled by several. Before its first batch a buffer gets a second call
// only once a caller waits, so that opening a client is one call. At most
// one call per endpoint and buffer is under way, so that each endpoint's
// batches are checked in the order it issued them (batchOrder).
//
// Failures: a node failure (no answer, timeout, 5xx, or an invalid answer:
// a batch that batch.go does not let the client take, counted in
// Stats.InvalidAnswers) backs that endpoint off, BackoffInitial doubled per
// failure up to BackoffMax, each wait drawn between half and all of it; the
// refill goes to another healthy endpoint at once. A refusal (4xx) is this
// client's request's: that endpoint is not asked for that buffer again
// before BackoffMax, and once every endpoint refuses, waiting callers get
// the refusal at once. A 400 naming format=binary (a node from before it)
// makes that endpoint's calls JSON for good; a 400 to a count above the
// node's max_batch (its /v1/info) caps the batch there.
//
// Thread-safety: the fields marked "refill goroutine only" are touched by
// it alone; a buffer's err and refused are guarded by Client.mu; the
// endpoints' health (retryAt, backoff) and the random draws by
// Client.healthMu, as business calls (business.go) share them.
package snowid

import (
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// buffer: Snowflake IDs (tag empty) or one segment tag's numbers.
type buffer struct {
	queue    *idQueue
	tag      string
	received atomic.Bool  // a batch has arrived: StartWait no longer applies
	waiting  atomic.Int32 // callers waiting on it (Client.waitAndTake)

	// Refill goroutine only.
	batch        int
	batchCap     int         // the node's max_batch once a node refused a larger count
	lastRefill   time.Time   // when the latest call that brought a batch began
	calling      []bool      // per endpoint: a call for this buffer is under way
	calls        int         // how many are
	refusedUntil []time.Time // per endpoint: no call for this buffer before this

	// Guarded by Client.mu: why the last refill failed, cleared by a
	// success; refused: every node refuses this request (no point waiting).
	err     *Error
	refused bool
}

func newBuffer(tag string, firstBatch, endpoints int) *buffer {
	return &buffer{queue: newIDQueue(), tag: tag, batch: firstBatch, batchCap: maxBatchLimit,
		calling: make([]bool, endpoints), refusedUntil: make([]time.Time, endpoints)}
}

func (b *buffer) what() string {
	if b.tag == "" {
		return "ID"
	}
	return "number of tag " + strconv.Quote(b.tag)
}

// node: one endpoint, its health and the order of its batches. Refill
// goroutine only, but retryAt and backoff, which business calls
// (business.go) read and set too: guarded by Client.healthMu.
type node struct {
	base    string
	retryAt time.Time
	backoff time.Duration
	order   batchOrder
	json    bool // it refused format=binary: asked in JSON
}

// result: what a call for a batch brought back to the refill goroutine.
type result struct {
	b        *buffer
	endpoint int
	started  time.Time
	expires  int64
	got      batch
	err      *callError
	json     bool // the node refused format=binary; the call was made again in JSON
	maxBatch int  // the node's max_batch when it refused a count above it; else 0
}

// A wake-up just after an expiry, so that the expired chunk is seen as such.
const expiryMargin = time.Millisecond

func (c *Client) refillLoop() {
	defer close(c.done)
	defer c.running.Wait() // the calls under way, ended by Close's cancel
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		now := monoNow()
		wakeAt := time.Now().Add(c.options.RefillPeriod)
		for _, b := range c.buffers() {
			b.queue.dropExpired(now)
			b.queue.account(now)
			c.refill(b, &wakeAt)
			if expiry, ok := b.queue.oldestExpiry(now); ok && expiry != neverExpires {
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
		case r := <-c.results:
			c.finish(r)
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

// refill starts calls for b while it needs them (see the top of the file)
// and an endpoint can take one; wakeAt is brought forward to when a
// backoff or refusal ends.
func (c *Client) refill(b *buffer, wakeAt *time.Time) {
	for !c.closed.Load() && b.calls < len(c.nodes) {
		if b.calls > 0 && !b.received.Load() && b.waiting.Load() == 0 {
			return
		}
		mark := c.lowMark(b) >> b.calls
		if mark < 1 {
			mark = 1
		}
		if b.queue.size(monoNow()) >= mark {
			return
		}
		endpoint, ok := c.pickEndpoint(b, wakeAt)
		if !ok {
			return
		}
		c.call(b, endpoint)
	}
}

// pickEndpoint draws one endpoint among those that are healthy, have no
// call under way for b and do not refuse it; false if there is none.
func (c *Client) pickEndpoint(b *buffer, wakeAt *time.Time) (int, bool) {
	now := time.Now()
	c.healthMu.Lock()
	defer c.healthMu.Unlock()
	c.candidates = c.candidates[:0]
	for i := range c.nodes {
		n := &c.nodes[i]
		switch {
		case b.calling[i]:
		case n.retryAt.After(now):
			*wakeAt = earliest(*wakeAt, n.retryAt)
		case b.refusedUntil[i].After(now):
			*wakeAt = earliest(*wakeAt, b.refusedUntil[i])
		default:
			c.candidates = append(c.candidates, i)
		}
	}
	if len(c.candidates) == 0 {
		return 0, false
	}
	return c.candidates[c.random.Intn(len(c.candidates))], true
}

// call asks endpoint `endpoint` for a batch for b in a goroutine of its own,
// which hands its result to the refill goroutine.
func (c *Client) call(b *buffer, endpoint int) {
	n := &c.nodes[endpoint]
	b.calling[endpoint] = true
	b.calls++
	r := result{b: b, endpoint: endpoint, started: time.Now(), expires: neverExpires}
	if b.tag == "" {
		r.expires = monoNow() + int64(c.options.MaxAge)
	}
	base, count, binary := n.base, b.batch, !n.json
	c.running.Add(1)
	go func() {
		defer c.running.Done()
		r.got, r.err = c.transport.fetchIDs(base, b.tag, count, binary)
		if r.err != nil && binary && formatRefused(r.err) {
			r.json = true
			r.got, r.err = c.transport.fetchIDs(base, b.tag, count, false)
		}
		if r.err != nil && r.err.status == http.StatusBadRequest && count > 1 {
			info, err := c.transport.fetchInfo(base)
			if err == nil && info.MaxBatch >= 1 && info.MaxBatch < count {
				r.maxBatch = info.MaxBatch
			}
		}
		select {
		case c.results <- r:
		case <-c.stop:
		}
	}()
}

// finish takes a call's result: a batch is checked against its issuer's
// last and put; a failure backs the endpoint off or records the refusal.
func (c *Client) finish(r result) {
	b, n := r.b, &c.nodes[r.endpoint]
	b.calling[r.endpoint] = false
	b.calls--
	if r.json {
		n.json = true
	}
	err := r.err
	if err == nil {
		if last, above := n.order.advance(b.tag, r.got.issuer, r.got.ids); !above {
			c.transport.failedCalls.Add(1)
			err = notAbove(n.base, b, r.got, last)
		}
	}
	switch {
	case err == nil:
		c.markHealthy(r.endpoint)
		c.put(b, r.got.ids, r.expires, r.started)
	case r.maxBatch > 0: // ask again at once, for no more than the node gives
		b.batchCap = r.maxBatch
		b.batch = minInt(b.batch, b.batchCap)
	case err.failure == failRefused:
		b.refusedUntil[r.endpoint] = time.Now().Add(c.options.BackoffMax)
		c.recordError(b, err.err, c.everyEndpointRefuses(b))
	default:
		if err.failure == failAnswer {
			c.invalidAnswers.Add(1)
		}
		c.backOff(r.endpoint, time.Now())
		c.recordError(b, err.err, false)
	}
}

func (c *Client) everyEndpointRefuses(b *buffer) bool {
	now := time.Now()
	for _, until := range b.refusedUntil {
		if !until.After(now) {
			return false
		}
	}
	return true
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

// markHealthy ends endpoint's backoff after a call it answered.
func (c *Client) markHealthy(endpoint int) {
	c.healthMu.Lock()
	defer c.healthMu.Unlock()
	c.nodes[endpoint].backoff, c.nodes[endpoint].retryAt = 0, time.Time{}
}

// backOff doubles the endpoint's backoff (BackoffInitial the first time, at
// most BackoffMax) and skips it for a wait drawn in [backoff/2, backoff].
func (c *Client) backOff(endpoint int, now time.Time) {
	c.healthMu.Lock()
	defer c.healthMu.Unlock()
	n := &c.nodes[endpoint]
	if n.backoff == 0 {
		n.backoff = c.options.BackoffInitial
	} else if n.backoff *= 2; n.backoff > c.options.BackoffMax {
		n.backoff = c.options.BackoffMax
	}
	half := n.backoff / 2
	n.retryAt = now.Add(half + time.Duration(c.random.Int63n(int64(n.backoff-half)+1)))
}

// put links a fetched batch, adapts the batch size to the rate of refills
// and tells waiting callers.
func (c *Client) put(b *buffer, ids []int64, expires int64, started time.Time) {
	if started.After(b.lastRefill) {
		if !b.lastRefill.IsZero() {
			since := started.Sub(b.lastRefill)
			if since < c.options.RefillPeriod/2 {
				b.batch = minInt(b.batch*2, minInt(c.options.MaxBatch, b.batchCap))
			} else if since > 2*c.options.RefillPeriod {
				b.batch = minInt(maxInt(b.batch/2, c.options.InitialBatch), b.batchCap)
			}
		}
		b.lastRefill = started
	}
	b.queue.put(ids, expires, c.lowMark(b))
	b.received.Store(true)
	c.received.Add(int64(len(ids)))
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

// Package snowid is the Go client of snowid's snowidd nodes: IDs for an
// application served from a local buffer that a background goroutine keeps
// topped up over HTTP/1.1 (GET /v1/ids for Snowflake IDs,
// GET /v1/segment/{tag} for a tag's numbers, in binary batches), the
// contract of every snowid client (docs/clients.md).
//
// Next takes an ID from the buffer: no lock, no allocation, no I/O, a few
// atomic operations and a monotonic clock read. Only when the buffer is
// empty does it wait, at most Options.EmptyWait (Options.StartWait until
// the buffer's first batch has arrived), for the refill; it then returns an
// ErrUnavailable error (never blocks forever). Refills go to endpoints drawn
// at random among the healthy ones; endpoints that fail are skipped with
// exponential backoff and jitter; while one answers, callers see no error.
//
// Order: every ID handed out is unique (issued by a node once, taken from
// the buffer once), and one buffer hands its IDs out in the order they
// came, each batch increasing and above the last batch of its node. IDs
// from several clients, or from one client across a failover or behind a
// proxy in front of several nodes, are only roughly time-ordered: a
// buffered ID was issued up to MaxAge ago.
//
// What a node (or a proxy) sends is taken only as docs/clients.md ("What a
// client accepts") allows (batch.go); anything else is discarded, counted
// in Stats.InvalidAnswers, and its endpoint backed off.
//
// Thread-safety: every method may be called from any number of goroutines
// at once, Close included.
package snowid

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"time"
)

// Client hands out IDs from its buffers. Create it with Open; Close it.
type Client struct {
	options   Options
	transport *transport
	snowflake *buffer
	tagsMu    sync.RWMutex // guards the map; buffers never move or go
	tags      map[string]*buffer

	mu   sync.Mutex    // guards each buffer's err/refused and news
	news chan struct{} // closed and replaced when a batch lands or an error is recorded

	wake      chan struct{} // a claim crossed a low-water mark, or a caller waits
	results   chan result   // calls that ended (refill.go)
	stop      chan struct{} // closed by Close
	done      chan struct{} // closed when the refill goroutine has returned
	running   sync.WaitGroup
	cancel    context.CancelFunc
	closeOnce sync.Once
	closed    atomic.Bool

	layoutMu sync.Mutex
	layout   *Layout // read from /v1/info on the first Decode

	received       atomic.Int64 // IDs and numbers received
	invalidAnswers atomic.Int64 // batches discarded (batch.go)

	bases      []string   // the endpoints' base URLs, fixed after Open
	nodes      []node     // refill goroutine only (but their health: healthMu)
	healthMu   sync.Mutex // guards nodes' retryAt and backoff, random and candidates
	random     *rand.Rand // endpoints and jitter
	candidates []int      // pickEndpoint's scratch
}

// Stats counts what the client did since Open, under the names every snowid
// client uses (docs/clients.md, "Stats").
type Stats struct {
	// Calls: calls for batches sent to nodes, whatever became of them
	// (/v1/info, which Decode reads, is not counted).
	Calls int64
	// FailedCalls: of those, the ones that brought no batch: no connection,
	// a deadline passed, an error status (5xx, or a refusal), or an
	// invalid answer.
	FailedCalls int64
	// InvalidAnswers: batches discarded because a node (or a proxy) sent
	// what docs/clients.md ("What a client accepts") does not let a client
	// take: malformed, more IDs than asked for, out of order, not above the
	// issuer's last batch, too long a body, or a body not whole within
	// CallDeadline. A part of FailedCalls.
	InvalidAnswers int64
	// IDsReceived: Snowflake IDs and segment numbers taken into the buffers.
	IDsReceived int64
	// IDsServed: those handed to the application.
	IDsServed int64
	// IDsExpired: Snowflake IDs dropped from the buffer unissued after MaxAge.
	IDsExpired int64
}

// Open validates the options and starts the refill goroutine, which fetches
// the first batch at once. It connects lazily: an endpoint down now is not
// an error here.
func Open(options Options) (*Client, error) {
	if err := options.Validate(); err != nil {
		return nil, err
	}
	options.Endpoints = append([]string(nil), options.Endpoints...)
	ctx, cancel := context.WithCancel(context.Background())
	var seed [8]byte
	crand.Read(seed[:]) // on failure the seed is 0 and the clock's nanoseconds remain
	c := &Client{
		options:   options,
		transport: newTransport(ctx, &options),
		snowflake: newBuffer("", options.InitialBatch, len(options.Endpoints)),
		tags:      map[string]*buffer{},
		news:      make(chan struct{}),
		wake:      make(chan struct{}, 1),
		results:   make(chan result),
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
		cancel:    cancel,
		random: rand.New(rand.NewSource(
			int64(binary.LittleEndian.Uint64(seed[:])) ^ time.Now().UnixNano())),
	}
	for _, endpoint := range options.Endpoints {
		base, _ := baseURL(endpoint) // valid: checked by Validate
		c.bases = append(c.bases, base)
		c.nodes = append(c.nodes, node{base: base, json: options.askInJSON})
	}
	go c.refillLoop()
	return c, nil
}

// Next returns one Snowflake ID. An ErrUnavailable error when the buffer
// stayed empty for EmptyWait (StartWait before its first batch); ErrRefused
// or ErrInvalidArgument when the nodes refuse this client (token, agent);
// ErrClosed after Close.
func (c *Client) Next() (int64, error) {
	if id, ok := c.takeFresh(c.snowflake); ok {
		return id, nil
	}
	return c.waitAndTake(c.snowflake)
}

// NextN fills out completely, each ID as Next would return it; on error the
// IDs already written are consumed.
func (c *Client) NextN(out []int64) error {
	for n := 0; n < len(out); {
		if c.closed.Load() {
			return newError(ErrClosed, "Close was called")
		}
		taken, wake := c.snowflake.queue.takeInto(out[n:], monoNow())
		if wake {
			c.wakeRefill()
		}
		n += taken
		if n == len(out) {
			return nil
		}
		id, err := c.waitAndTake(c.snowflake)
		if err != nil {
			return err
		}
		out[n] = id
		n++
	}
	return nil
}

// NextTag returns the next number of segment tag `tag`, from a buffer of
// its own. ErrNotFound if the nodes do not know the tag; ErrInvalidArgument
// if it is empty, longer than 128 bytes, "." or "..", or the nodes refuse it.
func (c *Client) NextTag(tag string) (int64, error) {
	if err := checkTag(tag); err != nil {
		return 0, err
	}
	b := c.bufferFor(tag)
	if id, ok := c.takeFresh(b); ok {
		return id, nil
	}
	return c.waitAndTake(b)
}

// Decode returns the fields of id under the nodes' layout, read from the
// first endpoint's /v1/info that answers on the first call and kept.
func (c *Client) Decode(id int64) (Fields, error) {
	layout, err := c.Layout()
	if err != nil {
		return Fields{}, err
	}
	return layout.Decode(id)
}

// Layout returns the nodes' ID layout (see Decode).
func (c *Client) Layout() (Layout, error) {
	c.layoutMu.Lock()
	defer c.layoutMu.Unlock()
	if c.layout != nil {
		return *c.layout, nil
	}
	var last *callError
	for _, base := range c.bases {
		info, err := c.transport.fetchInfo(base)
		if err != nil {
			last = err
			continue
		}
		layout, bad := info.Layout.layout()
		if bad != nil {
			return Layout{}, newError(ErrUnavailable, base+": "+bad.Error())
		}
		c.layout = &layout
		return layout, nil
	}
	return Layout{}, last.err
}

// Stats returns the client's counters.
func (c *Client) Stats() Stats {
	stats := Stats{
		Calls:          c.transport.calls.Load(),
		FailedCalls:    c.transport.failedCalls.Load(),
		InvalidAnswers: c.invalidAnswers.Load(),
		IDsReceived:    c.received.Load(),
	}
	for _, b := range c.buffers() {
		served, expired := b.queue.counts()
		stats.IDsServed += served
		stats.IDsExpired += expired
	}
	return stats
}

// Close stops the refill goroutine, cancelling its call in flight, and
// returns when it has stopped. Later calls return ErrClosed. Idempotent.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		close(c.stop)
		c.cancel()
		<-c.done
		c.transport.client.CloseIdleConnections()
	})
	return nil
}

// The hot path: one queue take (a few atomic operations) and a clock read.
func (c *Client) takeFresh(b *buffer) (int64, bool) {
	if c.closed.Load() {
		return 0, false
	}
	id, ok, wake := b.queue.take(monoNow())
	if wake {
		c.wakeRefill()
	}
	return id, ok
}

func (c *Client) wakeRefill() {
	select {
	case c.wake <- struct{}{}:
	default: // a wake-up is pending already
	}
}

// waitAndTake: the slow path. Wakes the refill goroutine and waits for news
// (a batch put or an error recorded) until EmptyWait (before the buffer's
// first batch: the longer of it and StartWait) has passed.
func (c *Client) waitAndTake(b *buffer) (int64, error) {
	wait := c.options.EmptyWait
	if !b.received.Load() && c.options.StartWait > wait {
		wait = c.options.StartWait
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	b.waiting.Add(1)
	defer b.waiting.Add(-1)
	for {
		c.mu.Lock()
		news, err, refused := c.news, b.err, b.refused
		c.mu.Unlock()
		if c.closed.Load() {
			return 0, newError(ErrClosed, "Close was called")
		}
		if id, ok := c.takeFresh(b); ok {
			return id, nil
		}
		if refused && err != nil {
			return 0, err
		}
		c.wakeRefill()
		expired := wait == 0
		if !expired {
			select {
			case <-news:
			case <-c.stop:
			case <-timer.C:
				expired = true
			}
		}
		if expired {
			if err != nil {
				return 0, err
			}
			return 0, newError(ErrUnavailable, fmt.Sprintf("no %s buffered and none fetched "+
				"within %v", b.what(), wait))
		}
	}
}

func (c *Client) bufferFor(tag string) *buffer {
	c.tagsMu.RLock()
	b := c.tags[tag]
	c.tagsMu.RUnlock()
	if b != nil {
		return b
	}
	c.tagsMu.Lock()
	defer c.tagsMu.Unlock()
	if b = c.tags[tag]; b == nil {
		b = newBuffer(tag, c.options.InitialBatch, len(c.nodes))
		c.tags[tag] = b
	}
	return b
}

// newsLocked tells waiting callers something changed. Requires c.mu held.
func (c *Client) newsLocked() {
	close(c.news)
	c.news = make(chan struct{})
}

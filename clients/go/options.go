// Options of a Client, their defaults and their validation.
//
// Start from DefaultOptions() and set Endpoints and what else differs:
// every field is taken as it is, so that zero is a value like any other
// (a zero EmptyWait means "do not wait", as in every snowid client). A
// field left at zero where zero is not allowed (a literal Options{...}
// that did not start from DefaultOptions) is refused by Open, naming it.
// A negative duration is refused. The names and defaults are those of
// docs/clients.md ("Options"), the C++ client's but for MaxBatch: over
// HTTP snowidd's own default limit is 10000.
//
// Thread-safety: Options is a plain value; Open takes a copy.
package snowid

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Options configure a Client. Start from DefaultOptions().
type Options struct {
	// Endpoints: snowidd HTTP base URLs, e.g. "http://10.0.0.1:8080"; at
	// least one. Each refill goes to one drawn at random among the healthy
	// ones (so a fleet given the same list loads every node alike), and
	// while the buffer drains faster than one node refills it, to several
	// at once.
	Endpoints []string
	// BearerToken is sent as "Authorization: Bearer <token>" when not empty.
	BearerToken string
	// Agent names this client in the nodes' metrics (X-Snowid-Agent):
	// [a-zA-Z][a-zA-Z0-9-]*, at most 64 characters; empty: none.
	Agent string
	// CallDeadline bounds every HTTP call to a node: connect, headers and
	// the whole body (default 500 ms; above 0).
	CallDeadline time.Duration
	// EmptyWait is the longest Next waits on an empty buffer before
	// ErrUnavailable (default 200 ms; 0: do not wait).
	EmptyWait time.Duration
	// StartWait replaces EmptyWait until a buffer's first batch has
	// arrived (default 2 s): a client made at start-up, whose first refill
	// also opens its first connection, does not fail its first calls while
	// a node answers. A call waits the longer of the two.
	StartWait time.Duration
	// LowWater: a refill starts when fewer than this fraction of a batch is
	// left, in (0, 1] (default 0.5).
	LowWater float64
	// InitialBatch and MaxBatch: IDs per refill start at InitialBatch
	// (default 1000), double while refills come sooner than RefillPeriod/2
	// and halve while they come later than 2*RefillPeriod, within
	// [InitialBatch, MaxBatch]. MaxBatch defaults to 10000 (snowidd's
	// max_batch default), at most 1000000; a node with a lower max_batch
	// (read from its /v1/info when it refuses a count) caps it.
	InitialBatch int
	MaxBatch     int
	// RefillPeriod: the refill goroutine looks at the buffers at least this
	// often, and the batch adapts against it (default 500 ms).
	RefillPeriod time.Duration
	// MaxAge: a Snowflake ID still buffered this long after the call that
	// fetched it began is dropped, not handed out (default 10 s, at least
	// 10 ms). Segment numbers carry no time and never age.
	MaxAge time.Duration
	// BackoffInitial and BackoffMax: a failed endpoint is skipped for a
	// backoff of BackoffInitial (default 100 ms), doubled per further
	// failure up to BackoffMax (default 5 s), and reset by a success; each
	// wait is drawn between half and all of the backoff, so that clients
	// that saw one failure together do not come back together.
	BackoffInitial time.Duration
	BackoffMax     time.Duration

	// askInJSON: every endpoint is asked in JSON, as if it had refused
	// format=binary. Tests only (export_test.go), for the JSON rules.
	askInJSON bool
}

// The limit of MaxBatch: snowidd's own upper bound for max_batch.
const maxBatchLimit = 1_000_000

// DefaultOptions returns every default; Endpoints is left empty.
func DefaultOptions() Options {
	return Options{
		CallDeadline:   500 * time.Millisecond,
		EmptyWait:      200 * time.Millisecond,
		StartWait:      2 * time.Second,
		LowWater:       0.5,
		InitialBatch:   1000,
		MaxBatch:       10_000,
		RefillPeriod:   500 * time.Millisecond,
		MaxAge:         10 * time.Second,
		BackoffInitial: 100 * time.Millisecond,
		BackoffMax:     5 * time.Second,
	}
}

// Validate returns nil, or an ErrInvalidArgument error naming the first bad
// option.
func (o Options) Validate() error {
	if err := validateEndpoints(o.Endpoints); err != nil {
		return err
	}
	if o.Agent != "" && !validName(o.Agent, "-", 64) {
		return invalidOption("Agent: %q is not [a-zA-Z][a-zA-Z0-9-]* of at most 64 characters",
			o.Agent)
	}
	if strings.ContainsAny(o.BearerToken, "\r\n") {
		return invalidOption("BearerToken: must not hold a line break")
	}
	for _, d := range []struct {
		name  string
		value time.Duration
	}{{"CallDeadline", o.CallDeadline}, {"EmptyWait", o.EmptyWait}, {"StartWait", o.StartWait},
		{"RefillPeriod", o.RefillPeriod}, {"MaxAge", o.MaxAge},
		{"BackoffInitial", o.BackoffInitial}, {"BackoffMax", o.BackoffMax}} {
		if d.value < 0 {
			return invalidOption("%s: %v is negative", d.name, d.value)
		}
	}
	if o.CallDeadline == 0 {
		return invalidZero("CallDeadline", "a call needs a deadline above 0")
	}
	if !(o.LowWater > 0 && o.LowWater <= 1) {
		return invalidZero("LowWater", fmt.Sprintf("%v is not in (0, 1]", o.LowWater))
	}
	if o.InitialBatch < 1 {
		return invalidZero("InitialBatch", fmt.Sprintf("%d is not at least 1", o.InitialBatch))
	}
	if o.MaxBatch < o.InitialBatch || o.MaxBatch > maxBatchLimit {
		return invalidOption("MaxBatch: %d is not in [InitialBatch (%d), %d]",
			o.MaxBatch, o.InitialBatch, maxBatchLimit)
	}
	if o.RefillPeriod == 0 {
		return invalidZero("RefillPeriod", "the refill period must be above 0")
	}
	if o.MaxAge < 10*time.Millisecond {
		return invalidZero("MaxAge", fmt.Sprintf("%v is below 10ms", o.MaxAge))
	}
	if o.BackoffInitial == 0 || o.BackoffMax < o.BackoffInitial {
		return invalidZero("BackoffInitial, BackoffMax", fmt.Sprintf(
			"need 0 < BackoffInitial (%v) <= BackoffMax (%v)", o.BackoffInitial, o.BackoffMax))
	}
	return nil
}

func invalidOption(format string, args ...any) error {
	return newError(ErrInvalidArgument, fmt.Sprintf(format, args...))
}

// invalidZero: a bad option that a literal Options{...}, which did not start
// from DefaultOptions(), leaves at zero; the message says so.
func invalidZero(name, why string) error {
	return invalidOption("%s: %s (start from snowid.DefaultOptions())", name, why)
}

func validateEndpoints(endpoints []string) error {
	if len(endpoints) == 0 {
		return invalidOption("Endpoints: at least one is needed")
	}
	for _, endpoint := range endpoints {
		if _, err := baseURL(endpoint); err != nil {
			return err
		}
	}
	return nil
}

// baseURL checks an endpoint, http://HOST:PORT or https://HOST:PORT with an
// optional final "/", and returns it without that "/".
func baseURL(endpoint string) (string, error) {
	bad := func(why string) (string, error) {
		return "", invalidOption("Endpoints: %q is not http(s)://HOST:PORT: %s", endpoint, why)
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return bad(err.Error())
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return bad("the scheme is not http or https")
	}
	// An empty "?" or "#" leaves RawQuery and Fragment empty but stays in
	// the base URL, where it would take in every path the client appends.
	if u.Hostname() == "" || u.User != nil || strings.ContainsAny(endpoint, "?#") ||
		(u.Path != "" && u.Path != "/") {
		return bad("it must be a scheme, a host and a port only")
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil || port < 1 || port > 65535 {
		return bad("the port is not in 1..65535")
	}
	return strings.TrimSuffix(endpoint, "/"), nil
}

// validName: a letter, then letters, digits or bytes of `more`; at most max bytes.
func validName(name, more string, max int) bool {
	if name == "" || len(name) > max {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		letter := (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		if letter || (i > 0 && ((c >= '0' && c <= '9') || strings.IndexByte(more, c) >= 0)) {
			continue
		}
		return false
	}
	return true
}

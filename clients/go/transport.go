// The client's HTTP calls to snowidd (docs/server.md): GET /v1/ids,
// /v1/segment/{tag} and /v1/info, each with the call deadline, the bearer
// token and the agent, on kept-alive connections; and what a failed call
// means for the client.
//
// Thread-safety: a transport may be used from several goroutines; its
// fields are set once in newTransport.
package snowid

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// What a failed call means for the client.
type failure int

const (
	failNode    failure = iota // the node is down, slow or cannot issue: back off, ask the next
	failRefused                // the node refuses this client's request (token, agent, count, tag)
)

type callError struct {
	failure failure
	status  int // HTTP status; 0 when no answer came
	err     *Error
}

type transport struct {
	client   *http.Client
	token    string
	agent    string
	deadline time.Duration
	ctx      context.Context // cancelled by Client.Close: ends the call in flight

	requests atomic.Int64 // HTTP round trips started
	failures atomic.Int64 // of those, the ones that failed
}

func newTransport(ctx context.Context, o *Options) *transport {
	dialer := &net.Dialer{Timeout: o.CallDeadline, KeepAlive: 30 * time.Second}
	return &transport{
		client: &http.Client{Transport: &http.Transport{
			DialContext:         dialer.DialContext,
			MaxIdleConnsPerHost: 2,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
			ForceAttemptHTTP2:   false,
		}},
		token:    o.BearerToken,
		agent:    o.Agent,
		deadline: o.CallDeadline,
		ctx:      ctx,
	}
}

// get asks base+target and decodes the JSON answer into `into`. `limit`
// bounds the body read.
func (t *transport) get(base, target string, limit int64, into any) *callError {
	ctx, cancel := context.WithTimeout(t.ctx, t.deadline)
	defer cancel()
	url := base + target
	request, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return &callError{failRefused, 0, newError(ErrInvalidArgument, err.Error())}
	}
	if t.token != "" {
		request.Header.Set("Authorization", "Bearer "+t.token)
	}
	if t.agent != "" {
		request.Header.Set("X-Snowid-Agent", t.agent)
	}
	t.requests.Add(1)
	failed := func(e *callError) *callError {
		t.failures.Add(1)
		return e
	}
	response, err := t.client.Do(request)
	if err != nil {
		return failed(&callError{failNode, 0, newError(ErrUnavailable, err.Error())})
	}
	defer response.Body.Close()
	// Read to the end, so that the connection is kept for the next call.
	body, err := io.ReadAll(io.LimitReader(response.Body, limit))
	if err != nil {
		return failed(&callError{failNode, response.StatusCode,
			newError(ErrUnavailable, fmt.Sprintf("GET %s: %v", url, err))})
	}
	if response.StatusCode != http.StatusOK {
		return failed(refusal(url, response.StatusCode, body))
	}
	if err := json.Unmarshal(body, into); err != nil {
		return failed(&callError{failNode, response.StatusCode,
			newError(ErrUnavailable, fmt.Sprintf("GET %s: malformed answer: %v", url, err))})
	}
	return nil
}

// refusal classifies a non-200 answer: 5xx (503 while a node cannot issue)
// and 429 are the node's; other 4xx are this client's.
func refusal(url string, status int, body []byte) *callError {
	var answer struct {
		Error string `json:"error"`
	}
	message := strings.TrimSpace(string(body))
	if json.Unmarshal(body, &answer) == nil && answer.Error != "" {
		message = answer.Error
	}
	text := fmt.Sprintf("GET %s: HTTP %d: %s", url, status, message)
	var kind error
	switch {
	case status >= 500 || status == http.StatusTooManyRequests || status < 400:
		return &callError{failNode, status, newError(ErrUnavailable, text)}
	case status == http.StatusBadRequest:
		kind = ErrInvalidArgument
	case status == http.StatusNotFound:
		kind = ErrNotFound
	default: // 401, 403 (the token) and the rest of 4xx
		kind = ErrRefused
	}
	return &callError{failRefused, status, newError(kind, text)}
}

// fetchIDs: `count` Snowflake IDs (tag empty) or numbers of segment tag `tag`.
func (t *transport) fetchIDs(base, tag string, count int) ([]int64, *callError) {
	target := "/v1/ids?count=" + strconv.Itoa(count)
	if tag != "" {
		target = "/v1/segment/" + escapePathSegment(tag) + "?count=" + strconv.Itoa(count)
	}
	var answer struct {
		IDs []string `json:"ids"`
	}
	// Each ID: at most 19 digits, two quotes and a comma.
	if err := t.get(base, target, int64(count)*22+4096, &answer); err != nil {
		return nil, err
	}
	ids := make([]int64, len(answer.IDs))
	for i, text := range answer.IDs {
		id, err := strconv.ParseInt(text, 10, 64)
		if err != nil || id < 0 || (i > 0 && id <= ids[i-1]) {
			t.failures.Add(1)
			return nil, &callError{failNode, http.StatusOK, newError(ErrUnavailable,
				fmt.Sprintf("GET %s%s: ID %q is not a number above the one before it", base, target,
					text))}
		}
		ids[i] = id
	}
	return ids, nil
}

// nodeInfo: what the client reads of GET /v1/info.
type nodeInfo struct {
	Layout       layoutJSON `json:"layout"`
	MaxBatch     int        `json:"max_batch"`
	DatacenterID int64      `json:"datacenter_id"`
	WorkerID     int64      `json:"worker_id"`
}

func (t *transport) fetchInfo(base string) (nodeInfo, *callError) {
	var info nodeInfo
	err := t.get(base, "/v1/info", 1<<20, &info)
	return info, err
}

// escapePathSegment percent-encodes every byte but RFC 3986's unreserved
// ones, so that any tag (Leaf's "order:pay", spaces, UTF-8) is one segment.
func escapePathSegment(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

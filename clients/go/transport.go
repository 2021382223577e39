// The client's HTTP calls to snowidd (docs/server.md): GET /v1/ids,
// /v1/segment/{tag}, /v1/business/{tag} (business.go) and /v1/info, each with the call deadline, the bearer
// token and the agent, on kept-alive connections; and what a failed call
// means for the client.
//
// Batches are asked for with format=binary (8 bytes a number); a node that
// answers 400 naming the format (one from before format=binary) is asked
// in JSON from then on (the caller keeps that per endpoint: binary).
//
// The call deadline covers the whole call: connect, headers and the whole
// body. A body is read into at most what its answer may take: a binary
// batch of N IDs 8*N bytes, a JSON one N*24+64 (docs/clients.md), /v1/info
// infoLimit; one that says it is longer (Content-Length) fails before a
// byte of it is read, one that turns out longer fails at the byte past the
// bound, and the rest is never read (the connection is dropped). An error
// status's body is only shown: it is cut at errorLimit.
//
// Thread-safety: a transport may be used from several goroutines; its
// fields are set once in newTransport.
package snowid

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
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
	failAnswer                 // an invalid answer (batch.go): counted, then as failNode
)

// Bounds on the bodies the client reads (batchLimit for a batch).
const (
	infoLimit  = 1 << 20
	errorLimit = 64 << 10
)

// userAgent: the client and its version, in every request.
const userAgent = "snowid-go/" + Version

// issuerHeader names the snowidd process that issued a batch (batch.go).
const issuerHeader = "Snowid-Issuer"

// batchLimit: what the body of a batch of count IDs may take.
func batchLimit(count int, binary bool) int64 {
	if binary {
		return 8 * int64(count)
	}
	return int64(count)*24 + 64
}

// binaryType: the Content-Type of a format=binary answer.
const binaryType = "application/octet-stream"

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

	calls       atomic.Int64 // calls for batches sent (Stats.Calls)
	failedCalls atomic.Int64 // of those, the ones that brought no batch
}

func newTransport(ctx context.Context, o *Options) *transport {
	dialer := &net.Dialer{Timeout: o.CallDeadline, KeepAlive: 30 * time.Second}
	return &transport{
		client: &http.Client{CheckRedirect: answerRedirects, Transport: &http.Transport{
			DialContext:         dialer.DialContext,
			MaxIdleConnsPerHost: 4,
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

// answerRedirects makes a 3xx the answer of its call (a failure of the
// node, as refusal says), never followed: a batch comes from the endpoint
// asked or from none, whatever a proxy or a portal in front of it says.
func answerRedirects(*http.Request, []*http.Request) error {
	return http.ErrUseLastResponse
}

// answer: a node's 200 answer, its body whole.
type answer struct {
	body        []byte
	issuer      string // the Snowid-Issuer header; "" if none
	contentType string // the media type of Content-Type, parameters left off
}

// get asks base+target and returns its 200 answer, the body at most limit
// bytes, all within the call deadline. forIDs: a call for a batch, counted
// in calls (and failedCalls), whose 200 answer that then breaks is an
// invalid answer (failAnswer).
func (t *transport) get(base, target string, limit int64, forIDs bool) (answer, *callError) {
	return t.getWithin(t.ctx, base, target, limit, forIDs)
}

// getWithin is get, also ended when ctx is (besides Close and the deadline).
func (t *transport) getWithin(ctx context.Context, base, target string, limit int64,
	forIDs bool) (answer, *callError) {
	if forIDs {
		t.calls.Add(1)
	}
	got, err := t.call(ctx, base, target, limit, forIDs)
	if err != nil && forIDs {
		t.failedCalls.Add(1)
	}
	return got, err
}

func (t *transport) call(parent context.Context, base, target string, limit int64,
	forIDs bool) (answer, *callError) {
	ctx, cancel := context.WithTimeout(parent, t.deadline)
	defer cancel()
	if parent != t.ctx { // a caller's context: Close ends the call too
		go func() {
			select {
			case <-t.ctx.Done():
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	url := base + target
	request, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return answer{}, &callError{failRefused, 0, newError(ErrInvalidArgument, err.Error())}
	}
	if t.token != "" {
		request.Header.Set("Authorization", "Bearer "+t.token)
	}
	if t.agent != "" {
		request.Header.Set("X-Snowid-Agent", t.agent)
	}
	request.Header.Set("User-Agent", userAgent)
	response, err := t.client.Do(request)
	if err != nil {
		return answer{}, &callError{failNode, 0, newError(ErrUnavailable, err.Error())}
	}
	defer response.Body.Close()
	if response.StatusCode != http.StatusOK {
		body, err := io.ReadAll(io.LimitReader(response.Body, errorLimit))
		if err != nil {
			return answer{}, &callError{failNode, response.StatusCode,
				newError(ErrUnavailable, fmt.Sprintf("GET %s: %v", url, err))}
		}
		return answer{}, refusal(url, response.StatusCode, body)
	}
	broken := func(why string) (answer, *callError) {
		e := &callError{failNode, http.StatusOK,
			newError(ErrUnavailable, fmt.Sprintf("GET %s: HTTP 200, then %s", url, why))}
		if forIDs {
			e = invalidAnswer(e.err.Message)
		}
		return answer{}, e
	}
	if response.ContentLength > limit {
		return broken(fmt.Sprintf("a body of %d bytes, above the %d it may take",
			response.ContentLength, limit))
	}
	body, err := readBody(response, limit)
	if err != nil {
		return broken(err.Error())
	}
	contentType, _, _ := mime.ParseMediaType(response.Header.Get("Content-Type"))
	return answer{body, response.Header.Get(issuerHeader), contentType}, nil
}

// readBody reads a 200 answer's body to its end (so that the connection is
// kept for the next call), at most limit bytes. A body whose length is
// known is read into one buffer of that size, with no copy.
func readBody(response *http.Response, limit int64) ([]byte, error) {
	if n := response.ContentLength; n >= 0 && n <= limit {
		body := make([]byte, n)
		if _, err := io.ReadFull(response.Body, body); err != nil {
			return nil, err
		}
		return body, nil
	}
	body, err := io.ReadAll(io.LimitReader(response.Body, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(body)) > limit {
		return nil, fmt.Errorf("a body longer than the %d bytes it may take", limit)
	}
	return body, nil
}

// invalidAnswer: a batch the client does not take (batch.go).
func invalidAnswer(message string) *callError {
	return &callError{failAnswer, http.StatusOK,
		newError(ErrUnavailable, message+" (the batch is discarded)")}
}

// formatRefused: whether a refusal is an old node's of format=binary (400,
// its message naming the format).
func formatRefused(e *callError) bool {
	return e.status == http.StatusBadRequest && strings.Contains(e.err.Message, "format") &&
		strings.Contains(e.err.Message, "binary")
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

// batch: what a node answered to a call for IDs.
type batch struct {
	ids    []int64
	issuer string // the Snowid-Issuer header; "" if none
}

// fetchIDs: 1 to count Snowflake IDs (tag empty) or numbers of segment tag
// `tag`, in binary or JSON, as parseBinary or parseBatch takes them;
// whether they lie above the batch before is the caller's to judge
// (batchOrder).
func (t *transport) fetchIDs(base, tag string, count int, binary bool) (batch, *callError) {
	target := "/v1/ids?count=" + strconv.Itoa(count)
	if tag != "" {
		target = "/v1/segment/" + escapePathSegment(tag) + "?count=" + strconv.Itoa(count)
	}
	if binary {
		target += "&format=binary"
	}
	answer, err := t.get(base, target, batchLimit(count, binary), true)
	if err != nil {
		return batch{}, err
	}
	var ids []int64
	var bad error
	switch {
	case binary && answer.contentType != binaryType:
		bad = fmt.Errorf("Content-Type %q to a format=binary request, not %s",
			answer.contentType, binaryType)
	case binary:
		ids, bad = parseBinary(answer.body, count)
	default:
		ids, bad = parseBatch(answer.body, count)
	}
	if bad != nil {
		t.failedCalls.Add(1)
		return batch{}, invalidAnswer(fmt.Sprintf("GET %s%s: %v", base, target, bad))
	}
	return batch{ids, answer.issuer}, nil
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
	answer, err := t.get(base, "/v1/info", infoLimit, false)
	if err != nil {
		return info, err
	}
	if err := json.Unmarshal(answer.body, &info); err != nil {
		return info, &callError{failNode, http.StatusOK, newError(ErrUnavailable,
			fmt.Sprintf("GET %s/v1/info: malformed answer: %v", base, err))}
	}
	return info, nil
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

// Business IDs: GET /v1/business/{tag}?count=N, a tag's numbers formatted
// by its template ("ORD-20261202-000001"), asked for as one batch per call
// on the caller's goroutine, not buffered.
//
// Each call goes where a refill would (refill.go): to an endpoint drawn at
// random among the healthy ones, then to the others in turn while they
// fail (no connection, the call deadline, a 5xx such as the 503 of a node
// whose store is down or whose clock disagrees with the store's about the
// period, an invalid answer); each failure backs its endpoint off for the
// refills too and is counted in Stats. When no endpoint is healthy, the one
// whose backoff ends first is asked, so that a call never fails without
// asking a node. A refusal (400, 401, 403, 404, 409) is the request's: it is
// returned at once, not asked of the next endpoint.
//
// An answer of 200 is taken only if its Content-Type is application/json,
// its body at most businessLimit(count, tag) bytes of valid UTF-8, one JSON
// object of exactly two members, "tag" (the tag asked for) and "ids", an
// array of exactly count strings, each 1 to 256 bytes without control
// characters, no two alike (parseBusiness). Anything else is an invalid
// answer naming the endpoint (Stats.InvalidAnswers).
//
// Thread-safety: NextBusiness may be called from any number of goroutines.
package snowid

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// businessIDLimit: the longest business ID, in bytes.
const businessIDLimit = 256

// jsonType: the Content-Type of a business-ID answer.
const jsonType = "application/json"

// NextBusiness returns count business IDs of tag `tag`, from one node in
// one call (see the top of the file), each call within CallDeadline per
// endpoint and ended by ctx or Close. ErrNotFound if the nodes do not know
// the tag; ErrFailedPrecondition if it is retired, has no template or its
// period's numbers outgrew the template; ErrRefused for the token;
// ErrInvalidArgument for a bad tag or count; ErrUnavailable naming each
// endpoint's failure when none answered; ErrClosed after Close.
func (c *Client) NextBusiness(ctx context.Context, tag string, count int) ([]string, error) {
	if err := checkTag(tag); err != nil {
		return nil, err
	}
	if count < 1 || count > maxBatchLimit {
		return nil, newError(ErrInvalidArgument,
			fmt.Sprintf("count %d: must be 1 to %d", count, maxBatchLimit))
	}
	tried := make([]bool, len(c.nodes))
	var failures []string
	for {
		if c.closed.Load() {
			return nil, newError(ErrClosed, "NextBusiness after Close")
		}
		if err := ctx.Err(); err != nil {
			return nil, newError(ErrUnavailable, fmt.Sprintf("business IDs of tag %q: %v %s",
				tag, err, strings.Join(failures, "; ")))
		}
		endpoint, ok := c.drawEndpoint(tried)
		if !ok {
			return nil, newError(ErrUnavailable, fmt.Sprintf(
				"no endpoint gave %d business IDs of tag %q: %s",
				count, tag, strings.Join(failures, "; ")))
		}
		tried[endpoint] = true
		started := time.Now()
		ids, err := c.transport.fetchBusiness(ctx, c.bases[endpoint], tag, count)
		if err == nil {
			c.markHealthy(endpoint)
			return ids, nil
		}
		if err.failure == failRefused {
			return nil, err.err
		}
		if err.failure == failAnswer {
			c.invalidAnswers.Add(1)
		}
		c.backOff(endpoint, started)
		failures = append(failures, err.err.Message)
	}
}

// checkTag: a tag the client sends (the nodes judge the rest).
func checkTag(tag string) error {
	if tag == "" || len(tag) > 128 || tag == "." || tag == ".." {
		return newError(ErrInvalidArgument,
			fmt.Sprintf("tag %q: must be 1 to 128 bytes, not \".\" or \"..\"", tag))
	}
	return nil
}

// drawEndpoint draws one endpoint among the healthy ones not tried; if none
// was tried and none is healthy, the one whose backoff ends first; false
// when every healthy one was tried.
func (c *Client) drawEndpoint(tried []bool) (int, bool) {
	now := time.Now()
	c.healthMu.Lock()
	defer c.healthMu.Unlock()
	var healthy []int
	soonest, anyTried := 0, false
	for i := range c.nodes {
		anyTried = anyTried || tried[i]
		if c.nodes[i].retryAt.Before(c.nodes[soonest].retryAt) {
			soonest = i
		}
		if !tried[i] && !c.nodes[i].retryAt.After(now) {
			healthy = append(healthy, i)
		}
	}
	switch {
	case len(healthy) > 0:
		return healthy[c.random.Intn(len(healthy))], true
	case !anyTried:
		return soonest, true
	}
	return 0, false
}

// businessLimit: what the body of count business IDs of tag may take: each
// ID at most 256 bytes, each escaped as \uXXXX at worst, with its quotes and
// comma; the tag likewise; 64 for the rest.
func businessLimit(count int, tag string) int64 {
	return int64(count)*(6*businessIDLimit+3) + 6*int64(len(tag)) + 64
}

// fetchBusiness: count business IDs of tag from base, as parseBusiness
// takes them. A 409 is ErrFailedPrecondition.
func (t *transport) fetchBusiness(ctx context.Context, base, tag string,
	count int) ([]string, *callError) {
	target := "/v1/business/" + escapePathSegment(tag) + "?count=" + strconv.Itoa(count)
	answer, err := t.getWithin(ctx, base, target, businessLimit(count, tag), true)
	if err != nil {
		if err.status == http.StatusConflict {
			err.err.Kind = ErrFailedPrecondition
		}
		return nil, err
	}
	var ids []string
	bad := error(nil)
	if answer.contentType != jsonType {
		bad = fmt.Errorf("Content-Type %q, not %s", answer.contentType, jsonType)
	} else {
		ids, bad = parseBusiness(answer.body, tag, count)
	}
	if bad != nil {
		t.failedCalls.Add(1)
		return nil, invalidAnswer(fmt.Sprintf("GET %s%s: %v", base, target, bad))
	}
	return ids, nil
}

// parseBusiness reads a business-ID answer: {"tag": tag, "ids": [count
// distinct strings]} and nothing else (see the top of the file).
func parseBusiness(body []byte, tag string, count int) ([]string, error) {
	if !utf8.Valid(body) {
		return nil, errors.New("a body that is not UTF-8")
	}
	decoder := json.NewDecoder(bytes.NewReader(body))
	if err := expectToken(decoder, json.Delim('{')); err != nil {
		return nil, err
	}
	var ids []string
	seenTag := false
	for decoder.More() {
		name, err := decoder.Token()
		if err != nil {
			return nil, err
		}
		switch {
		case name == "tag" && !seenTag:
			seenTag = true
			value, err := decoder.Token()
			if err != nil {
				return nil, err
			}
			if value != tag {
				return nil, fmt.Errorf("an answer for tag %#v, not %q", value, tag)
			}
		case name == "ids" && ids == nil:
			if ids, err = parseBusinessIDs(decoder, count); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("member %q: not one \"tag\" and one \"ids\" alone", name)
		}
	}
	if err := expectToken(decoder, json.Delim('}')); err != nil {
		return nil, err
	}
	if _, err := decoder.Token(); err != io.EOF {
		return nil, errors.New("bytes after the JSON object")
	}
	if !seenTag || ids == nil {
		return nil, errors.New(`not both "tag" and "ids"`)
	}
	return ids, nil
}

// parseBusinessIDs reads the array of "ids": exactly count distinct IDs.
func parseBusinessIDs(decoder *json.Decoder, count int) ([]string, error) {
	if err := expectToken(decoder, json.Delim('[')); err != nil {
		return nil, err
	}
	ids := make([]string, 0, count)
	seen := make(map[string]bool, count)
	for decoder.More() {
		token, err := decoder.Token()
		if err != nil {
			return nil, err
		}
		id, ok := token.(string)
		switch {
		case !ok:
			return nil, fmt.Errorf("ID %#v is not a string", token)
		case id == "" || len(id) > businessIDLimit:
			return nil, fmt.Errorf("ID %q: not 1 to %d bytes", id, businessIDLimit)
		case strings.IndexFunc(id, unicode.IsControl) >= 0:
			return nil, fmt.Errorf("ID %q holds a control character", id)
		case seen[id]:
			return nil, fmt.Errorf("ID %q twice in the batch", id)
		case len(ids) == count:
			return nil, fmt.Errorf("more than the %d IDs asked for", count)
		}
		seen[id] = true
		ids = append(ids, id)
	}
	if err := expectToken(decoder, json.Delim(']')); err != nil {
		return nil, err
	}
	if len(ids) != count {
		return nil, fmt.Errorf("%d IDs, not the %d asked for", len(ids), count)
	}
	return ids, nil
}

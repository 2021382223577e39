// What a client takes from a node (docs/clients.md, "What a client
// accepts"): an answer of 200 to GET /v1/ids?count=N or
// /v1/segment/{tag}?count=N is taken only if
//
//   - asked with format=binary: its Content-Type is
//     application/octet-stream and its body 1 to N little-endian 64-bit
//     numbers, 8 bytes each, every one below 2^63 (parseBinary);
//   - otherwise (a node from before format=binary): its body is one JSON
//     object whose "ids" is an array of 1 to N JSON strings, each plain
//     ASCII decimal digits (no sign, space, escape, underscore, leading
//     zero but "0" itself, or other script's digits) below 2^63; the
//     object's other members are ignored, as a later node may add some
//     (parseBatch);
//
// and the numbers are strictly increasing, the first above the last ID of
// the batch before from the same endpoint, tag and issuer (batchOrder).
// The body's size and the call's deadline are transport.go's. Anything
// else is an invalid answer: the batch is discarded, counted
// (Stats.InvalidAnswers) and the endpoint backs off as one that did not
// answer.
//
// Thread-safety: parseBatch and parseBinary are pure; a batchOrder belongs
// to the refill goroutine.
package snowid

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// parseBinary reads format=binary's body: 1 to count numbers of 8 bytes.
func parseBinary(body []byte, count int) ([]int64, error) {
	if len(body) == 0 || len(body)%8 != 0 || len(body)/8 > count {
		return nil, fmt.Errorf("a binary body of %d bytes, not 8 to %d in steps of 8",
			len(body), 8*count)
	}
	ids := make([]int64, len(body)/8)
	for i := range ids {
		n := binary.LittleEndian.Uint64(body[8*i:])
		if n >= 1<<63 {
			return nil, fmt.Errorf("number %d of the batch is %d, not below 2^63", i, n)
		}
		ids[i] = int64(n)
		if i > 0 && ids[i] <= ids[i-1] {
			return nil, fmt.Errorf("ID %d after %d: not strictly increasing", ids[i], ids[i-1])
		}
	}
	return ids, nil
}

// parseBatch reads a JSON object whose "ids" holds 1 to count IDs; its other
// members are skipped (each must still be valid JSON).
func parseBatch(body []byte, count int) ([]int64, error) {
	decoder := json.NewDecoder(bytes.NewReader(body))
	if err := expectToken(decoder, json.Delim('{')); err != nil {
		return nil, err
	}
	var ids []int64
	for decoder.More() {
		name, err := decoder.Token()
		if err != nil {
			return nil, err
		}
		if name != "ids" {
			var skipped json.RawMessage
			if err := decoder.Decode(&skipped); err != nil {
				return nil, err
			}
			continue
		}
		if ids != nil {
			return nil, errors.New(`"ids" twice`)
		}
		if ids, err = parseIDs(decoder, count); err != nil {
			return nil, err
		}
	}
	if err := expectToken(decoder, json.Delim('}')); err != nil {
		return nil, err
	}
	if _, err := decoder.Token(); err != io.EOF {
		return nil, errors.New("bytes after the JSON object")
	}
	if ids == nil {
		return nil, errors.New(`no "ids"`)
	}
	return ids, nil
}

// parseIDs reads the array of "ids": 1 to count IDs, strictly increasing.
func parseIDs(decoder *json.Decoder, count int) ([]int64, error) {
	if err := expectToken(decoder, json.Delim('[')); err != nil {
		return nil, err
	}
	ids := make([]int64, 0, count)
	for decoder.More() {
		if len(ids) == count {
			return nil, fmt.Errorf("more than the %d IDs asked for", count)
		}
		var raw json.RawMessage
		if err := decoder.Decode(&raw); err != nil {
			return nil, err
		}
		id, err := parseID(raw)
		if err != nil {
			return nil, err
		}
		if n := len(ids); n > 0 && id <= ids[n-1] {
			return nil, fmt.Errorf("ID %d after %d: not strictly increasing", id, ids[n-1])
		}
		ids = append(ids, id)
	}
	if err := expectToken(decoder, json.Delim(']')); err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, errors.New("no IDs")
	}
	return ids, nil
}

func expectToken(decoder *json.Decoder, want json.Token) error {
	got, err := decoder.Token()
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("%v where %v belongs", got, want)
	}
	return nil
}

// parseID reads one element of "ids" as it came, quotes included: a JSON
// string of the decimal form (parseDecimal, id.go).
func parseID(raw []byte) (int64, error) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return 0, fmt.Errorf("ID %.40s is not a string of plain decimal digits", raw)
	}
	return parseDecimal(raw[1 : len(raw)-1])
}

// batchOrder: one endpoint's record of the last ID of each issuer's
// batches. A snowidd process names itself in every answer (the
// Snowid-Issuer header, a token drawn once per start) and each of its
// batches lies above its last, per tag, for as long as it runs; batches of
// different issuers are never compared, so that a proxy in front of
// several nodes, which hands out each one's in turn, is followed node by
// node.
//
// Bounded: it keeps the maxOrigins most recently seen (tag, issuer) pairs,
// and an issuer by its first maxIssuerBytes bytes (snowidd's are 16 hex
// digits). A proxy that names a new issuer per batch costs a bounded amount
// of memory; cutting an issuer can only merge two of them, which makes the
// check stricter, never looser.
type batchOrder struct {
	last map[batchOrigin]lastID
	uses uint64 // a clock of lookups, to find the least recently used
}

const (
	maxOrigins     = 1024
	maxIssuerBytes = 64
)

// batchOrigin: where a batch came from: a segment tag ("" for Snowflake
// IDs) and an issuer ("" if the answer named none).
type batchOrigin struct{ tag, issuer string }

type lastID struct {
	id   int64
	used uint64
}

// advance: if ids (strictly increasing, at least one) start above the last
// batch of the same tag and issuer, records their last ID and returns true;
// otherwise records nothing and returns false and that batch's last ID.
func (o *batchOrder) advance(tag, issuer string, ids []int64) (int64, bool) {
	if len(issuer) > maxIssuerBytes {
		issuer = issuer[:maxIssuerBytes]
	}
	origin := batchOrigin{tag, issuer}
	o.uses++
	before, seen := o.last[origin]
	if seen && ids[0] <= before.id {
		o.last[origin] = lastID{before.id, o.uses}
		return before.id, false
	}
	if o.last == nil {
		o.last = map[batchOrigin]lastID{}
	}
	if !seen && len(o.last) >= maxOrigins {
		o.forgetLeastRecent()
	}
	o.last[origin] = lastID{ids[len(ids)-1], o.uses}
	return 0, true
}

func (o *batchOrder) forgetLeastRecent() {
	var eldest batchOrigin
	oldest := ^uint64(0)
	for origin, last := range o.last {
		if last.used < oldest {
			eldest, oldest = origin, last.used
		}
	}
	delete(o.last, eldest)
}

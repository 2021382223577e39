// What a client takes from a node (batch.go): the batches it reads, every
// form of one it refuses, and the order it holds each issuer's batches to.
package snowid

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestParseBatchReadsOneToTheCountAskedFor(t *testing.T) {
	for body, want := range map[string][]int64{
		" {\"ids\" : [\"0\", \"7\",\"9223372036854775807\"]}\n": {0, 7, 9223372036854775807},
		`{"ids":["1"]}`:     {1},
		`{"ids":["1","2"]}`: {1, 2}, // fewer than asked for: taken
		// Members beside "ids" are ignored, before or after it, whatever
		// their value: a later node may add some.
		`{"ids":["1","2","3"],"more":1}`:                         {1, 2, 3},
		`{"issuer":"a1","ids":["4"],"x":{"ids":[1]},"y":[null]}`: {4},
	} {
		got, err := parseBatch([]byte(body), 3)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("parseBatch(%s) = %v, %v; want %v", body, got, err, want)
		}
	}
}

// docs/clients.md, "What a client accepts": each form a node or a proxy
// might send instead.
func TestParseBatchRefusesWhatBreaksTheRule(t *testing.T) {
	for _, body := range []string{
		`{"ids":[]}`,                               // none
		`{"ids":["1","2","3","4"]}`,                // more than asked for
		`{"ids":["1","3","3"]}`,                    // not strictly increasing
		`{"ids":["3","2","1"]}`,                    // descending
		`{"ids":["1","2","3",]}`,                   // trailing comma
		`{"ids":["1","2" "3"]}`,                    // no comma
		`{"ids":["1","2",3]}`,                      // a JSON number, not a string
		`{"ids":["1","2",3.5]}`,                    // a float
		`{"ids":["1","2","03"]}`,                   // leading zero
		`{"ids":["1","2","-3"]}`,                   // a sign
		`{"ids":["1","2","+3"]}`,                   // a plus sign
		`{"ids":["1","2","9223372036854775808"]}`,  // 2^63
		`{"ids":["1","2","18446744073709551616"]}`, // 2^64
		`{"ids":["1","2","99999999999999999999"]}`, // 20 digits
		`{"ids":["1","2","3 "]}`,                   // not only digits
		`{"ids":["1","2"," 3"]}`,                   // padded
		`{"ids":["1","2","0x3"]}`,                  // hex
		`{"ids":["1","2","3_0"]}`,                  // an underscore
		"{\"ids\":[\"1\",\"2\",\"\u0663\"]}",       // an Arabic-Indic digit
		`{"ids":["1","2","\u0033"]}`,               // an escaped digit
		`{"ids":["1","2",""]}`,                     // empty
		`{"ids":["1","2",null]}`,                   // null
		`{"ids":["1","2","3"],"more":}`,            // a member beside ids that is not JSON
		`{"ids":["1"],"ids":["2"]}`,                // ids twice
		`{"id":["1","2","3"]}`,                     // another name
		`{"ids":null}`,                             // no array
		`{"ids":["1","2","3"]}x`,                   // bytes after the object
		`{"ids":["1","2","3"]} {}`,                 // a second document
		`{"ids":["1","2","3"]`,                     // cut short
		`["1","2","3"]`,                            // not an object
		"<html><body>It works!</body></html>",
		"",
	} {
		if ids, err := parseBatch([]byte(body), 3); err == nil {
			t.Errorf("parseBatch(%s) = %v, want an error", body, ids)
		}
	}
}

// little: numbers as format=binary carries them, 8 bytes each, little-endian.
func little(numbers ...uint64) []byte {
	body := make([]byte, 0, 8*len(numbers))
	for _, n := range numbers {
		for i := 0; i < 8; i++ {
			body = append(body, byte(n>>(8*i)))
		}
	}
	return body
}

func TestParseBinaryReadsOneToTheCountAskedFor(t *testing.T) {
	for _, c := range []struct {
		body []byte
		want []int64
	}{
		{little(0, 7, 1<<63-1), []int64{0, 7, 1<<63 - 1}},
		{little(0x0102030405060708), []int64{0x0102030405060708}},
		{little(5, 6), []int64{5, 6}}, // fewer than asked for: taken
	} {
		got, err := parseBinary(c.body, 3)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("parseBinary(% x) = %v, %v; want %v", c.body, got, err, c.want)
		}
	}
}

// docs/clients.md, "Binary batches": each form a node or a proxy might send
// instead.
func TestParseBinaryRefusesWhatBreaksTheRule(t *testing.T) {
	for what, body := range map[string][]byte{
		"empty":               nil,
		"not a multiple of 8": little(1, 2)[:15],
		"more than asked for": little(1, 2, 3, 4),
		"the sign bit set":    little(1, 1<<63),
		"2^64 - 1":            little(1, ^uint64(0)),
		"repeated":            little(1, 2, 2),
		"descending":          little(3, 2, 1),
	} {
		if ids, err := parseBinary(body, 3); err == nil {
			t.Errorf("%s: parseBinary(% x) = %v, want an error", what, body, ids)
		}
	}
}

func TestBatchOrderHoldsEachIssuerAboveItsLast(t *testing.T) {
	var order batchOrder
	steps := []struct {
		tag, issuer string
		ids         []int64
		taken       bool
	}{
		{"", "a1", []int64{10, 20}, true},
		{"", "a1", []int64{20, 30}, false}, // not above 20
		{"", "a1", []int64{5}, false},      // behind
		{"", "a1", []int64{21}, true},
		{"", "b2", []int64{5, 6}, true}, // a proxy's other node
		{"", "a1", []int64{22}, true},
		{"order", "a1", []int64{1}, true}, // a tag of its own
		{"", "", []int64{1}, true},        // no issuer said
		{"", "", []int64{1}, false},
	}
	for i, step := range steps {
		if _, taken := order.advance(step.tag, step.issuer, step.ids); taken != step.taken {
			t.Fatalf("step %d %+v: taken %v", i, step, taken)
		}
	}
}

func TestBatchOrderRemembersTheMostRecentIssuersOnly(t *testing.T) {
	var order batchOrder
	order.advance("", "kept", []int64{100})
	for i := 0; i < 5*maxOrigins; i++ {
		if _, taken := order.advance("", fmt.Sprint("issuer-", i), []int64{int64(i)}); !taken {
			t.Fatalf("issuer-%d refused", i)
		}
		if i%100 == 0 {
			if _, taken := order.advance("", "kept", []int64{100}); taken {
				t.Fatalf("after %d issuers, the kept one's last was forgotten", i)
			}
		}
	}
	if len(order.last) > maxOrigins {
		t.Fatalf("%d origins kept, at most %d", len(order.last), maxOrigins)
	}
	// A long issuer is kept by its first maxIssuerBytes bytes.
	prefix := strings.Repeat("x", maxIssuerBytes)
	order.advance("", prefix+"1", []int64{50})
	if _, taken := order.advance("", prefix+"2", []int64{50}); taken {
		t.Fatal("two issuers with the same first 64 bytes were told apart")
	}
}

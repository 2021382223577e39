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
		`{"ids":["1","2","3"],"more":1}`,           // a member beside ids
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

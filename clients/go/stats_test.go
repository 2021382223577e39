// Stats: the counters every snowid client keeps (docs/clients.md, "Stats"),
// against a real node: calls, failed calls, IDs received, served and
// expired.
package snowid_test

import (
	"testing"
	"time"

	"snowid.io/snowid"
)

func TestStatsCountCallsAndIDsReceivedServedAndExpired(t *testing.T) {
	node := startNode(t, 0, 11)
	const maxAge = 150 * time.Millisecond
	client := openClient(t, snowid.Options{Endpoints: []string{node.URL}, MaxAge: maxAge})
	ids := make([]int64, 9)
	if err := client.NextN(ids); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Next(); err != nil {
		t.Fatal(err)
	}
	stats := client.Stats()
	if stats.Calls < 1 || stats.FailedCalls != 0 || stats.InvalidAnswers != 0 ||
		stats.IDsReceived < 1000 || stats.IDsServed != 10 || stats.IDsExpired != 0 {
		t.Fatalf("%+v after 10 IDs from a node up", stats)
	}
	// With the node gone, every ID left in the buffer expires unserved, and
	// the refills that follow fail.
	node.Kill()
	deadline := time.Now().Add(5 * time.Second)
	for {
		stats = client.Stats()
		if stats.IDsExpired == stats.IDsReceived-10 && stats.FailedCalls > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%+v: want every ID but the 10 served expired, and failed calls", stats)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if stats.IDsServed != 10 || stats.InvalidAnswers != 0 || stats.FailedCalls > stats.Calls {
		t.Fatalf("%+v at the end", stats)
	}
}

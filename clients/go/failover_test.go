// The acceptance test of issue 24: four goroutines draw 1,000,000 IDs
// through one client with two real nodes while one is killed with SIGKILL
// part-way. No call may fail, no ID may repeat, every ID must decode (under
// /v1/info's layout) to one of the two nodes, and the killed node's IDs must
// not be stamped after its death.
package snowid_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"snowid.io/snowid"
)

func TestOneMillionIDsFromFourGoroutinesWhileANodeIsKilled(t *testing.T) {
	const total, goroutines = 1_000_000, 4
	const killAfter = total * 3 / 10
	a, b := startNode(t, 1, 1), startNode(t, 2, 7)
	// Four goroutines drain faster than a node issues (4,096 IDs per ms), so
	// callers wait for refills: EmptyWait is patientWait (2 s), which still
	// fails a client that does not fail over (A stays down for good).
	client := openClient(t, snowid.Options{Endpoints: []string{a.URL, b.URL}})

	var drawn atomic.Int64
	var killedAt time.Time
	var slowest [goroutines]time.Duration
	results := make([][]int64, goroutines)
	failures := make(chan error, goroutines)
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			ids := make([]int64, 0, total/goroutines)
			for len(ids) < total/goroutines {
				started := time.Now()
				id, err := client.Next()
				if elapsed := time.Since(started); elapsed > slowest[g] {
					slowest[g] = elapsed
				}
				if err != nil {
					failures <- fmt.Errorf("after %d IDs, a call of %v: %w", drawn.Load(),
						time.Since(started), err)
					return
				}
				ids = append(ids, id)
				if drawn.Add(1) == killAfter {
					a.Kill()
					killedAt = time.Now()
				}
			}
			results[g] = ids
		}(g)
	}
	wg.Wait()
	close(failures)
	for err := range failures {
		t.Fatalf("a call failed while node B was up: %v", err)
	}
	t.Logf("slowest call per goroutine: %v; %+v", slowest, client.Stats())

	var all []int64
	for _, ids := range results {
		all = append(all, ids...)
	}
	if len(all) != total {
		t.Fatalf("%d IDs drawn, want %d", len(all), total)
	}
	requireDistinct(t, all)
	requireFromTheTwoNodes(t, client, all, killedAt)
	if stats := client.Stats(); stats.IDsReceived/stats.Calls < 100 {
		t.Fatalf("%+v: fewer than 100 IDs per round trip", stats)
	}
}

// requireFromTheTwoNodes: every ID decodes to node A (datacenter 1, worker
// 1) or B (2, 7), both served some, and none of A's is stamped after A was
// killed (plus 50 ms for the clock's unit and a batch's spread).
func requireFromTheTwoNodes(t *testing.T, client *snowid.Client, ids []int64,
	killedAt time.Time) {
	t.Helper()
	layout, err := client.Layout()
	if err != nil {
		t.Fatal(err)
	}
	fromA, fromB := 0, 0
	latestA := killedAt.Add(50 * time.Millisecond)
	for _, id := range ids {
		fields, err := layout.Decode(id)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case fields.Datacenter == 1 && fields.Worker == 1:
			fromA++
			if fields.Time.After(latestA) {
				t.Fatalf("ID %d of the killed node is stamped %v, after its kill at %v",
					id, fields.Time, killedAt)
			}
		case fields.Datacenter == 2 && fields.Worker == 7:
			fromB++
		default:
			t.Fatalf("ID %d decodes to %+v, neither node", id, fields)
		}
	}
	if fromA == 0 || fromB == 0 {
		t.Fatalf("%d IDs from A, %d from B: the client should have served from both", fromA, fromB)
	}
	t.Logf("%d IDs from node A (killed), %d from node B", fromA, fromB)
}

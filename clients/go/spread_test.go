// Spread: a fleet of clients given the same endpoint list loads every node
// alike, and when one node dies, the others alike, with no error at the
// callers. 30 clients in this one process (each its own Client, as 30
// application instances would have) against 3 real nodes; the shares are
// the nodes' own counts (/metrics, snowid_ids_issued_total).
package snowid_test

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"snowid.io/snowid"
	"snowid.io/snowid/internal/testnode"
)

const spreadAgent = "spread"

// issued: the IDs a node issued to the spread test's clients.
func issued(t *testing.T, node *testnode.Node) int64 {
	t.Helper()
	response, err := http.Get(node.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer response.Body.Close()
	want := `snowid_ids_issued_total{agent="` + spreadAgent + `"} `
	for lines := bufio.NewScanner(response.Body); lines.Scan(); {
		if strings.HasPrefix(lines.Text(), want) {
			count, err := strconv.ParseInt(strings.TrimPrefix(lines.Text(), want), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return count
		}
	}
	return 0
}

// requireShares fails the test unless every count is within `within` (a
// fraction) of their mean.
func requireShares(t *testing.T, what string, counts []int64, within float64) {
	t.Helper()
	var total int64
	for _, n := range counts {
		total += n
	}
	mean := float64(total) / float64(len(counts))
	t.Logf("%s: IDs per node %v (mean %.0f)", what, counts, mean)
	for i, n := range counts {
		if off := float64(n)/mean - 1; off > within || off < -within || mean == 0 {
			t.Fatalf("%s: node %d issued %d, %+.0f%% off the mean %.0f (at most ±%.0f%%)",
				what, i, n, 100*off, mean, 100*within)
		}
	}
}

func TestThirtyClientsSpreadOverThreeNodesAndOverTwoAfterAKill(t *testing.T) {
	nodes := []*testnode.Node{startNode(t, 0, 21), startNode(t, 0, 22), startNode(t, 0, 23)}
	endpoints := []string{nodes[0].URL, nodes[1].URL, nodes[2].URL}
	// Batches of 500, so that a few seconds hold about 900 refills per
	// phase: a share then strays from its mean by about 5% (one standard
	// deviation; the bounds are 4 of them). Each client draws 5,000 IDs/s,
	// paced, and refills at 80% of a batch (LowWater 0.8: 80 ms ahead), so
	// that a call slowed by the machine's load seldom makes the client ask
	// a second node (which favours the nodes that answer sooner). EmptyWait
	// of 10 s: on the shared machine (load 30 and more at times) a refill
	// can wait seconds for a core; a client that fails over wrongly still
	// fails, since node 3 stays down.
	const clients, rate, phase = 30, 5000, 3 * time.Second
	var stop atomic.Bool
	var served, failed atomic.Int64
	errs := make(chan error, clients)
	var wg sync.WaitGroup
	var all []*snowid.Client
	for i := 0; i < clients; i++ {
		client := openClient(t, snowid.Options{Endpoints: endpoints, Agent: spreadAgent,
			InitialBatch: 500, MaxBatch: 500, LowWater: 0.8, EmptyWait: 10 * time.Second})
		all = append(all, client)
		wg.Add(1)
		go func() {
			defer wg.Done()
			began := time.Now()
			for n := 0; !stop.Load(); n++ {
				if _, err := client.Next(); err != nil {
					if failed.Add(1) <= clients {
						errs <- err
					}
				} else {
					served.Add(1)
				}
				if n%50 == 49 { // pace: 50 IDs per 10 ms
					time.Sleep(time.Until(began.Add(time.Duration(n+1) * time.Second / rate)))
				}
			}
		}()
	}
	time.Sleep(phase)
	before := []int64{issued(t, nodes[0]), issued(t, nodes[1]), issued(t, nodes[2])}
	nodes[2].Kill()
	time.Sleep(phase)
	after := []int64{issued(t, nodes[0]) - before[0], issued(t, nodes[1]) - before[1]}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a caller's error: %v", err)
	}
	if failed.Load() > 0 {
		t.Fatalf("%d calls failed of %d", failed.Load(), failed.Load()+served.Load())
	}
	var calls, failedCalls int64
	for _, client := range all {
		calls, failedCalls = calls+client.Stats().Calls, failedCalls+client.Stats().FailedCalls
	}
	t.Logf("%d IDs served, %d calls, %d of them failed", served.Load(), calls, failedCalls)
	requireShares(t, "3 nodes", before, 0.20)
	requireShares(t, "2 nodes after the third was killed", after, 0.25)
}

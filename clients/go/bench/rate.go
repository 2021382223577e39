// The sustained rate at the default options against a plain in-process
// Snowflake generator, in one run: the comparison of docs/performance.md
// (2026-12-02).
//
//	(d) the in-process generator a user would replace: one sync.Mutex, the
//	    Twitter layout (41 bits of ms, 10 of worker, 12 of sequence), and
//	    when the 4,096 sequence numbers of a millisecond are used up it
//	    waits (spins) for the next millisecond: at most 4,096 IDs per ms;
//	(e) Client.Next with snowid.DefaultOptions() and the endpoints of
//	    `nodes` snowidd nodes started with their defaults (12 sequence
//	    bits, max_batch 10,000): each node issues at most 4,096 IDs per ms
//	    too, so more than one node is what can pass (d).
//
// Each: g goroutines call as fast as they can for `seconds` (after one
// second of warm-up, in which the client's batch grows and its
// connections open); IDs per second in all.
package main

import (
	"bufio"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"snowid.io/snowid"
	"snowid.io/snowid/internal/testnode"
)

const (
	lockedSequenceBits = 12
	lockedWorkerBits   = 10
	lockedSequenceMask = 1<<lockedSequenceBits - 1
	lockedWorker       = 1
)

type lockedGenerator struct {
	mu       sync.Mutex
	lastMs   int64
	sequence int64
	base     time.Time // with a monotonic reading
	baseMs   int64     // base in ms since Twitter's epoch
}

func newLockedGenerator() *lockedGenerator {
	now := time.Now()
	return &lockedGenerator{base: now, baseMs: now.UnixMilli() - twitterEpochMs}
}

func (g *lockedGenerator) millis() int64 { return g.baseMs + time.Since(g.base).Milliseconds() }

func (g *lockedGenerator) next() int64 {
	g.mu.Lock()
	now := g.millis()
	if now <= g.lastMs {
		now = g.lastMs
		g.sequence = (g.sequence + 1) & lockedSequenceMask
		if g.sequence == 0 { // this ms is used up: wait for the next
			for now <= g.lastMs {
				now = g.millis()
			}
		}
	} else {
		g.sequence = 0
	}
	g.lastMs = now
	id := now<<(lockedWorkerBits+lockedSequenceBits) | lockedWorker<<lockedSequenceBits |
		g.sequence
	g.mu.Unlock()
	return id
}

// sustained: g goroutines call take as fast as they can, one second of
// warm-up then `seconds`; IDs per second and the calls that failed.
func sustained(g int, seconds float64, take func() error) (float64, int64) {
	var counting, stop atomic.Bool
	var counted, failed atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < g; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				n := int64(0)
				for i := 0; i < 1000; i++ {
					if take() != nil {
						failed.Add(1)
					} else {
						n++
					}
				}
				if counting.Load() {
					counted.Add(n)
				}
			}
		}()
	}
	time.Sleep(time.Second)
	counting.Store(true)
	began := time.Now()
	time.Sleep(time.Duration(seconds * float64(time.Second)))
	counting.Store(false)
	took := time.Since(began)
	stop.Store(true)
	wg.Wait()
	return float64(counted.Load()) / took.Seconds(), failed.Load()
}

// rates prints (d), (e) and (e)/(d) per goroutine count.
func rates(binary string, goroutines []int, nodeCount int, seconds float64) {
	var endpoints []string
	var nodes []*testnode.Node
	for i := 0; i < nodeCount; i++ {
		node, err := testnode.Start(binary, 0, int64(11+i))
		check(err)
		defer node.Stop()
		nodes = append(nodes, node)
		endpoints = append(endpoints, node.URL)
	}
	fmt.Printf("\nsustained rate, IDs/s, %.0f s after 1 s of warm-up; (e): DefaultOptions, %d "+
		"nodes with their defaults\n", seconds, nodeCount)
	fmt.Println("goroutines | (d) in-process, locked | (e) client | (e)/(d) | calls failed | " +
		"client calls (failed) | IDs per call")
	for _, g := range goroutines {
		generator := newLockedGenerator()
		var sink atomic.Int64
		d, _ := sustained(g, seconds, func() error { sink.Add(generator.next() & 1); return nil })
		options := snowid.DefaultOptions()
		options.Endpoints = endpoints
		client, err := snowid.Open(options)
		check(err)
		e, failed := sustained(g, seconds, func() error { _, err := client.Next(); return err })
		stats := client.Stats()
		client.Close()
		fmt.Printf("%10d | %.0f | %.0f | %.2f | %d | %d (%d) | %.0f\n", g, d, e, e/d, failed,
			stats.Calls, stats.FailedCalls, float64(stats.IDsReceived)/float64(stats.Calls))
	}
	for i, node := range nodes {
		fmt.Printf("node %d: %s\n", i, nodeGauges(node.URL))
	}
}

// nodeGauges: what a node says of its issuing (how far ahead of its clock
// it ran: a node that issues above 4,096 IDs per ms runs ahead).
func nodeGauges(url string) string {
	response, err := http.Get(url + "/metrics")
	if err != nil {
		return err.Error()
	}
	defer response.Body.Close()
	var found []string
	for lines := bufio.NewScanner(response.Body); lines.Scan(); {
		line := lines.Text()
		for _, name := range []string{"snowid_ids_issued_total{agent=\"none\"}",
			"snowid_drift_ahead_seconds"} {
			if strings.HasPrefix(line, name+" ") {
				value, _ := strconv.ParseFloat(strings.Fields(line)[1], 64)
				found = append(found, fmt.Sprintf("%s %g", name, value))
			}
		}
	}
	return strings.Join(found, ", ")
}

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

// rates prints (d), (e) and (e)/(d) per goroutine count, with fresh nodes
// for each (e), and how far ahead of its clock each node ran by the end of
// it: a node ahead issued above its 4,096 IDs per ms for a while, which it
// cannot keep up (at most 1 s ahead).
func rates(binary string, goroutines []int, nodeCount int, seconds float64) {
	fmt.Printf("\nsustained rate, IDs/s, %.0f s after 1 s of warm-up; (e): DefaultOptions, %d "+
		"nodes with their defaults (at most %d IDs/s sustained)\n", seconds, nodeCount,
		nodeCount*4_096_000)
	fmt.Println("goroutines | (d) in-process, locked | (e) client | (e)/(d) | (e)/4,096,000 | " +
		"calls failed | client calls (failed) | IDs per call | nodes ahead of their clocks, s")
	for _, g := range goroutines {
		generator := newLockedGenerator()
		var sink atomic.Int64
		d, _ := sustained(g, seconds, func() error { sink.Add(generator.next() & 1); return nil })
		var endpoints []string
		var nodes []*testnode.Node
		for i := 0; i < nodeCount; i++ {
			node, err := testnode.Start(binary, 0, int64(11+i))
			check(err)
			nodes = append(nodes, node)
			endpoints = append(endpoints, node.URL)
		}
		options := snowid.DefaultOptions()
		options.Endpoints = endpoints
		client, err := snowid.Open(options)
		check(err)
		e, failed := sustained(g, seconds, func() error { _, err := client.Next(); return err })
		stats := client.Stats()
		client.Close()
		var ahead []string
		for _, node := range nodes {
			ahead = append(ahead, fmt.Sprintf("%.2f", driftAhead(node.URL)))
			node.Stop()
		}
		fmt.Printf("%10d | %.0f | %.0f | %.2f | %.2f | %d | %d (%d) | %.0f | %s\n", g, d, e, e/d,
			e/4_096_000, failed, stats.Calls, stats.FailedCalls,
			float64(stats.IDsReceived)/float64(stats.Calls), strings.Join(ahead, " "))
	}
}

// driftAhead: how far ahead of its clock a node's last ID is, in seconds
// (its /metrics, snowid_drift_ahead_seconds).
func driftAhead(url string) float64 {
	response, err := http.Get(url + "/metrics")
	check(err)
	defer response.Body.Close()
	for lines := bufio.NewScanner(response.Body); lines.Scan(); {
		if fields := strings.Fields(lines.Text()); len(fields) == 2 &&
			fields[0] == "snowid_drift_ahead_seconds" {
			value, err := strconv.ParseFloat(fields[1], 64)
			check(err)
			return value
		}
	}
	return 0
}

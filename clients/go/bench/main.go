// Command bench measures the Go client in one run, per goroutine, against
// one snowidd it starts on loopback ($SNOWIDD):
//
//	(a) Client.Next from the buffer (a full buffer, no refill during the round),
//	(b) the fastest in-process Snowflake generator this program can write in
//	    Go: one compare-and-swap on a packed (ms, sequence) state and a
//	    monotonic clock read per ID, the language's floor,
//	(c) one HTTP round trip per ID: GET /v1/id on a kept-alive connection,
//
// and the IDs per HTTP round trip the client makes under steady load with
// its default options. The node's layout has 16 sequence bits (65.5 M IDs/s)
// and max_batch 1,000,000, so that the node's cap is not what is measured.
// Then the sustained rate at the default options against nodes with their
// defaults, beside an in-process generator's (rate.go).
//
// Usage: SNOWIDD=/path/to/snowidd go run ./bench [-goroutines 1,2,4] [-rounds 3]
// [-rate-goroutines 1,4] [-rate-nodes 2] [-rate-seconds 3] [-only-rate]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"snowid.io/snowid"
	"snowid.io/snowid/internal/testnode"
)

func main() {
	goroutineList := flag.String("goroutines", "1,2,4", "goroutine counts to run each part with")
	rounds := flag.Int("rounds", 3, "rounds per part and goroutine count (the median is shown)")
	bufferIDs := flag.Int("buffer-ids", 1_000_000, "IDs buffered before each round of (a)")
	httpIDs := flag.Int("http-ids", 10_000, "IDs per goroutine for (c)")
	rateGoroutines := flag.String("rate-goroutines", "1,4", "goroutine counts of (d) and (e)")
	rateNodes := flag.Int("rate-nodes", 2, "nodes the client of (e) draws from")
	rateSeconds := flag.Float64("rate-seconds", 3, "seconds each of (d) and (e) is measured")
	onlyRate := flag.Bool("only-rate", false, "measure (d) and (e) only")
	flag.Parse()
	binary, err := testnode.Binary()
	check(err)
	fmt.Printf("Go %s, GOMAXPROCS %d, %s\n", runtime.Version(), runtime.GOMAXPROCS(0), cpuModel())
	if *onlyRate {
		rates(binary, counts(*rateGoroutines), *rateNodes, *rateSeconds)
		return
	}
	node, err := testnode.Start(binary, 0, 1, "--max-batch", "1000000", "--datacenter-bits", "0",
		"--worker-bits", "6", "--sequence-bits", "16")
	check(err)
	stopNode = node.Stop
	defer node.Stop()
	fmt.Println("ns per ID per goroutine, wall (thread CPU)")
	fmt.Println("goroutines | (a) Next | (b) floor | (a)/(b) | (c) HTTP | (c)/(a)")
	for _, g := range counts(*goroutineList) {
		a := median(*rounds, func() cost { return fromBuffer(node.URL, g, *bufferIDs) })
		b := median(*rounds, func() cost { return floor(g, *bufferIDs) })
		c := median(*rounds, func() cost { return roundTrips(node.URL, g, *httpIDs) })
		fmt.Printf("%10d | %.1f (%.1f) | %.1f (%.1f) | %.2f (%.2f) | %.0f (%.0f) | %.0f (%.0f)\n",
			g, a.wall, a.cpu, b.wall, b.cpu, a.wall/b.wall, a.cpu/b.cpu, c.wall, c.cpu,
			c.wall/a.wall, c.cpu/a.cpu)
	}
	steady(node.URL, "full speed, 4 goroutines", 4, 0)
	steady(node.URL, "100,000 IDs/s, 4 goroutines", 4, 100_000)
	node.Stop()
	rates(binary, counts(*rateGoroutines), *rateNodes, *rateSeconds)
}

// counts reads a list like "1,2,4".
func counts(list string) []int {
	var out []int
	for _, field := range strings.Split(list, ",") {
		n, err := strconv.Atoi(field)
		check(err)
		out = append(out, n)
	}
	return out
}

// fromBuffer: a client whose first batch is `ids` IDs; once they are
// buffered, g goroutines take 90% of them; ns per ID per goroutine.
func fromBuffer(url string, g, ids int) cost {
	options := snowid.DefaultOptions()
	options.Endpoints = []string{url}
	options.InitialBatch, options.MaxBatch, options.LowWater = ids, ids, 0.01
	options.CallDeadline = 10 * time.Second
	client, err := snowid.Open(options)
	check(err)
	defer client.Close()
	for client.Stats().IDsReceived < int64(ids) {
		time.Sleep(time.Millisecond)
	}
	return perGoroutine(g, ids*9/10, func(n int) {
		for i := 0; i < n; i++ {
			_, err := client.Next()
			check(err)
		}
	})
}

// roundTrips: g goroutines each with its own kept-alive connection, one
// GET /v1/id per ID, the answer parsed as the client parses its batches.
func roundTrips(url string, g, each int) cost {
	return perGoroutine(g, each*g, func(n int) {
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
		defer client.CloseIdleConnections()
		for i := 0; i < n; i++ {
			response, err := client.Get(url + "/v1/id")
			check(err)
			body, err := io.ReadAll(response.Body)
			response.Body.Close()
			check(err)
			var answer struct {
				ID string `json:"id"`
			}
			check(json.Unmarshal(body, &answer))
			_, err = strconv.ParseInt(answer.ID, 10, 64)
			check(err)
		}
	})
}

// steady: g goroutines draw for 3 s, at `rate` IDs/s together (0: as fast
// as they can), through a client with the default options but EmptyWait
// (2 s: on a busy machine a refill can take longer than 200 ms; calls that
// still fail are counted).
func steady(url, what string, g, rate int) {
	options := snowid.DefaultOptions()
	options.Endpoints, options.EmptyWait = []string{url}, 2*time.Second
	client, err := snowid.Open(options)
	check(err)
	defer client.Close()
	const duration = 3 * time.Second
	var wg sync.WaitGroup
	served, failed := make([]int, g), make([]int, g)
	start := time.Now()
	for w := 0; w < g; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for time.Since(start) < duration {
				for i := 0; i < 1000; i++ {
					if _, err := client.Next(); err != nil {
						failed[w]++
					} else {
						served[w]++
					}
				}
				if rate > 0 { // pace: this goroutine's share of `rate`
					due := start.Add(time.Duration(float64(served[w]) / float64(rate/g) * 1e9))
					time.Sleep(time.Until(due))
				}
			}
		}(w)
	}
	wg.Wait()
	total, failures := 0, 0
	for w := range served {
		total, failures = total+served[w], failures+failed[w]
	}
	stats := client.Stats()
	fmt.Printf("steady load, %s: %d IDs served in %v (%.0f IDs/s, %d calls failed), %d round "+
		"trips (%d failed), %.0f IDs served per round trip\n", what, total, duration,
		float64(total)/duration.Seconds(), failures, stats.Calls, stats.FailedCalls,
		float64(total)/float64(stats.Calls))
}

// perGoroutine runs work(total/g) on g goroutines at once, each locked to
// its own thread, and returns the means over goroutines of each one's wall
// ns per ID and thread CPU ns per ID (CLOCK_THREAD_CPUTIME_ID: the time the
// machine's other load takes from the thread is not in it).
func perGoroutine(g, total int, work func(n int)) cost {
	n := total / g
	costs := make([]cost, g)
	var ready, wg sync.WaitGroup
	ready.Add(1)
	for w := 0; w < g; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			ready.Wait()
			started, cpu := time.Now(), threadCPU()
			work(n)
			costs[w] = cost{float64(time.Since(started).Nanoseconds()) / float64(n),
				float64(threadCPU()-cpu) / float64(n)}
		}(w)
	}
	ready.Done()
	wg.Wait()
	var mean cost
	for _, c := range costs {
		mean.wall += c.wall / float64(g)
		mean.cpu += c.cpu / float64(g)
	}
	return mean
}

// cost: ns per ID.
type cost struct{ wall, cpu float64 }

// threadCPU: the calling thread's CPU time in ns.
func threadCPU() int64 {
	var ts syscall.Timespec
	const clockThreadCPUTimeID = 3
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID,
		uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}

// median: the round with the median wall time.
func median(rounds int, measure func() cost) cost {
	values := make([]cost, rounds)
	for i := range values {
		values[i] = measure()
	}
	sort.Slice(values, func(i, j int) bool { return values[i].wall < values[j].wall })
	return values[rounds/2]
}

func cpuModel() string {
	info, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for _, line := range strings.Split(string(info), "\n") {
		if strings.HasPrefix(line, "model name") {
			return strings.TrimSpace(line[strings.Index(line, ":")+1:])
		}
	}
	return "unknown CPU"
}

// stopNode stops the benchmark's node; check calls it before exiting.
var stopNode = func() {}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		stopNode()
		os.Exit(1)
	}
}

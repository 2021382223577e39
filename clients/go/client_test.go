// The client against real snowidd nodes: IDs, batches, segment tags,
// decode, the token and the agent, the bounded wait, the maximum age and
// Close.
package snowid_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"snowid.io/snowid"
)

func TestNextAndNextNHandOutIncreasingDistinctIDs(t *testing.T) {
	node := startNode(t, 1, 3)
	client := openClient(t, snowid.Options{Endpoints: []string{node.URL}})
	ids := make([]int64, 0, 30_000)
	for len(ids) < 5000 {
		id, err := client.Next()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	batch := make([]int64, 25_000)
	if err := client.NextN(batch); err != nil {
		t.Fatal(err)
	}
	ids = append(ids, batch...)
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			t.Fatalf("ID %d after %d: one node, one buffer must hand out increasing IDs",
				ids[i], ids[i-1])
		}
	}
	stats := client.Stats()
	if stats.IDsReceived < int64(len(ids)) || stats.Calls > stats.IDsReceived/1000 {
		t.Fatalf("%+v for %d IDs: want batches of at least InitialBatch (1000)", stats, len(ids))
	}
}

func TestDecodeMatchesTheNodesOwnDecode(t *testing.T) {
	node := startNode(t, 2, 7)
	client := openClient(t, snowid.Options{Endpoints: []string{node.URL}})
	for i := 0; i < 50; i++ {
		id, err := client.Next()
		if err != nil {
			t.Fatal(err)
		}
		got, err := client.Decode(id)
		if err != nil {
			t.Fatal(err)
		}
		var want struct {
			TimestampMs int64  `json:"timestamp_ms"`
			Time        string `json:"time"`
			Datacenter  int64  `json:"datacenter"`
			Worker      int64  `json:"worker"`
			Sequence    int64  `json:"sequence"`
		}
		getJSON(t, node.URL+"/v1/decode/"+strconv.FormatInt(id, 10), &want)
		if got.TimestampMs != want.TimestampMs || got.Datacenter != want.Datacenter ||
			got.Worker != want.Worker || got.Sequence != want.Sequence ||
			got.Datacenter != 2 || got.Worker != 7 {
			t.Fatalf("Decode(%d) = %+v, /v1/decode says %+v", id, got, want)
		}
		if parsed, err := time.Parse(time.RFC3339Nano, want.Time); err != nil ||
			!parsed.Equal(got.Time) {
			t.Fatalf("Decode(%d).Time = %v, /v1/decode says %s (%v)", id, got.Time, want.Time, err)
		}
	}
	if _, err := client.Decode(-1); !errors.Is(err, snowid.ErrInvalidArgument) {
		t.Fatalf("Decode(-1): %v, want ErrInvalidArgument", err)
	}
}

func TestSegmentTagNumbersComeInOrderFromTheirOwnBuffer(t *testing.T) {
	node := startNode(t, 0, 1, "--segment-auto-create", "true")
	client := openClient(t, snowid.Options{Endpoints: []string{node.URL}})
	const each, takers = 1500, 2
	got := make([][]int64, takers)
	var wg sync.WaitGroup
	errs := make(chan error, takers)
	for w := 0; w < takers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				number, err := client.NextTag("orders.eu-1")
				if err != nil {
					errs <- err
					return
				}
				got[w] = append(got[w], number)
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	seen := make([]bool, each*takers+1)
	for _, numbers := range got {
		for i, n := range numbers {
			if n < 1 || n > each*takers || seen[n] || (i > 0 && n <= numbers[i-1]) {
				t.Fatalf("number %d: want 1..%d, each once, increasing per taker", n, each*takers)
			}
			seen[n] = true
		}
	}
	// Snowflake IDs are a buffer of their own: they still decode to the node.
	if id, err := client.Next(); err != nil || id < 1<<22 {
		t.Fatalf("Next after the tag: %d, %v", id, err)
	}
}

func TestUnknownTagIsNotFoundAtOnce(t *testing.T) {
	node := startNode(t, 0, 2)
	client := openClient(t, snowid.Options{Endpoints: []string{node.URL},
		EmptyWait: 5 * time.Second})
	started := time.Now()
	_, err := client.NextTag("no-such-tag")
	if !errors.Is(err, snowid.ErrNotFound) || !strings.Contains(err.Error(), "404") {
		t.Fatalf("NextTag(unknown): %v, want ErrNotFound with the node's 404", err)
	}
	if elapsed := time.Since(started); elapsed > 2*time.Second {
		t.Fatalf("the refusal took %v: a caller must not wait out EmptyWait for it", elapsed)
	}
	if _, err := client.NextTag(""); !errors.Is(err, snowid.ErrInvalidArgument) {
		t.Fatalf("NextTag(\"\"): %v, want ErrInvalidArgument", err)
	}
}

func TestRefusedTokenSurfacesAsErrRefused(t *testing.T) {
	node := startNode(t, 0, 3, "--bearer-token", "s3cret")
	for _, token := range []string{"", "wrong"} {
		client := openClient(t, snowid.Options{Endpoints: []string{node.URL}, BearerToken: token,
			EmptyWait: 5 * time.Second})
		started := time.Now()
		_, err := client.Next()
		if !errors.Is(err, snowid.ErrRefused) || !strings.Contains(err.Error(), "401") {
			t.Fatalf("token %q: %v, want ErrRefused with the node's 401", token, err)
		}
		if elapsed := time.Since(started); elapsed > 2*time.Second {
			t.Fatalf("token %q: the refusal took %v, not at once", token, elapsed)
		}
		client.Close()
	}
	client := openClient(t, snowid.Options{Endpoints: []string{node.URL}, BearerToken: "s3cret"})
	if _, err := client.Next(); err != nil {
		t.Fatalf("with the right token: %v", err)
	}
	if _, err := client.Decode(1 << 40); err != nil {
		t.Fatalf("Decode reads /v1/info with the token: %v", err)
	}
}

func TestAgentIsCountedByTheNode(t *testing.T) {
	node := startNode(t, 0, 4)
	client := openClient(t, snowid.Options{Endpoints: []string{node.URL}, Agent: "billing-2"})
	if _, err := client.Next(); err != nil {
		t.Fatal(err)
	}
	response, err := http.Get(node.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer response.Body.Close()
	metrics, _ := io.ReadAll(response.Body)
	want := fmt.Sprintf(`snowid_ids_issued_total{agent="billing-2"} %d`, client.Stats().IDsReceived)
	if !strings.Contains(string(metrics), want) {
		t.Fatalf("/metrics lacks %q", want)
	}
}

func TestEmptyBufferReturnsUnavailableWithinEmptyWait(t *testing.T) {
	a, b := startNode(t, 1, 1), startNode(t, 2, 2)
	const wait = 200 * time.Millisecond
	client := openClient(t, snowid.Options{Endpoints: []string{a.URL, b.URL}, EmptyWait: wait,
		InitialBatch: 50, MaxBatch: 50})
	if _, err := client.Next(); err != nil {
		t.Fatal(err)
	}
	a.Kill()
	b.Kill()
	for i := 0; ; i++ {
		started := time.Now()
		_, err := client.Next()
		elapsed := time.Since(started)
		if err == nil {
			if i > 1000 {
				t.Fatal("IDs keep coming with both nodes down")
			}
			continue
		}
		if !errors.Is(err, snowid.ErrUnavailable) {
			t.Fatalf("both nodes down: %v, want ErrUnavailable", err)
		}
		if elapsed > wait+raceSlowdown*300*time.Millisecond {
			t.Fatalf("Next returned after %v, EmptyWait is %v", elapsed, wait)
		}
		return
	}
}

func TestEveryCallHasTheDeadline(t *testing.T) {
	// A node that accepts and never answers, then a closed port: the client
	// gives up on the first after CallDeadline and reports both as down.
	client := openClient(t, snowid.Options{
		Endpoints:    []string{silentEndpoint(t), closedEndpoint(t)},
		CallDeadline: 100 * time.Millisecond, EmptyWait: 400 * time.Millisecond,
		StartWait: 400 * time.Millisecond})
	started := time.Now()
	_, err := client.Next()
	elapsed := time.Since(started)
	if !errors.Is(err, snowid.ErrUnavailable) {
		t.Fatalf("%v, want ErrUnavailable", err)
	}
	if elapsed < 350*time.Millisecond || elapsed > 400*time.Millisecond+raceSlowdown*500*time.Millisecond {
		t.Fatalf("Next returned after %v, want about EmptyWait (400ms)", elapsed)
	}
	if stats := client.Stats(); stats.FailedCalls < 2 {
		t.Fatalf("%+v: both endpoints should have been tried and failed", stats)
	}
}

func TestBufferedIDsOlderThanMaxAgeAreDropped(t *testing.T) {
	node := startNode(t, 0, 5)
	const maxAge = 100 * time.Millisecond
	// EmptyWait: long enough for a refill under load, short for the last wait.
	client := openClient(t, snowid.Options{Endpoints: []string{node.URL}, MaxAge: maxAge,
		EmptyWait: time.Second})
	if _, err := client.Next(); err != nil {
		t.Fatal(err)
	}
	// While the node is up, an ID taken after a pause is a fresh one.
	time.Sleep(3 * maxAge)
	id, err := client.Next()
	takenAt := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	fields, err := client.Decode(id)
	if err != nil {
		t.Fatal(err)
	}
	if age := takenAt.Sub(fields.Time); age > maxAge+50*time.Millisecond {
		t.Fatalf("ID %d was issued %v ago; MaxAge is %v", id, age, maxAge)
	}
	// With the node gone, the ~999 IDs still buffered expire: none comes out.
	node.Kill()
	time.Sleep(2 * maxAge)
	if id, err := client.Next(); !errors.Is(err, snowid.ErrUnavailable) {
		t.Fatalf("Next after MaxAge with the node down = %d, %v; want ErrUnavailable", id, err)
	}
}

func TestCloseStopsARefillInFlightPromptly(t *testing.T) {
	client, err := snowid.Open(withDefaults(snowid.Options{
		Endpoints: []string{silentEndpoint(t)}, CallDeadline: 10 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // the first refill is now waiting for an answer
	started := time.Now()
	client.Close()
	if elapsed := time.Since(started); elapsed > 500*time.Millisecond {
		t.Fatalf("Close took %v with a call in flight", elapsed)
	}
	if _, err := client.Next(); !errors.Is(err, snowid.ErrClosed) {
		t.Fatalf("Next after Close: %v, want ErrClosed", err)
	}
	if err := client.NextN(make([]int64, 3)); !errors.Is(err, snowid.ErrClosed) {
		t.Fatalf("NextN after Close: %v, want ErrClosed", err)
	}
	client.Close() // idempotent
}

func TestANodesLowerMaxBatchCapsTheBatch(t *testing.T) {
	// The node answers 400 to count=1000; its /v1/info says max_batch 300.
	node := startNode(t, 0, 6, "--max-batch", "300")
	client := openClient(t, snowid.Options{Endpoints: []string{node.URL}})
	ids := make([]int64, 2000)
	if err := client.NextN(ids); err != nil {
		t.Fatal(err)
	}
	requireDistinct(t, ids)
	stats := client.Stats()
	// Each refill brought 300: at least 2000/300 of them, plus the refused
	// first one (/v1/info, which explained it, is not a call for a batch).
	if stats.IDsReceived%300 != 0 || stats.Calls < stats.IDsReceived/300+1 {
		t.Fatalf("%+v: want batches of the node's max_batch, 300", stats)
	}
}

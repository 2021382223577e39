// What the client's tests share: real snowidd nodes (internal/testnode,
// binary from $SNOWIDD), clients closed at the end of each test, plain HTTP
// reads of a node's own answers, and endpoints where nothing serves.
package snowid_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"reflect"
	"sort"
	"testing"
	"time"

	"snowid.io/snowid"
	"snowid.io/snowid/internal/testnode"
)

// startNode starts a snowidd as datacenter dc, worker w; stopped (SIGKILL by
// pid) and its state directory removed when the test ends.
func startNode(t *testing.T, dc, w int64, extra ...string) *testnode.Node {
	t.Helper()
	binary, err := testnode.Binary()
	if err != nil {
		t.Fatal(err)
	}
	node, err := testnode.Start(binary, dc, w, extra...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(node.Stop)
	return node
}

// patientWait: the EmptyWait of tests that expect IDs from a node that is
// up. On a shared 2-core machine (and under the race detector) a refill can
// take longer than the default 200 ms; tests of the bound set their own.
const patientWait = raceSlowdown * 2 * time.Second

// withDefaults: the tests write only the options they set; every field
// left at zero takes DefaultOptions' value, but EmptyWait patientWait.
func withDefaults(options snowid.Options) snowid.Options {
	if options.EmptyWait == 0 {
		options.EmptyWait = patientWait
	}
	set, defaults := reflect.ValueOf(&options).Elem(), reflect.ValueOf(snowid.DefaultOptions())
	for i := 0; i < set.NumField(); i++ {
		if set.Type().Field(i).IsExported() && set.Field(i).IsZero() {
			set.Field(i).Set(defaults.Field(i))
		}
	}
	if options.MaxBatch < options.InitialBatch {
		options.MaxBatch = options.InitialBatch
	}
	return options
}

// openClient opens a client withDefaults(options), closed when the test
// ends.
func openClient(t *testing.T, options snowid.Options) *snowid.Client {
	t.Helper()
	client, err := snowid.Open(withDefaults(options))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { client.Close() })
	return client
}

// getJSON reads url's JSON answer into `into`; fails the test unless 200.
func getJSON(t *testing.T, url string, into any) {
	t.Helper()
	response, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer response.Body.Close()
	body, err := io.ReadAll(response.Body)
	if err != nil || response.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s %v", url, response.StatusCode, body, err)
	}
	if err := json.Unmarshal(body, into); err != nil {
		t.Fatalf("GET %s: %v in %s", url, err, body)
	}
}

// closedEndpoint: an http:// URL of a loopback port nothing listens on.
func closedEndpoint(t *testing.T) string {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	address := listener.Addr().String()
	listener.Close()
	return "http://" + address
}

// silentEndpoint: an http:// URL of a loopback port that accepts
// connections and never answers (a hung node); closed when the test ends.
func silentEndpoint(t *testing.T) string {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			conn, err := listener.Accept()
			if err != nil {
				break
			}
			held = append(held, conn)
		}
		for _, conn := range held {
			conn.Close()
		}
	}()
	t.Cleanup(func() {
		listener.Close()
		<-done
	})
	return "http://" + listener.Addr().String()
}

// requireDistinct fails the test if ids holds a value twice.
func requireDistinct(t *testing.T, ids []int64) {
	t.Helper()
	sorted := append([]int64(nil), ids...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	for i := 1; i < len(sorted); i++ {
		if sorted[i] == sorted[i-1] {
			t.Fatalf("ID %d handed out twice (of %d)", sorted[i], len(ids))
		}
	}
}

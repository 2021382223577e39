// Start-up and the bounded wait: a client made at start-up does not fail
// its first call while a node answers (StartWait); before the first batch a
// call waits at most StartWait, after it at most EmptyWait, and a zero
// EmptyWait does not wait at all.
package snowid_test

import (
	"errors"
	"testing"
	"time"

	"snowid.io/snowid"
)

// 20 cold starts: each a new client with the default options, its first
// call made at once; none may fail.
func TestTwentyColdStartsWithDefaultOptionsDoNotFail(t *testing.T) {
	node := startNode(t, 0, 9)
	options := snowid.DefaultOptions()
	options.Endpoints = []string{node.URL}
	failed, slowest := 0, time.Duration(0)
	for i := 0; i < 20; i++ {
		client, err := snowid.Open(options)
		if err != nil {
			t.Fatal(err)
		}
		began := time.Now()
		if _, err := client.Next(); err != nil {
			failed++
			t.Errorf("cold start %d: %v", i, err)
		}
		if took := time.Since(began); took > slowest {
			slowest = took
		}
		client.Close()
	}
	t.Logf("20 cold starts, %d failed first calls, the slowest first call %v", failed, slowest)
}

func TestBeforeTheFirstBatchACallWaitsStartWaitAndNoLonger(t *testing.T) {
	options := withDefaults(snowid.Options{Endpoints: []string{closedEndpoint(t)}})
	options.EmptyWait, options.StartWait = 50*time.Millisecond, 600*time.Millisecond
	client := openClient(t, options)
	began := time.Now()
	_, err := client.Next()
	if took := time.Since(began); !errors.Is(err, snowid.ErrUnavailable) ||
		took < options.StartWait || took > options.StartWait+raceSlowdown*300*time.Millisecond {
		t.Fatalf("Next with no node up: %v after %v; want ErrUnavailable after StartWait (%v)",
			err, took, options.StartWait)
	}
}

// EmptyWait 0: once the first batch came and went, an empty buffer fails at
// once.
func TestAZeroEmptyWaitDoesNotWait(t *testing.T) {
	node := startNode(t, 0, 10)
	options := withDefaults(snowid.Options{Endpoints: []string{node.URL}, InitialBatch: 50,
		MaxBatch: 50})
	options.EmptyWait = 0 // (openClient would take a zero for "unset")
	client, err := snowid.Open(options)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if _, err := client.Next(); err != nil { // StartWait covers the first batch
		t.Fatal(err)
	}
	node.Kill()
	for i := 0; ; i++ {
		began := time.Now()
		_, err := client.Next()
		if err == nil {
			if i > 1000 {
				t.Fatal("IDs keep coming with the node down")
			}
			continue
		}
		if took := time.Since(began); !errors.Is(err, snowid.ErrUnavailable) ||
			took > raceSlowdown*50*time.Millisecond {
			t.Fatalf("an empty buffer with EmptyWait 0: %v after %v; want ErrUnavailable at once",
				err, took)
		}
		return
	}
}

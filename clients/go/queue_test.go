// idQueue on its own: each ID handed out once under concurrent takers,
// expired chunks never handed out, the low-water trigger fires once where
// put placed it.
package snowid

import (
	"sort"
	"sync"
	"testing"
)

func TestQueueHandsEachIDOutOnceToConcurrentTakers(t *testing.T) {
	const chunks, perChunk, takers = 200, 500, 4
	q := newIDQueue()
	var wg sync.WaitGroup
	got := make([][]int64, takers)
	done := make(chan struct{})
	for w := 0; w < takers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			batch := make([]int64, 7)
			for {
				if w%2 == 0 { // half take one by one, half in batches
					if id, ok, _ := q.take(0); ok {
						got[w] = append(got[w], id)
						continue
					}
				} else if n, _ := q.takeInto(batch, 0); n > 0 {
					got[w] = append(got[w], batch[:n]...)
					continue
				}
				select {
				case <-done:
					if q.size(0) == 0 {
						return
					}
				default:
				}
			}
		}(w)
	}
	next := int64(1)
	for c := 0; c < chunks; c++ {
		ids := make([]int64, perChunk)
		for i := range ids {
			ids[i] = next
			next++
		}
		q.put(ids, neverExpires, 10)
	}
	close(done)
	wg.Wait()
	var all []int64
	for _, ids := range got {
		for i := 1; i < len(ids); i++ {
			if ids[i] <= ids[i-1] {
				t.Fatalf("one taker got %d after %d: not in the queue's order", ids[i], ids[i-1])
			}
		}
		all = append(all, ids...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	if len(all) != chunks*perChunk {
		t.Fatalf("%d IDs handed out, want %d", len(all), chunks*perChunk)
	}
	for i, id := range all {
		if id != int64(i+1) {
			t.Fatalf("position %d holds %d: an ID was handed out twice or lost", i, id)
		}
	}
}

func TestQueueNeverHandsOutAnExpiredChunk(t *testing.T) {
	q := newIDQueue()
	q.put([]int64{1, 2, 3}, 100, 1)
	q.put([]int64{4, 5}, 200, 1)
	if id, ok, _ := q.take(99); !ok || id != 1 {
		t.Fatalf("take(99) = %d, %v; want 1", id, ok)
	}
	if id, ok, _ := q.take(100); !ok || id != 4 {
		t.Fatalf("take(100) = %d, %v; want 4 (2 and 3 expired at 100)", id, ok)
	}
	if n := q.size(150); n != 1 {
		t.Fatalf("size(150) = %d, want 1", n)
	}
	out := make([]int64, 4)
	if n, _ := q.takeInto(out, 200); n != 0 {
		t.Fatalf("takeInto at 200 took %v, want nothing (all expired)", out[:n])
	}
	if expiry, ok := q.oldestExpiry(150); !ok || expiry != 200 {
		t.Fatalf("oldestExpiry(150) = %d, %v; want 200 (ID 5's chunk)", expiry, ok)
	}
	if _, ok := q.oldestExpiry(200); ok {
		t.Fatal("oldestExpiry(200): every ID left has expired")
	}
	q.dropExpired(200)
	q.put([]int64{6}, 300, 1)
	q.dropExpired(250)
	if id, ok, _ := q.take(250); !ok || id != 6 {
		t.Fatalf("take(250) = %d, %v; want 6", id, ok)
	}
}

func TestQueueWakesTheRefillWhereTheBufferFallsBelowLowWater(t *testing.T) {
	q := newIDQueue()
	q.put([]int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, neverExpires, 3)
	var woke []int64
	for {
		id, ok, wake := q.take(0)
		if !ok {
			break
		}
		if wake {
			woke = append(woke, id)
		}
	}
	// Taking 8 leaves 2 of 10 buffered: fewer than the low-water mark 3;
	// taking 10 leaves 0, fewer than half of it (1).
	if len(woke) != 2 || woke[0] != 8 || woke[1] != 10 {
		t.Fatalf("woke on %v, want [8 10]", woke)
	}
	q.put([]int64{11, 12, 13, 14, 15}, neverExpires, 3)
	out := make([]int64, 4)
	if n, wake := q.takeInto(out, 0); n != 4 || !wake {
		t.Fatalf("takeInto over index 2 = %d, wake %v; want 4, true", n, wake)
	}
}

// What Stats reports as served and expired: claims counted from the chunks'
// counters, an expired chunk's unclaimed IDs as expired once it is closed,
// and no claim from a chunk after it is closed.
func TestQueueCountsServedAndExpiredIDs(t *testing.T) {
	q := newIDQueue()
	q.put([]int64{1, 2, 3, 4}, 100, 1)
	q.put([]int64{5, 6, 7}, neverExpires, 1)
	for i := 0; i < 2; i++ {
		if _, ok, _ := q.take(50); !ok {
			t.Fatal("take(50) found nothing")
		}
	}
	if served, expired := q.counts(); served != 2 || expired != 0 {
		t.Fatalf("counts() = %d, %d; want 2, 0", served, expired)
	}
	q.account(50) // nothing is used up or expired yet
	if served, expired := q.counts(); served != 2 || expired != 0 {
		t.Fatalf("after account(50): %d, %d; want 2, 0", served, expired)
	}
	q.account(100) // the first chunk expired with 2 IDs unclaimed
	if served, expired := q.counts(); served != 2 || expired != 2 {
		t.Fatalf("after account(100): %d, %d; want 2, 2", served, expired)
	}
	// A taker whose clock reading came before the expiry claims nothing
	// from the closed chunk: it gets the next one's.
	if id, ok, _ := q.take(50); !ok || id != 5 {
		t.Fatalf("take(50) after the close = %d, %v; want 5", id, ok)
	}
	out := make([]int64, 5)
	if n, _ := q.takeInto(out, 200); n != 2 {
		t.Fatalf("takeInto = %d; want the 2 left", n)
	}
	q.account(200)
	if served, expired := q.counts(); served != 5 || expired != 2 {
		t.Fatalf("at the end: %d, %d; want 5, 2", served, expired)
	}
}

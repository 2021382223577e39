/*
 * IdRing: the buffer behind SnowidClient, a bounded ring of IDs with one producer (the client's
 * refill thread) and any number of consumers (callers of next()), after Dmitry Vyukov's bounded
 * MPMC queue, as the C++ client's src/client/id_ring.h.
 *
 * Invariants (an ID is handed out at most once):
 *   - Every cell carries a sequence number. The cell of position p (p % capacity) is free for the
 *     producer when its sequence is p; it holds the ID of position p when its sequence is p + 1.
 *   - A consumer claims position p only by moving `head` from p to p + 1 with one compare-and-set,
 *     so each position, and the ID in it, goes to exactly one consumer. It reads the cell after the
 *     claim and only then publishes sequence p + capacity (release), handing the cell back.
 *   - The producer writes a cell only when it reads sequence p (acquire), so never while a
 *     consumer still reads it, and publishes p + 1 (release) after writing, so a consumer never
 *     reads a half-written cell.
 * take() has no lock, no allocation and no system call; the clock is read by the caller.
 *
 * Counting (stats): `head` is the number of positions ever claimed; those whose ID was dropped
 * as expired are counted apart (`expired`, off the hot path), so served() needs no counter in take().
 *
 * Cells are four longs in one array (sequence, ID, expiry in System.nanoTime() terms, padding):
 * two cells to a cache line, no object per cell. head and tail sit on cache lines of their own.
 */
package io.snowid.client;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.atomic.AtomicLong;

final class IdRing {
  /** What take() returns when the ring holds no ID that has not expired (IDs are >= 0). */
  static final long EMPTY = -1;

  private static final VarHandle CELLS = MethodHandles.arrayElementVarHandle(long[].class);
  private static final int STRIDE = 4; // longs per cell
  private static final int SEQUENCE = 0;
  private static final int ID = 1;
  private static final int EXPIRES = 2;

  private final long[] cells;
  private final long mask;
  private final PaddedCounter head = new PaddedCounter();
  private final PaddedCounter tail = new PaddedCounter(); // producer only
  // The position whose taker calls onLow: the one that leaves fewer than the low-water mark.
  private volatile long refillTrigger = Long.MAX_VALUE;
  private final Runnable onLow;
  private final AtomicLong expired = new AtomicLong();

  /** Requires: capacity is a power of two. onLow runs on the consumer that passes the trigger. */
  IdRing(int capacity, Runnable onLow) {
    this.cells = new long[capacity * STRIDE];
    this.mask = capacity - 1;
    this.onLow = onLow;
    for (int i = 0; i < capacity; i++) cells[i * STRIDE + SEQUENCE] = i;
    VarHandle.releaseFence(); // the initial sequences before the ring is shared
  }

  int capacity() {
    return (int) (mask + 1);
  }

  /**
   * Consumer: the oldest ID that expires after `now` (System.nanoTime()); older ones on the way are
   * dropped. EMPTY if no such ID is buffered.
   */
  long take(long now) {
    for (; ; ) {
      long pos = head.value;
      for (; ; ) {
        final int cell = (int) (pos & mask) * STRIDE;
        final long seq = (long) CELLS.getAcquire(cells, cell + SEQUENCE);
        final long lag = seq - (pos + 1);
        if (lag == 0) {
          if (head.compareAndSet(pos, pos + 1)) {
            final long id = cells[cell + ID];
            final long expires = cells[cell + EXPIRES];
            CELLS.setRelease(cells, cell + SEQUENCE, pos + mask + 1);
            if (pos == refillTrigger) onLow.run();
            if (expires - now > 0) return id;
            expired.incrementAndGet();
            break; // expired: dropped; take the next one
          }
          pos = head.value;
        } else if (lag < 0) {
          return EMPTY; // the cell at head holds no ID yet
        } else {
          pos = head.value; // another consumer took it
        }
      }
    }
  }

  /** Producer only: drops the ID at the head, counted as expired; false if the ring is empty. */
  boolean dropHead() {
    // A far-past `now`: take() hands the head out whatever its expiry, and it is dropped here.
    if (take(Long.MIN_VALUE / 2) == EMPTY) return false;
    expired.incrementAndGet();
    return true;
  }

  /** IDs taken from the ring and handed out (not dropped as expired); any thread. */
  long served() {
    final long dropped = expired.get(); // read first: head only grows past it
    return head.value - dropped;
  }

  /** IDs dropped as expired; any thread. */
  long expired() {
    return expired.get();
  }

  /** Producer only: stores one ID at the tail; false if the ring is full. */
  boolean put(long id, long expires) {
    final long pos = tail.value;
    final int cell = (int) (pos & mask) * STRIDE;
    if ((long) CELLS.getAcquire(cells, cell + SEQUENCE) != pos) return false;
    cells[cell + ID] = id;
    cells[cell + EXPIRES] = expires;
    CELLS.setRelease(cells, cell + SEQUENCE, pos + 1);
    tail.setPlain(pos + 1); // only the producer reads it
    return true;
  }

  /**
   * Producer only: whether the oldest buffered ID expires at or before `now`; its expiry goes to
   * out[0] when one is buffered. Safe because only the producer writes cells.
   */
  boolean oldestExpires(long[] out) {
    final long pos = head.value;
    final int cell = (int) (pos & mask) * STRIDE;
    if ((long) CELLS.getAcquire(cells, cell + SEQUENCE) != pos + 1) return false;
    out[0] = cells[cell + EXPIRES];
    return true;
  }

  /** Producer only: arms the trigger `low` positions before the end of what has been put. */
  void armTrigger(long low) {
    final long end = tail.value;
    refillTrigger = end > low ? end - low : 0;
  }

  /** Producer only: IDs buffered (an upper bound while consumers take). */
  int size() {
    return (int) (tail.value - head.value);
  }

  // A counter alone on its cache lines (the fields of the superclasses come first).
  private static class PadBefore {
    long p01, p02, p03, p04, p05, p06, p07, p08;
  }

  private static class Value extends PadBefore {
    volatile long value;
  }

  private static final class PaddedCounter extends Value {
    long q01, q02, q03, q04, q05, q06, q07, q08;
    private static final VarHandle VALUE;

    static {
      try {
        VALUE = MethodHandles.lookup().findVarHandle(Value.class, "value", long.class);
      } catch (ReflectiveOperationException e) {
        throw new ExceptionInInitializerError(e);
      }
    }

    boolean compareAndSet(long expected, long next) {
      return VALUE.compareAndSet(this, expected, next);
    }

    void setPlain(long next) {
      VALUE.set(this, next);
    }
  }
}

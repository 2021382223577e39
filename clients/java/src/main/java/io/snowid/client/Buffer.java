/*
 * Buffer: one of a client's buffers, for Snowflake IDs (tag null) or for one segment tag's numbers:
 * the IdRing callers take from, and the refill thread's bookkeeping for it (the adaptive batch
 * size, when it last refilled, why the last refill failed).
 *
 * Thread-safety: `ring` is taken from by any thread; batch, lastRefill and refusedUntil belong to
 * the refill thread; error, refused and waiters are guarded by the Refiller's lock.
 */
package io.snowid.client;

import java.util.ArrayDeque;

final class Buffer {
  /** A caller of next() waiting on this empty buffer; the refill thread may hand it an ID. */
  static final class Waiter {
    long id = IdRing.EMPTY;
  }

  final IdRing ring;
  final String tag; // null: Snowflake IDs

  // Refill thread only.
  int batch;
  long lastRefill; // System.nanoTime() when the last successful fetch began
  boolean refilledOnce;
  int parallel = 1; // nodes the next refill may ask at once (Refiller)
  long refusedUntil; // no fetch before this (nanoTime) after a refusal
  boolean refusing;

  // Guarded by the Refiller's lock: why the last fetch failed (null after a success), and
  // whether that was a refusal (callers are told at once, without waiting out emptyWait).
  SnowidException error;
  boolean refused;
  // Callers waiting on the empty buffer, oldest first: a fetched batch serves one ID to each
  // before the rest goes to the ring, so that no waiter starves while others take every batch.
  final ArrayDeque<Waiter> waiters = new ArrayDeque<>();

  Buffer(String tag, int capacity, int firstBatch, Runnable onLow) {
    this.ring = new IdRing(capacity, onLow);
    this.tag = tag;
    this.batch = firstBatch;
  }

  /** What the messages call it. */
  String name() {
    return tag == null ? "Snowflake IDs" : "segment tag '" + tag + "'";
  }
}

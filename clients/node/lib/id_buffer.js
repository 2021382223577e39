"use strict";
// IdBuffer: one buffer of the client, for Snowflake IDs (tag "") or for one
// segment tag's numbers, with the refill state that belongs to it.
//
// Invariants (an ID is handed out at most once, never after it expired):
//   - The buffer is a queue of batches, each a BigInt64Array of IDs as one
//     call fetched them, in the order they arrived; `ids`/`pos` is the batch
//     being taken from, `queue` the later ones. `pos` only grows: an ID at
//     an index below `pos` is never read again.
//   - A batch carries `expires` (performance.now() ms): the moment the call
//     that fetched it began plus maxAgeMs; Infinity for segment numbers,
//     which carry no time. take() drops a batch at the first look after
//     that moment.
//   - `size` counts the IDs buffered, expired ones not yet dropped included;
//     received = served + expired + size + the IDs dropped by clear().
// Thread-safety: none needed; JavaScript runs one task at a time, and every
// method here runs to completion without awaiting.
const EMPTY = new BigInt64Array(0);

class IdBuffer {
  constructor(tag, firstBatch, lowWater) {
    this.tag = tag;
    this.ids = EMPTY;
    this.pos = 0;
    this.expires = Infinity;
    this.queue = [];
    this.size = 0;
    // Counts for the client's stats().
    this.received = 0;
    this.served = 0;
    this.expired = 0;
    // The refill task's own: the next batch's size, the server's limit,
    // how many calls may run at once (each to another endpoint), the calls
    // running and the IDs they asked for, the endpoints they went to.
    this.lowWater = lowWater;
    this.batch = firstBatch;
    this.cap = Infinity;
    this.parallel = 1;
    this.running = 0;
    this.pending = 0;
    this.busy = new Set();
    this.setBatch(firstBatch);
    // When the last refill began; whether a take found the buffer empty
    // since; no refill before `refusedUntil`; whether a batch ever arrived.
    this.lastRefill = undefined;
    this.ranDry = false;
    this.refusedUntil = 0;
    this.started = false;
    // Why the last refill failed, cleared by a success; `refused`: the nodes
    // refuse this request (callers fail at once instead of waiting).
    this.error = undefined;
    this.refused = false;
    // The client's: a refill round is queued (setImmediate); the timer that
    // brings the next one.
    this.scheduled = false;
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  // The oldest ID not expired at `now`, or undefined if none is buffered.
  take(now) {
    if (this.pos < this.ids.length && this.expires > now) {
      this.size--;
      this.served++;
      return this.ids[this.pos++];
    }
    return this.#takeAfter(now);
  }

  // Appends a fetched batch (a BigInt64Array) expiring at `expires`.
  put(ids, expires) {
    this.queue.push({ ids, expires });
    this.size += ids.length;
    this.received += ids.length;
    this.started = true;
  }

  // Sets the batch size, and the low-water mark with it: a refill starts
  // when fewer than lowWater of a batch is left, and each further call
  // allowed at once raises the mark by a batch.
  setBatch(batch) {
    this.batch = batch;
    this.low = Math.max(1, Math.floor(this.lowWater * batch)) + (this.parallel - 1) * batch;
  }

  setParallel(parallel) {
    this.parallel = parallel;
    this.setBatch(this.batch);
  }

  // Drops the batches expired at `now`, so that a caller never walks
  // through stale ones.
  dropExpired(now) {
    if (this.pos < this.ids.length && this.expires <= now) this.#dropCurrent();
    while (this.queue.length > 0 && this.queue[0].expires <= now) {
      const dropped = this.queue.shift().ids.length;
      this.size -= dropped;
      this.expired += dropped;
    }
  }

  // When the oldest buffered ID expires; Infinity if none does.
  oldestExpires() {
    if (this.pos < this.ids.length) return this.expires;
    return this.queue.length > 0 ? this.queue[0].expires : Infinity;
  }

  clear() {
    this.ids = EMPTY;
    this.pos = 0;
    this.queue = [];
    this.size = 0;
  }

  #takeAfter(now) {
    for (;;) {
      if (this.pos < this.ids.length) {
        if (this.expires > now) return this.take(now);
        this.#dropCurrent();
      }
      const next = this.queue.shift();
      if (next === undefined) {
        this.ids = EMPTY;
        this.pos = 0;
        this.ranDry = true;
        return undefined;
      }
      this.ids = next.ids;
      this.pos = 0;
      this.expires = next.expires;
    }
  }

  #dropCurrent() {
    const dropped = this.ids.length - this.pos;
    this.size -= dropped;
    this.expired += dropped;
    this.pos = this.ids.length;
  }
}

module.exports = { IdBuffer };

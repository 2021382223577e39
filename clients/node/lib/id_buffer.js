// IdBuffer: one buffer of the client, for Snowflake IDs (tag "") or for one
// segment tag's numbers, with the refill state that belongs to it.
//
// Invariants (an ID is handed out at most once, never after it expired):
//   - The buffer is a queue of batches, each an array of BigInt IDs as one
//     call fetched them, in the order fetched; `ids`/`pos` is the batch being
//     taken from, `queue` the later ones. `pos` only grows: an ID at an index
//     below `pos` is never read again.
//   - A batch carries `expires` (performance.now() ms): the moment the call
//     that fetched it began plus maxAgeMs; Infinity for segment numbers,
//     which carry no time. take() drops a batch at the first look after
//     that moment.
//   - `size` counts the IDs buffered, expired ones not yet dropped included.
// Thread-safety: none needed; JavaScript runs one task at a time, and every
// method here runs to completion without awaiting.
const EMPTY = Object.freeze([]);

export class IdBuffer {
  constructor(tag, firstBatch, lowWater) {
    this.tag = tag;
    this.ids = EMPTY;
    this.pos = 0;
    this.expires = Infinity;
    this.queue = [];
    this.size = 0;
    this.lowWater = lowWater;
    // A take that leaves fewer than `low` IDs wakes the refill task.
    this.low = Math.max(1, Math.floor(lowWater * firstBatch));
    // The refill task's own: the next batch's size, the server's limit,
    // when the last refill began, no refill before `refusedUntil`.
    this.batch = firstBatch;
    this.cap = Infinity;
    this.lastRefill = undefined;
    this.refusedUntil = 0;
    // Why the last refill failed, cleared by a success; `refused`: the nodes
    // refuse this request (callers fail at once instead of waiting).
    this.error = undefined;
    this.refused = false;
  }

  // The oldest ID not expired at `now`, or undefined if none is buffered.
  take(now) {
    for (;;) {
      if (this.pos < this.ids.length) {
        if (this.expires > now) {
          this.size--;
          return this.ids[this.pos++];
        }
        this.size -= this.ids.length - this.pos;
        this.pos = this.ids.length;
      }
      if (!this.#advance()) return undefined;
    }
  }

  // Appends a fetched batch (strictly increasing IDs) expiring at `expires`.
  put(ids, expires) {
    if (ids.length === 0) return;
    this.queue.push({ ids, expires });
    this.size += ids.length;
  }

  // The refill task's: sets the batch size and the low-water mark with it.
  setBatch(batch) {
    this.batch = batch;
    this.low = Math.max(1, Math.floor(this.lowWater * batch));
  }

  // Drops the batches expired at `now`, so that a caller never walks
  // through stale ones.
  dropExpired(now) {
    if (this.pos < this.ids.length && this.expires <= now) {
      this.size -= this.ids.length - this.pos;
      this.pos = this.ids.length;
    }
    while (this.queue.length > 0 && this.queue[0].expires <= now) {
      this.size -= this.queue.shift().ids.length;
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

  #advance() {
    const next = this.queue.shift();
    if (next === undefined) {
      this.ids = EMPTY;
      this.pos = 0;
      return false;
    }
    this.ids = next.ids;
    this.pos = 0;
    this.expires = next.expires;
    return true;
  }
}

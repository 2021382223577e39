/*
 * Refiller: the client's background refill thread and the slow path of next(), as the C++ client's
 * src/client/client.cc.
 *
 * One daemon thread refills every buffer (Snowflake IDs, and each segment tag asked for): when a
 * buffer falls below its low-water mark (the caller that takes the ring's trigger position wakes
 * the thread; a timer of refillPeriod catches the rest) it asks the Endpoints for a batch. Batches
 * adapt to the rate: they double while refills come sooner than refillPeriod / 2 and halve while
 * they come later than 2 * refillPeriod, within [initialBatch, maxBatch]. Snowflake IDs carry an
 * expiry, maxAge after their fetch began; expired ones are dropped by takers and by this thread
 * (which wakes when the oldest expires), never handed out. Segment numbers never expire.
 *
 * When one node's round trips do not keep up (the buffer ran dry while a refill of maxBatch was
 * on its way), the next refills ask several healthy nodes at once, one more per such round up to
 * MAX_PARALLEL, and one fewer per round whose batches came with more than half the low-water mark
 * still buffered.
 *
 * A caller that finds its buffer empty wakes the thread and waits for news (a batch put, or a
 * failure recorded) until emptyWait has passed (startWait until the client's first batch came, so
 * that a client made at start-up, whose first refill also opens its first connection, does not
 * fail its first calls): then UNAVAILABLE (or the failure that says why). A refusal (bad token,
 * unknown tag) is told to waiting callers at once.
 *
 * Thread-safety: `lock` guards wake, stopping, newsCount and every buffer's error and refused; the
 * rings need no lock; the rest of a Buffer and the Endpoints belong to the refill thread.
 */
package io.snowid.client;

import io.snowid.client.SnowidException.Code;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

final class Refiller {
  // A segment number's expiry: far beyond any run, yet safe to compare as a nanoTime difference.
  private static final long NEVER_NS = Long.MAX_VALUE / 4;
  // The most nodes one refill asks at once.
  static final int MAX_PARALLEL = 4;

  private final SnowidClientOptions options;
  private final Endpoints endpoints;
  private final Counters counters;
  private final int capacity;
  final Buffer snowflake;
  private final ConcurrentHashMap<String, Buffer> tags = new ConcurrentHashMap<>();

  private final ReentrantLock lock = new ReentrantLock();
  private final Condition work = lock.newCondition(); // the refill thread waits here
  private final Condition news = lock.newCondition(); // callers on an empty buffer wait here
  private boolean wake;
  private boolean stopping;
  private long newsCount;
  private volatile boolean firstBatchCame; // a first batch has come (startWait no longer applies)
  private final Thread thread;

  Refiller(SnowidClientOptions options, Endpoints endpoints, Counters counters) {
    this.options = options;
    this.endpoints = endpoints;
    this.counters = counters;
    this.capacity = ringCapacity(options.maxBatch());
    this.snowflake = new Buffer(null, capacity, options.initialBatch(), this::wakeRefill);
    this.thread = new Thread(this::loop, "snowid-client-refill");
    thread.setDaemon(true);
    thread.start();
  }

  /** The buffer of segment tag `tag`, made on first use (INVALID_ARGUMENT for a bad tag). */
  Buffer buffer(String tag) {
    final Buffer buffer = tag == null ? null : tags.get(tag);
    if (buffer != null) return buffer;
    Names.checkTag(tag);
    return tags.computeIfAbsent(
        tag, t -> new Buffer(t, capacity, options.initialBatch(), this::wakeRefill));
  }

  /** Every buffer: Snowflake IDs first, then the segment tags'. */
  List<Buffer> buffers() {
    final List<Buffer> buffers = new ArrayList<>(tags.size() + 1);
    buffers.add(snowflake);
    buffers.addAll(tags.values());
    return buffers;
  }

  /**
   * The slow path of next(): waits up to emptyWait (before the first batch, the longer of it and
   * startWait) for an ID of `buffer`, taking it from the ring or from the refill thread's hands (a
   * batch serves its waiters first, oldest first).
   */
  long waitAndTake(Buffer buffer) {
    final Duration wait = waitNow();
    final long deadline = System.nanoTime() + wait.toNanos();
    final Buffer.Waiter me = new Buffer.Waiter();
    lock.lock();
    try {
      buffer.waiters.addLast(me);
      try {
        for (; ; ) {
          // Under the lock nothing can be handed to `me` meanwhile, so no ID is lost.
          if (me.id != IdRing.EMPTY) return me.id;
          final long id = buffer.ring.take(System.nanoTime());
          if (id != IdRing.EMPTY) return id;
          awaitNews(buffer, me, deadline, wait);
        }
      } finally {
        buffer.waiters.remove(me);
      }
    } finally {
      lock.unlock();
    }
  }

  /** Stops the thread: aborts its call in flight and waits for it to end. */
  void stop() {
    lock.lock();
    try {
      stopping = true;
      work.signalAll();
      news.signalAll();
    } finally {
      lock.unlock();
    }
    endpoints.cancelInFlight();
    try {
      thread.join(TimeUnit.SECONDS.toMillis(5));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  // Callers' side ------------------------------------------------------------------------------

  // Under lock: returns once there is news (an ID handed to `me`, a batch put, a failure); throws
  // at the deadline, at once for a refusal, or when the client is closed.
  private void awaitNews(Buffer buffer, Buffer.Waiter me, long deadline, Duration wait) {
    if (stopping) throw new SnowidException(Code.CLOSED, "the client is closed");
    if (buffer.refused && buffer.error != null) throw copy(buffer.error);
    wake = true;
    work.signal();
    final long seen = newsCount;
    while (newsCount == seen && me.id == IdRing.EMPTY) {
      final long left = deadline - System.nanoTime();
      if (left <= 0) {
        final String message = "no " + buffer.name() + " buffered and none fetched within "
            + wait.toMillis() + " ms" + (firstBatchCame ? "" : " of the client's start");
        if (buffer.error == null) throw new SnowidException(Code.UNAVAILABLE, message);
        throw new SnowidException(buffer.error.code(), message + ": " + buffer.error.getMessage());
      }
      try {
        news.awaitNanos(left);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        if (me.id != IdRing.EMPTY) return; // handed one meanwhile: take it
        throw new SnowidException(Code.UNAVAILABLE, "interrupted while waiting for " + buffer.name());
      }
      if (stopping && me.id == IdRing.EMPTY) {
        throw new SnowidException(Code.CLOSED, "the client is closed");
      }
    }
  }

  private Duration waitNow() {
    if (firstBatchCame) return options.emptyWait();
    final Duration start = options.startWait();
    return start.compareTo(options.emptyWait()) > 0 ? start : options.emptyWait();
  }

  private static SnowidException copy(SnowidException e) {
    return new SnowidException(e.code(), e.getMessage()); // a stack trace of this caller's
  }

  private void wakeRefill() {
    lock.lock();
    try {
      wake = true;
      work.signal();
    } finally {
      lock.unlock();
    }
  }

  // Refill thread -------------------------------------------------------------------------------

  private void loop() {
    final long[] oldest = new long[1];
    for (; ; ) {
      lock.lock();
      try {
        if (stopping) return;
        wake = false;
      } finally {
        lock.unlock();
      }
      final List<Buffer> buffers = buffers();
      long wakeAt = System.nanoTime() + options.refillPeriod().toNanos();
      for (Buffer buffer : buffers) {
        try {
          if (buffer.tag == null) dropExpired(buffer, oldest);
          wakeAt = earlier(wakeAt, refill(buffer));
          if (buffer.tag == null && buffer.ring.oldestExpires(oldest)) {
            wakeAt = earlier(wakeAt, oldest[0]);
          }
        } catch (RuntimeException e) { // a bug: told to callers, and the thread goes on
          record(buffer, new SnowidException(Code.UNAVAILABLE, "the refill failed: " + e), false);
        }
      }
      if (!sleepUntil(wakeAt)) return;
    }
  }

  // False once stopping.
  private boolean sleepUntil(long wakeAt) {
    lock.lock();
    try {
      for (; ; ) {
        if (stopping) return false;
        final long left = wakeAt - System.nanoTime();
        if (wake || left <= 0) return true;
        work.awaitNanos(left);
      }
    } catch (InterruptedException e) {
      return false;
    } finally {
      lock.unlock();
    }
  }

  // Takes expired IDs off the head, so that no caller walks through a ring of stale ones. A caller
  // may take the expired head first; this take then drops a fresher ID: an ID lost, never reused.
  private static void dropExpired(Buffer buffer, long[] oldest) {
    while (buffer.ring.oldestExpires(oldest) && oldest[0] - System.nanoTime() <= 0) {
      if (!buffer.ring.dropHead()) break;
    }
  }

  /**
   * Fetches batches until `buffer` is above its low-water mark, the endpoints all failed or the
   * nodes refuse; returns when to look again (nanoTime; far ahead if nothing is due).
   */
  private long refill(Buffer buffer) {
    long wakeAt = System.nanoTime() + NEVER_NS;
    while (buffer.ring.size() < lowWater(buffer)) {
      final long now = System.nanoTime();
      if (buffer.refusing && buffer.refusedUntil - now > 0) return buffer.refusedUntil;
      final int room = buffer.ring.capacity() - buffer.ring.size();
      final int count = Math.min(buffer.batch, room);
      if (count <= 0) break;
      final int parallel =
          Math.max(1, Math.min(Math.min(buffer.parallel, room / count), endpoints.healthy()));
      final long expires = now + (buffer.tag == null ? options.maxAge().toNanos() : NEVER_NS);
      final Endpoints.Fetched fetched =
          endpoints.fetch(buffer.tag, count, parallel, ids -> put(buffer, ids, expires, now));
      if (isStopping()) break;
      if (fetched.batches() > 0) continue;
      final HttpTransport.CallFailure failure = fetched.failure();
      if (failure.refused) {
        buffer.refusing = true;
        buffer.refusedUntil = now + options.backoffMax().toNanos();
      }
      record(buffer, new SnowidException(failure.code, failure.getMessage()), failure.refused);
      return earlier(fetched.retryAt(), buffer.refusing ? buffer.refusedUntil : wakeAt);
    }
    return wakeAt;
  }

  // Puts a fetched batch in the ring, arms the refill trigger, adapts the batch size to the rate
  // of refills and tells waiting callers.
  private void put(Buffer buffer, long[] ids, long expires, long started) {
    // `started` is when the fetch began (nanoTime); every batch of a parallel round shares it.
    final int left = buffer.ring.size();
    int handed = 0;
    lock.lock();
    try {
      for (Buffer.Waiter waiter : buffer.waiters) {
        if (handed == ids.length) break;
        if (waiter.id == IdRing.EMPTY) waiter.id = ids[handed++];
      }
    } finally {
      lock.unlock();
    }
    if (handed > 0) counters.idsHanded.addAndGet(handed);
    for (int i = handed; i < ids.length; i++) {
      if (!buffer.ring.put(ids[i], expires)) break; // cannot happen: the batch fits the room left
    }
    if (buffer.refilledOnce && started != buffer.lastRefill) { // a parallel round adapts once
      final long since = started - buffer.lastRefill;
      final long period = options.refillPeriod().toNanos();
      if (since < period / 2) {
        buffer.batch = Math.min(options.maxBatch(), buffer.batch * 2);
      } else if (since > period * 2) {
        buffer.batch = Math.max(options.initialBatch(), buffer.batch / 2);
      }
      // Dry (callers waited, or nothing was left) at maxBatch: one round trip at a time is too slow.
      if ((handed > 0 || left == 0) && buffer.batch == options.maxBatch()) {
        buffer.parallel = Math.min(MAX_PARALLEL, buffer.parallel + 1);
      } else if (left > lowWater(buffer) / 2) {
        buffer.parallel = Math.max(1, buffer.parallel - 1);
      }
    }
    buffer.refilledOnce = true;
    buffer.lastRefill = started;
    firstBatchCame = true;
    buffer.refusing = false;
    buffer.ring.armTrigger(lowWater(buffer));
    record(buffer, null, false);
  }

  private void record(Buffer buffer, SnowidException error, boolean refused) {
    lock.lock();
    try {
      buffer.error = error;
      buffer.refused = refused;
      newsCount++;
      news.signalAll();
    } finally {
      lock.unlock();
    }
  }

  private boolean isStopping() {
    lock.lock();
    try {
      return stopping;
    } finally {
      lock.unlock();
    }
  }

  private int lowWater(Buffer buffer) {
    return Math.max(1, (int) (options.lowWater() * buffer.batch));
  }

  private static long earlier(long a, long b) {
    return a - b <= 0 ? a : b;
  }

  // Room for a parallel round: at least twice maxBatch, and four times up to 2^16 IDs (2 MB).
  private static int ringCapacity(int maxBatch) {
    final long least = Math.max(2L * maxBatch, Math.min(4L * maxBatch, 1 << 16));
    int capacity = 1;
    while (capacity < least) capacity *= 2;
    return capacity;
  }
}

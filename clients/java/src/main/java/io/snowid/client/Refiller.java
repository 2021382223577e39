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
 * A caller that finds its buffer empty wakes the thread and waits for news (a batch put, or a
 * failure recorded) until emptyWait has passed: then UNAVAILABLE (or the failure that says why).
 * A refusal (bad token, unknown tag) is told to waiting callers at once.
 *
 * Thread-safety: `lock` guards wake, stopping, newsCount and every buffer's error and refused; the
 * rings need no lock; the rest of a Buffer and the Endpoints belong to the refill thread.
 */
package io.snowid.client;

import io.snowid.client.SnowidException.Code;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

final class Refiller {
  // A segment number's expiry: far beyond any run, yet safe to compare as a nanoTime difference.
  private static final long NEVER_NS = Long.MAX_VALUE / 4;

  private final SnowidClientOptions options;
  private final Endpoints endpoints;
  private final int capacity;
  final Buffer snowflake;
  private final ConcurrentHashMap<String, Buffer> tags = new ConcurrentHashMap<>();

  private final ReentrantLock lock = new ReentrantLock();
  private final Condition work = lock.newCondition(); // the refill thread waits here
  private final Condition news = lock.newCondition(); // callers on an empty buffer wait here
  private boolean wake;
  private boolean stopping;
  private long newsCount;
  private final Thread thread;

  Refiller(SnowidClientOptions options, Endpoints endpoints) {
    this.options = options;
    this.endpoints = endpoints;
    this.capacity = ringCapacity(options.maxBatch());
    this.snowflake = new Buffer(null, capacity, options.initialBatch(), this::wakeRefill);
    this.thread = new Thread(this::loop, "snowid-client-refill");
    thread.setDaemon(true);
    thread.start();
  }

  /** The buffer of segment tag `tag`, made on first use (INVALID_ARGUMENT for a bad tag). */
  Buffer buffer(String tag) throws SnowidException {
    final Buffer buffer = tag == null ? null : tags.get(tag);
    if (buffer != null) return buffer;
    Names.checkTag(tag);
    return tags.computeIfAbsent(
        tag, t -> new Buffer(t, capacity, options.initialBatch(), this::wakeRefill));
  }

  /**
   * The slow path of next(): waits up to emptyWait for an ID of `buffer`, taking it from the ring
   * or from the refill thread's hands (a batch serves its waiters first, oldest first).
   */
  long waitAndTake(Buffer buffer) throws SnowidException {
    final long deadline = System.nanoTime() + options.emptyWait().toNanos();
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
          awaitNews(buffer, me, deadline);
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
  private void awaitNews(Buffer buffer, Buffer.Waiter me, long deadline) throws SnowidException {
    if (stopping) throw new SnowidException(Code.CLOSED, "the client is closed");
    if (buffer.refused && buffer.error != null) throw copy(buffer.error);
    wake = true;
    work.signal();
    final long seen = newsCount;
    while (newsCount == seen && me.id == IdRing.EMPTY) {
      final long left = deadline - System.nanoTime();
      if (left <= 0) {
        if (buffer.error != null) throw copy(buffer.error);
        throw new SnowidException(
            Code.UNAVAILABLE,
            "no " + buffer.name() + " buffered and none fetched within "
                + options.emptyWait().toMillis() + " ms");
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
      final List<Buffer> buffers = new ArrayList<>(tags.size() + 1);
      buffers.add(snowflake);
      buffers.addAll(tags.values());
      long wakeAt = System.nanoTime() + options.refillPeriod().toNanos();
      for (Buffer buffer : buffers) {
        if (buffer.tag == null) dropExpired(buffer, oldest);
        wakeAt = earlier(wakeAt, refill(buffer));
        if (buffer.tag == null && buffer.ring.oldestExpires(oldest)) {
          wakeAt = earlier(wakeAt, oldest[0]);
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
      if (buffer.ring.take(Long.MIN_VALUE / 2) == IdRing.EMPTY) break;
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
      final int count = Math.min(buffer.batch, buffer.ring.capacity() - buffer.ring.size());
      if (count <= 0) break;
      final long expires = now + (buffer.tag == null ? options.maxAge().toNanos() : NEVER_NS);
      final Endpoints.Fetched fetched = endpoints.fetch(buffer.tag, count);
      if (isStopping()) break;
      if (fetched.ids() != null) {
        put(buffer, fetched.ids(), expires, now);
        continue;
      }
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
    for (int i = handed; i < ids.length; i++) {
      if (!buffer.ring.put(ids[i], expires)) break; // cannot happen: the batch fits the room left
    }
    if (buffer.refilledOnce) {
      final long since = started - buffer.lastRefill;
      final long period = options.refillPeriod().toNanos();
      if (since < period / 2) {
        buffer.batch = Math.min(options.maxBatch(), buffer.batch * 2);
      } else if (since > period * 2) {
        buffer.batch = Math.max(options.initialBatch(), buffer.batch / 2);
      }
    }
    buffer.refilledOnce = true;
    buffer.lastRefill = started;
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

  private static int ringCapacity(int maxBatch) {
    int capacity = 1;
    while (capacity < 2L * maxBatch) capacity *= 2;
    return capacity;
  }
}

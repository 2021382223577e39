/*
 * Endpoints: how a client spreads its refills over its snowidd nodes and fails over among them
 * (docs/clients.md, "Spread and failover").
 *
 * Each refill goes to an endpoint drawn at random among the healthy ones (those not backing off),
 * so a fleet of application instances given the same list loads every node alike. A node that fails
 * for its own sake (down, slow, 5xx, or an invalid answer: a batch docs/clients.md does not let a
 * client take, such as one that is malformed, too long, or not above the last batch of its issuer
 * from this endpoint, BatchOrder) backs off: it is skipped for a wait drawn between half and all of
 * backoffInitial, doubled per further failure up to backoffMax, and reset by a success; the refill
 * goes at once to another healthy endpoint drawn the same way. A refusal (401, 403, 404, 409,
 * other 4xx) is this request's, not the node's: it goes back to the caller at once, and the node
 * keeps its place.
 *
 * A refill may ask several nodes at once (fetch(..., parallel)): the Refiller does when its buffer
 * drains faster than one node's round trips refill it; the calls then go to distinct nodes.
 *
 * Batches are asked for in binary; a node that answers binary with 400 naming the format is asked
 * in JSON from then on (until the client is closed). Before its first batch from a node (and again
 * after that node failed) the client reads the node's /v1/info: its max_batch bounds the count
 * asked for, and its layout serves decode().
 *
 * business() is a caller's own call, not buffered: on the caller's thread, to the healthy nodes
 * drawn the same way one after another until one gives the batch, then (within emptyWait of its
 * start) to the backing-off ones as they come due. It shares the nodes' health with the refills: a
 * node a refill found down is skipped, and one a business call found down backs off for both.
 *
 * Thread-safety: fetch() on the refill thread only; the calls of one fetch run on distinct nodes,
 * each node's batch state (binary, info, order) touched by one call at a time, and fetch()
 * returns after they all ended. A node's health (backoff) is guarded by the node, as business()
 * runs on any thread. business(), layout() and cancelInFlight() from any thread.
 */
package io.snowid.client;

import io.snowid.client.HttpTransport.CallFailure;
import io.snowid.client.SnowidException.Code;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Consumer;

final class Endpoints {
  /**
   * A fetch's outcome: how many batches came (each handed to the fetch's taker as it came), the
   * failure that tells callers why none did (the refusal if any, else the last failure; null if a
   * batch came), and when the first backing-off node is due.
   */
  record Fetched(int batches, CallFailure failure, long retryAt) {}

  private static final class Node {
    final URI uri;
    // Touched by one refill call at a time (see Thread-safety).
    boolean binary; // false once the node refused format=binary
    volatile Replies.NodeInfo info; // null until read, and after a failure
    final BatchOrder order = new BatchOrder();
    // Health, guarded by this node: the refill thread and business() callers share it.
    private long retryAt;
    private long backoffNs;
    private boolean backingOff;

    Node(URI uri, boolean binary) {
      this.uri = uri;
      this.binary = binary;
    }

    synchronized boolean healthyAt(long now) {
      return !backingOff || retryAt - now <= 0;
    }

    // When it is due again (nanoTime) if it is backing off and not due at `now`; else `now`.
    synchronized long dueAfter(long now) {
      return backingOff && retryAt - now > 0 ? retryAt : now;
    }

    synchronized void answered() {
      backingOff = false;
      backoffNs = 0;
    }

    // Skips the node for a wait drawn in [backoff / 2, backoff], the backoff doubled per failure.
    synchronized void backOff(long initialNs, long maxNs) {
      backoffNs = backoffNs == 0 ? initialNs : Math.min(maxNs, backoffNs * 2);
      final long half = backoffNs / 2;
      retryAt = System.nanoTime() + half + ThreadLocalRandom.current().nextLong(half + 1);
      backingOff = true;
      info = null; // a node that comes back may have been reconfigured
    }
  }

  private final SnowidClientOptions options;
  private final HttpTransport transport;
  private final Counters counters;
  private final Node[] nodes;
  private volatile Layout layout; // the last one a node reported
  private CallFailure lastFailure; // refill thread only: why the last call that failed did
  private ExecutorService helpers; // the calls of a parallel fetch but the first; made on first use

  Endpoints(SnowidClientOptions options, HttpTransport transport, Counters counters) {
    this.options = options;
    this.transport = transport;
    this.counters = counters;
    final List<URI> uris = options.endpoints();
    this.nodes = new Node[uris.size()];
    for (int i = 0; i < nodes.length; i++) nodes[i] = new Node(uris.get(i), options.binary());
  }

  /** How many endpoints are not backing off now. */
  int healthy() {
    final long now = System.nanoTime();
    int healthy = 0;
    for (Node node : nodes) {
      if (node.healthyAt(now)) healthy++;
    }
    return healthy;
  }

  /**
   * Batches of up to `count` IDs of `tag` (null: Snowflake IDs), each handed to `taker` on this
   * thread as it comes: `parallel` calls at once to as many distinct healthy nodes drawn at random
   * (on helper threads when more than one); if none of them gave a batch, the other healthy nodes
   * one after another until one does.
   */
  Fetched fetch(String tag, int count, int parallel, Consumer<long[]> taker) {
    final boolean[] tried = new boolean[nodes.length];
    final List<Node> first = new ArrayList<>();
    for (Node node; first.size() < Math.max(1, parallel) && (node = draw(tried)) != null; ) {
      first.add(node);
    }
    if (first.isEmpty()) {
      final CallFailure why = lastFailure != null ? lastFailure
          : new CallFailure(false, Code.UNAVAILABLE, "every endpoint is backing off");
      return new Fetched(0, why, firstRetry());
    }
    final List<CallFailure> failures = new ArrayList<>();
    final int batches = callAll(first, tag, count, taker, failures);
    CallFailure failure = null;
    for (CallFailure f : failures) {
      if (f != null && (failure == null || f.refused)) failure = f;
    }
    if (batches > 0) return new Fetched(batches, null, 0);
    while (failure != null && !failure.refused) {
      final Node node = draw(tried);
      if (node == null) break;
      try {
        taker.accept(call(node, tag, count));
        return new Fetched(1, null, 0);
      } catch (CallFailure f) {
        failure = f;
      }
    }
    if (failure == null) { // the helpers' calls did not end in time: the client is closing
      failure = new CallFailure(false, Code.UNAVAILABLE, "no node answered in time");
    }
    if (!failure.refused) lastFailure = failure;
    return new Fetched(0, failure, firstRetry());
  }

  /** The layout a node last reported; null if none has yet. */
  Layout layout() {
    return layout;
  }

  /** Reads a layout from the first node that gives its /v1/info, on the caller's thread. */
  Layout readLayout() {
    CallFailure last = null;
    for (Node node : nodes) {
      try {
        final Layout read = transport.info(node.uri).layout();
        layout = read;
        return read;
      } catch (CallFailure f) {
        if (f.refused) throw new SnowidException(f.code, f.getMessage());
        last = f;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new SnowidException(Code.UNAVAILABLE, "interrupted while reading /v1/info");
      }
    }
    throw new SnowidException(Code.UNAVAILABLE, "no node gave its layout: " + last.getMessage());
  }

  /**
   * Exactly `count` business IDs of segment tag `tag`, on the caller's thread: from the first
   * healthy node drawn at random that gives them; when every one failed, from the backing-off ones
   * as they come due, as long as that is within `wait` of the start. A refusal (401, 403, 404, 409,
   * other 4xx) is thrown at once, naming the tag; else UNAVAILABLE with the last failure.
   */
  List<String> business(String tag, int count, Duration wait) {
    final long due = System.nanoTime() + wait.toNanos();
    CallFailure failure = null;
    for (;;) {
      final boolean[] tried = new boolean[nodes.length];
      for (Node node; (node = draw(tried)) != null; ) {
        final URI uri = node.uri;
        try {
          return counted(node, () -> transport.business(uri, tag, count));
        } catch (CallFailure f) {
          if (Thread.currentThread().isInterrupted()) break; // the caller's thread, not a close
          if (f.refused || f.code == Code.CLOSED) {
            throw new SnowidException(
                f.code, "business IDs of tag '" + tag + "': " + f.getMessage());
          }
          failure = f;
        }
      }
      final long now = System.nanoTime();
      final long next = healthy() > 0 ? now : firstDue(now, due + 1);
      if (next - due > 0 || Thread.currentThread().isInterrupted()) break;
      try {
        TimeUnit.NANOSECONDS.sleep(Math.max(0, next - System.nanoTime()));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    if (Thread.currentThread().isInterrupted()) {
      throw new SnowidException(
          Code.UNAVAILABLE, "interrupted while asking for business IDs of tag '" + tag + "'");
    }
    throw new SnowidException(Code.UNAVAILABLE, "no node gave business IDs of tag '" + tag
        + "' within " + wait.toMillis() + " ms"
        + (failure == null ? ": every endpoint is backing off" : ": " + failure.getMessage()));
  }

  /** Aborts the calls under way (each fails at once) and ends the helper threads. */
  void cancelInFlight() {
    transport.cancelInFlight();
    synchronized (this) {
      if (helpers != null) helpers.shutdownNow();
    }
  }

  // One call to each of `targets`: on this thread if there is one, else on helper threads at once,
  // each batch handed to `taker` here as it comes. Returns the number of batches once every call
  // has ended; the failures are added to `failures`.
  private int callAll(List<Node> targets, String tag, int count, Consumer<long[]> taker,
      List<CallFailure> failures) {
    final ExecutorService executor = targets.size() > 1 ? helpers() : null;
    if (executor == null) {
      try {
        taker.accept(call(targets.get(0), tag, count));
        return 1;
      } catch (CallFailure f) {
        failures.add(f);
        return 0;
      }
    }
    final BlockingQueue<Object> done = new LinkedBlockingQueue<>(); // long[] or CallFailure
    int started = 0;
    for (Node node : targets) {
      try {
        executor.execute(() -> {
          try {
            done.add(call(node, tag, count));
          } catch (CallFailure f) {
            done.add(f);
          } catch (RuntimeException e) {
            done.add(new CallFailure(false, Code.UNAVAILABLE, node.uri + ": " + e));
          }
        });
        started++;
      } catch (RejectedExecutionException e) { // closing
        failures.add(new CallFailure(false, Code.CLOSED, "the client is closed"));
      }
    }
    // Each call ends within its deadline (a call is connect, /v1/info and the batch, and a retry on
    // a fresh connection), or at close, which may drop a helper's task before it started.
    final long due = System.nanoTime() + 4 * options.callDeadline().toNanos() + 1_000_000_000L;
    int batches = 0;
    for (int i = 0; i < started; i++) {
      final Object result;
      try {
        result = done.poll(Math.max(0, due - System.nanoTime()), TimeUnit.NANOSECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
      if (result == null) break; // closed meanwhile
      if (result instanceof long[] ids) {
        taker.accept(ids);
        batches++;
      } else {
        failures.add((CallFailure) result);
      }
    }
    return batches;
  }

  private synchronized ExecutorService helpers() {
    if (helpers == null) {
      helpers = Executors.newCachedThreadPool(task -> {
        final Thread thread = new Thread(task, "snowid-client-refill-helper");
        thread.setDaemon(true);
        return thread;
      });
    }
    return helpers.isShutdown() ? null : helpers;
  }

  // One refill call to `node`: its /v1/info first if unread, then the batch (in JSON again at once
  // if the node refuses binary), held above the last of its issuer.
  private long[] call(Node node, String tag, int count) throws CallFailure {
    return counted(node, () -> {
      Replies.NodeInfo info = node.info;
      if (info == null) {
        node.info = info = transport.info(node.uri);
        layout = info.layout();
      }
      final int asked = (int) Math.min(count, info.maxBatch() > 0 ? info.maxBatch() : count);
      HttpTransport.Batch batch;
      try {
        batch = transport.ids(node.uri, tag, asked, node.binary);
      } catch (HttpTransport.BinaryRefused refused) {
        node.binary = false; // a node from before format=binary: JSON from now on
        counters.calls.incrementAndGet();
        try {
          batch = transport.ids(node.uri, tag, asked, false);
        } catch (HttpTransport.BinaryRefused e) {
          throw new IllegalStateException("a JSON request refused as binary", e); // cannot happen
        }
      }
      final long last = node.order.advance(tag, batch.issuer(), batch.ids());
      if (last >= 0) throw notAbove(node, tag, batch, last);
      counters.idsReceived.addAndGet(batch.ids().length);
      return batch.ids();
    });
  }

  /** One call to a node, as `counted` runs it. */
  private interface NodeCall<T> {
    T run() throws CallFailure, InterruptedException;
  }

  // Runs `call` to `node` and counts it; marks the node answering if it succeeded, backs it off if
  // it failed for its own sake (not a refusal, which is the caller's).
  private <T> T counted(Node node, NodeCall<T> call) throws CallFailure {
    counters.calls.incrementAndGet();
    try {
      final T result = call.run();
      node.answered();
      return result;
    } catch (CallFailure f) {
      if (!f.refused) {
        counters.failedCalls.incrementAndGet();
        if (f.invalidAnswer) counters.invalidAnswers.incrementAndGet();
        node.backOff(options.backoffInitial().toNanos(), options.backoffMax().toNanos());
      }
      throw f;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new CallFailure(false, Code.CLOSED, "the client is closed");
    }
  }

  // A healthy node not tried yet, drawn at random and marked tried; null if there is none.
  private Node draw(boolean[] tried) {
    final long now = System.nanoTime();
    final boolean[] healthy = new boolean[nodes.length];
    int candidates = 0;
    for (int i = 0; i < nodes.length; i++) {
      healthy[i] = !tried[i] && nodes[i].healthyAt(now);
      if (healthy[i]) candidates++;
    }
    if (candidates == 0) return null;
    int pick = ThreadLocalRandom.current().nextInt(candidates);
    for (int i = 0; i < nodes.length; i++) {
      if (healthy[i] && pick-- == 0) {
        tried[i] = true;
        return nodes[i];
      }
    }
    throw new IllegalStateException("unreachable");
  }

  private static CallFailure notAbove(Node node, String tag, HttpTransport.Batch batch, long last) {
    final String issuer = batch.issuer().isEmpty() ? "no issuer" : "issuer " + batch.issuer();
    final String what = tag == null ? "IDs" : "numbers of tag '" + tag + "'";
    return CallFailure.invalidAnswer(node.uri + ": a batch of " + what + " from " + issuer
        + " starts at " + batch.ids()[0] + ", not above the last one's " + last);
  }

  // When the first node backing off is due (a refill period ahead if none is).
  private long firstRetry() {
    final long now = System.nanoTime();
    return firstDue(now, now + options.refillPeriod().toNanos());
  }

  // The earliest time (nanoTime) a node backing off at `now` is due, if before `latest`; else
  // `latest`.
  private long firstDue(long now, long latest) {
    long first = latest;
    for (Node node : nodes) {
      final long due = node.dueAfter(now);
      if (due != now && due - first < 0) first = due;
    }
    return first;
  }
}

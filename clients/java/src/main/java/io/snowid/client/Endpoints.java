/*
 * Endpoints: failover across a client's snowidd nodes. A batch comes from the first endpoint that
 * answers, starting from the one that answered last and skipping those backing off. A node that
 * fails for its own sake (down, slow, 5xx, or an invalid answer: a batch docs/clients.md does not
 * let a client take, such as one that is malformed, too long, or not above the last batch of its
 * issuer from this endpoint, BatchOrder) is skipped for backoffInitial, doubled per further failure
 * up to backoffMax, and reset by a success; the next one is asked at once. A refusal (401, 404,
 * 400) is this request's, not the node's: the next endpoint is asked but the refusing one keeps its
 * place.
 *
 * Before its first batch from a node (and again after that node failed) the client reads the
 * node's /v1/info: its max_batch bounds the count asked for, and its layout serves decode().
 *
 * Thread-safety: fetch() on the refill thread only; layout() and cancelInFlight() from any thread.
 */
package io.snowid.client;

import io.snowid.client.HttpTransport.CallFailure;
import io.snowid.client.SnowidException.Code;
import java.net.URI;
import java.util.List;

final class Endpoints {
  /** A fetch's outcome: the IDs, or the failure and when the first backing-off node is due. */
  record Fetched(long[] ids, CallFailure failure, long retryAt) {}

  private static final class Node {
    final URI uri;
    // Refill thread only.
    long retryAt;
    long backoffNs;
    Replies.NodeInfo info; // null until read, and after a failure
    boolean backingOff;
    final BatchOrder order = new BatchOrder();

    Node(URI uri) {
      this.uri = uri;
    }
  }

  private final SnowidClientOptions options;
  private final HttpTransport transport;
  private final Counters counters;
  private final Node[] nodes;
  private int current; // refill thread only
  private volatile Layout layout; // the last one a node reported

  Endpoints(SnowidClientOptions options, HttpTransport transport, Counters counters) {
    this.options = options;
    this.transport = transport;
    this.counters = counters;
    final List<URI> uris = options.endpoints();
    this.nodes = new Node[uris.size()];
    for (int i = 0; i < nodes.length; i++) nodes[i] = new Node(uris.get(i));
  }

  /** Up to `count` IDs of `tag` (null: Snowflake IDs) from the first node that gives them. */
  Fetched fetch(String tag, int count) {
    CallFailure failure = null;
    CallFailure refusal = null;
    final int first = current;
    for (int i = 0; i < nodes.length; i++) {
      final int index = (first + i) % nodes.length;
      final Node node = nodes[index];
      if (node.backingOff && node.retryAt - System.nanoTime() > 0) continue;
      try {
        if (node.info == null) {
          node.info = transport.info(node.uri);
          layout = node.info.layout();
        }
        final long limit = node.info.maxBatch() > 0 ? node.info.maxBatch() : count;
        final HttpTransport.Batch batch = transport.ids(node.uri, tag, (int) Math.min(count, limit));
        final long last = node.order.advance(tag, batch.issuer(), batch.ids());
        if (last >= 0) throw notAbove(node, tag, batch, last);
        node.backingOff = false;
        node.backoffNs = 0;
        current = index;
        counters.fetched.addAndGet(batch.ids().length);
        return new Fetched(batch.ids(), null, 0);
      } catch (CallFailure f) {
        counters.failures.incrementAndGet();
        if (f.invalidAnswer) counters.invalidAnswers.incrementAndGet();
        if (f.refused) {
          refusal = f;
        } else {
          failure = f;
          backOff(node, index);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        failure = new CallFailure(false, Code.CLOSED, "the client is closed");
      }
    }
    if (refusal == null && failure == null) {
      failure = new CallFailure(false, Code.UNAVAILABLE, "every endpoint is backing off");
    }
    return new Fetched(null, refusal != null ? refusal : failure, firstRetry());
  }

  /** The layout a node last reported; null if none has yet. */
  Layout layout() {
    return layout;
  }

  /** Reads a layout from the first node that gives its /v1/info, on the caller's thread. */
  Layout readLayout() throws SnowidException {
    CallFailure last = null;
    for (Node node : nodes) {
      try {
        final Layout read = transport.info(node.uri).layout();
        layout = read;
        return read;
      } catch (CallFailure f) {
        counters.failures.incrementAndGet();
        if (f.refused) throw new SnowidException(f.code, f.getMessage());
        last = f;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new SnowidException(Code.UNAVAILABLE, "interrupted while reading /v1/info");
      }
    }
    throw new SnowidException(Code.UNAVAILABLE, "no node gave its layout: " + last.getMessage());
  }

  void cancelInFlight() {
    transport.cancelInFlight();
  }

  private static CallFailure notAbove(Node node, String tag, HttpTransport.Batch batch, long last) {
    final String issuer = batch.issuer().isEmpty() ? "no issuer" : "issuer " + batch.issuer();
    final String what = tag == null ? "IDs" : "numbers of tag '" + tag + "'";
    return CallFailure.invalidAnswer(node.uri + ": a batch of " + what + " from " + issuer
        + " starts at " + batch.ids()[0] + ", not above the last one's " + last);
  }

  private void backOff(Node node, int index) {
    final long initial = options.backoffInitial().toNanos();
    node.backoffNs =
        node.backoffNs == 0 ? initial : Math.min(options.backoffMax().toNanos(), node.backoffNs * 2);
    node.retryAt = System.nanoTime() + node.backoffNs;
    node.backingOff = true;
    node.info = null; // a node that comes back may have been reconfigured
    if (current == index) current = (index + 1) % nodes.length;
  }

  // When the first node backing off is due (far ahead if none is).
  private long firstRetry() {
    final long now = System.nanoTime();
    long first = now + options.refillPeriod().toNanos();
    for (Node node : nodes) {
      if (node.backingOff && node.retryAt - first < 0 && node.retryAt - now > 0) first = node.retryAt;
    }
    return first;
  }
}

/*
 * SnowidClient: IDs for a Java application from one or more snowidd nodes, served from a local
 * buffer that a background daemon thread keeps topped up over HTTP (GET /v1/ids for Snowflake IDs,
 * GET /v1/segment/{tag} for a tag's numbers); the contract of the C++ client
 * (include/snowid/client.h) over snowidd's HTTP listener.
 *
 * next() takes an ID from the buffer: no lock, no allocation, no I/O, one compare-and-set and a
 * System.nanoTime() read. Only when the buffer is empty does it wait, at most emptyWait (startWait
 * until the first batch has come), for the refill; it then throws UNAVAILABLE (never blocks
 * forever). Each refill goes to a healthy endpoint drawn at random; endpoints that fail are skipped
 * with jittered exponential backoff, and while one answers, callers see no error. A refused token
 * (UNAUTHENTICATED), an unknown tag (NOT_FOUND), a retired one (FAILED_PRECONDITION) or another
 * refusal (INVALID_ARGUMENT) reaches callers at once. Every error is a SnowidException, unchecked.
 *
 * nextBusiness() is the exception to the buffer: the business IDs of a tag with a template
 * (GET /v1/business/{tag}), fetched by the caller's own call through the same endpoint choice,
 * failover, deadline and backoff.
 *
 * Order: every ID handed out is unique (issued by a node once, taken from the buffer once), and one
 * buffer hands its IDs out in the order they came, each batch increasing and above the last batch
 * of its node. IDs from several clients, or from one client across a failover or behind a proxy in
 * front of several nodes, are only roughly time-ordered: a buffered ID was issued up to maxAge ago.
 *
 * What a node (or a proxy) sends is taken only as docs/clients.md ("What a client accepts") allows;
 * anything else is discarded, counted in stats().invalidAnswers(), and its endpoint backed off.
 *
 * Thread-safety: every method may be called from any number of threads at once. close() stops the
 * refill thread and aborts its call in flight; afterwards next() serves what is still buffered,
 * then throws CLOSED.
 */
package io.snowid.client;

import io.snowid.client.SnowidException.Code;
import java.time.Duration;
import java.util.Collections;
import java.util.List;

/** A buffered client of snowidd nodes; open with {@link #open(SnowidClientOptions)}. */
public final class SnowidClient implements AutoCloseable {
  private final Endpoints endpoints;
  private final Refiller refiller;
  private final IdRing snowflake; // refiller.snowflake.ring, one hop less on the hot path
  private final Counters counters = new Counters();
  private final Duration emptyWait;

  /**
   * What a client did since it was opened, in docs/clients.md's vocabulary ("Stats").
   *
   * @param calls refill calls sent to nodes, whatever became of them (a node's /v1/info read
   *     before its first batch is part of that call; a binary request refused by an old node and
   *     asked again in JSON is two)
   * @param failedCalls those that got no usable answer: no connection, a deadline passed, a 5xx,
   *     or an invalid answer (a refusal such as 401 is not counted here: it is the caller's error)
   * @param invalidAnswers answers discarded because a node (or a proxy) sent what docs/clients.md
   *     ("What a client accepts") does not let a client take; a part of failedCalls
   * @param idsReceived Snowflake IDs and segment numbers taken into the buffers
   * @param idsServed Snowflake IDs and segment numbers handed to the application
   * @param idsExpired Snowflake IDs dropped from the buffer unissued after maxAge
   */
  public record Stats(
      long calls,
      long failedCalls,
      long invalidAnswers,
      long idsReceived,
      long idsServed,
      long idsExpired) {}

  private SnowidClient(SnowidClientOptions options) {
    this.endpoints = new Endpoints(options, new HttpTransport(options), counters);
    this.refiller = new Refiller(options, endpoints, counters);
    this.snowflake = refiller.snowflake.ring;
    this.emptyWait = options.emptyWait();
  }

  /**
   * Starts a client: its refill thread fetches the first batch at once. Connects lazily: an
   * endpoint down now is not an error here, and the first next() waits up to startWait (2 s by
   * default) for the first batch.
   */
  public static SnowidClient open(SnowidClientOptions options) {
    return new SnowidClient(options);
  }

  /**
   * One Snowflake ID, from the buffer. Throws SnowidException (unchecked): UNAVAILABLE if none was
   * buffered and none came within emptyWait (startWait before the first batch), UNAUTHENTICATED if
   * the nodes refuse the token, CLOSED once the client is closed and its buffer empty.
   */
  public long next() throws SnowidException {
    final long id = snowflake.take(System.nanoTime());
    if (id != IdRing.EMPTY) return id;
    return refiller.waitAndTake(refiller.snowflake);
  }

  /**
   * One Snowflake ID as decimal digits, for JSON sent to JavaScript, whose numbers are exact only
   * up to 2^53 (a Snowflake ID of today is above it): the same ID as next(), as
   * Long.toString(next()).
   */
  public String nextString() throws SnowidException {
    return Long.toString(next());
  }

  /**
   * Fills `out` completely, each ID as next() would return it; on an error the IDs already written
   * are consumed.
   */
  public void next(long[] out) throws SnowidException {
    long now = System.nanoTime();
    for (int i = 0; i < out.length; i++) {
      long id = snowflake.take(now);
      if (id == IdRing.EMPTY) {
        id = refiller.waitAndTake(refiller.snowflake);
        now = System.nanoTime();
      }
      out[i] = id;
    }
  }

  /**
   * The next number of segment tag `tag`, from a buffer of its own. NOT_FOUND if the nodes do not
   * know the tag; INVALID_ARGUMENT for an empty tag, one longer than 128 characters or holding a
   * control character (the nodes judge the rest; the tag travels percent-encoded).
   */
  public long next(String tag) throws SnowidException {
    final Buffer buffer = refiller.buffer(tag);
    final long id = buffer.ring.take(System.nanoTime());
    if (id != IdRing.EMPTY) return id;
    return refiller.waitAndTake(buffer);
  }

  /**
   * `count` business IDs of segment tag `tag` (a tag with a template, such as
   * ORD-{yyyyMMdd}-{seq:06}: docs/segments.md), distinct, in the order the node gave them; never
   * buffered: one call to one node on this thread (GET /v1/business/{tag}), drawn and failed over
   * as refills are, each call within callDeadline, the backing-off nodes tried as they come due
   * while within emptyWait of the start. Throws SnowidException: INVALID_ARGUMENT for a bad tag
   * (as next(String)), a count outside 1 to 1,000,000, or one above a node's max_batch (HTTP 400);
   * UNAUTHENTICATED (401, 403); NOT_FOUND if the nodes do not know the tag or it has no template;
   * FAILED_PRECONDITION if the tag is retired or its period's numbers outgrew the template (409);
   * UNAVAILABLE if no node gave a valid answer (connection errors, deadlines, 5xx such as a store
   * down, invalid answers: each counted in stats() as a refill call is); CLOSED once closed.
   */
  public List<String> nextBusiness(String tag, int count) throws SnowidException {
    Names.checkTag(tag);
    if (count < 1 || count > SnowidClientOptions.MAX_BATCH_LIMIT) {
      throw new SnowidException(Code.INVALID_ARGUMENT, "count " + count
          + " is not in [1, " + SnowidClientOptions.MAX_BATCH_LIMIT + "]");
    }
    return Collections.unmodifiableList(endpoints.business(tag, count, emptyWait));
  }

  /** One business ID of segment tag `tag`: nextBusiness(tag, 1).get(0). */
  public String nextBusiness(String tag) throws SnowidException {
    return nextBusiness(tag, 1).get(0);
  }

  /**
   * The fields of a Snowflake ID under the layout of the nodes (their /v1/info, read once and
   * cached; read on this thread if no refill has read it yet). INVALID_ARGUMENT if `id` does not
   * fit the layout; UNAVAILABLE if no node gave its layout within the call deadline.
   */
  public Decoded decode(long id) throws SnowidException {
    Layout layout = endpoints.layout();
    if (layout == null) layout = endpoints.readLayout();
    return layout.decode(id);
  }

  /** The client's counters since open(); safe from any thread. */
  public Stats stats() {
    long served = counters.idsHanded.get();
    long expired = 0;
    for (Buffer buffer : refiller.buffers()) {
      served += buffer.ring.served();
      expired += buffer.ring.expired();
    }
    return new Stats(counters.calls.get(), counters.failedCalls.get(),
        counters.invalidAnswers.get(), counters.idsReceived.get(), served, expired);
  }

  /** Stops the refill thread promptly, aborting its call in flight. Idempotent. */
  @Override
  public void close() {
    refiller.stop();
  }
}

/*
 * SnowidClient against real snowidd nodes (Snowidd, from $SNOWIDD) on loopback: failover under
 * kill -9 with a million IDs from several threads, the bounded wait, the maximum age, refusals,
 * segment tags, decode against the node's own, batch sizes that follow the rate, and close().
 */
package io.snowid.client;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import io.snowid.client.SnowidException.Code;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.Test;

public class SnowidClientTest {
  private static final int THREADS = 4;
  private static final int TOTAL = 1_000_000;

  // Where the bounded wait is not what a test is about: a first fetch by a cold JVM on a machine
  // shared with builds can take longer than the default 200 ms.
  private static final Duration PATIENT = Duration.ofSeconds(5);

  private static SnowidClientOptions.Builder patient(Snowidd node) {
    return SnowidClientOptions.builder().endpoints(node.url()).emptyWait(PATIENT);
  }

  private static long millisSince(long startNanos) {
    return (System.nanoTime() - startNanos) / 1_000_000;
  }

  // Four threads draw a million IDs through one client with both nodes (refills drawn at random
  // between them) while one is killed with SIGKILL a third of the way: no call fails, no ID repeats, every ID decodes to one of
  // the two nodes, and none of the killed node's is later than its death. Then the second node
  // dies: what is buffered is served, then next() fails within emptyWait. The threads pause 1 ms
  // per 1000 IDs (up to 4 M IDs/s together), and emptyWait is 1 s: on 2 cores shared with builds,
  // four threads that never yield can starve the refill thread itself.
  @Test
  public void aMillionIdsFromFourThreadsSurviveKillNine() throws Exception {
    try (Snowidd a = new Snowidd(1, 3); Snowidd b = new Snowidd(2, 7)) {
      final SnowidClientOptions options =
          SnowidClientOptions.builder().endpoints(a.url(), b.url()).emptyWait(Duration.ofSeconds(1)).build();
      try (SnowidClient client = SnowidClient.open(options)) {
        final long[] ids = new long[TOTAL];
        final AtomicInteger drawn = new AtomicInteger();
        final List<Throwable> errors = java.util.Collections.synchronizedList(new ArrayList<>());
        final List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < THREADS; t++) {
          final int from = t * (TOTAL / THREADS);
          threads.add(new Thread(() -> draw(client, ids, from, TOTAL / THREADS, drawn, errors)));
        }
        threads.forEach(Thread::start);
        while (drawn.get() < TOTAL / 3 && errors.isEmpty()) Thread.sleep(1);
        final long killedAt = System.currentTimeMillis();
        a.kill();
        for (Thread thread : threads) thread.join();
        assertEquals("calls failed (killed at " + killedAt + ")", List.of(), errors);

        checkDistinctAndFromNodes(client, ids, a, b, killedAt);
        b.kill();
        drainThenFailWithinEmptyWait(client, options.emptyWait());
      }
    }
  }

  // Draws `count` IDs into ids[from..], by next() and by the batch form in turn.
  private static void draw(
      SnowidClient client, long[] ids, int from, int count, AtomicInteger drawn, List<Throwable> errors) {
    try {
      final long[] batch = new long[100];
      int i = 0;
      for (int round = 1; i < count; round++) {
        for (int k = 0; k < 400 && i < count; k++) ids[from + i++] = client.next();
        final int n = Math.min(batch.length, count - i);
        final long[] chunk = n == batch.length ? batch : new long[n];
        client.next(chunk);
        System.arraycopy(chunk, 0, ids, from + i, n);
        i += n;
        drawn.addAndGet(400 + n);
        if (round % 2 == 0) Thread.sleep(1);
      }
    } catch (Throwable e) {
      errors.add(new AssertionError("at " + System.currentTimeMillis() + " after " + drawn.get() + ": " + e, e));
    }
  }

  private static void checkDistinctAndFromNodes(
      SnowidClient client, long[] ids, Snowidd a, Snowidd b, long killedAt) {
    final long[] sorted = ids.clone();
    Arrays.sort(sorted);
    for (int i = 1; i < sorted.length; i++) {
      if (sorted[i] == sorted[i - 1]) throw new AssertionError("duplicate ID " + sorted[i]);
    }
    int fromA = 0;
    long latestOfA = 0;
    for (long id : ids) {
      final Decoded d = client.decode(id);
      final boolean isA = d.datacenter() == a.datacenter && d.worker() == a.worker;
      final boolean isB = d.datacenter() == b.datacenter && d.worker() == b.worker;
      assertTrue("ID " + id + " decodes to " + d, isA || isB);
      if (isA) {
        fromA++;
        latestOfA = Math.max(latestOfA, d.timestampMs());
      }
    }
    // Before the kill the refills went to either node at random: about a sixth of the IDs are A's.
    assertTrue("IDs of the first node: " + fromA, fromA >= TOTAL / 20 && fromA < TOTAL / 2);
    // A node issues no ID after its death; the tolerance covers one refill's clock reading.
    assertTrue(
        "the killed node's latest ID is " + (latestOfA - killedAt) + " ms after its kill",
        latestOfA <= killedAt + 50);
  }

  private static void drainThenFailWithinEmptyWait(SnowidClient client, Duration emptyWait) {
    final long bound = emptyWait.toMillis() + 300;
    for (int served = 0; ; served++) {
      final long began = System.nanoTime();
      try {
        client.next();
        assertTrue("served " + served + " IDs with both nodes down", served < 1_000_000);
      } catch (SnowidException e) {
        assertEquals(e.getMessage(), Code.UNAVAILABLE, e.code());
        assertTrue("failed after " + millisSince(began) + " ms", millisSince(began) < bound);
        break;
      }
    }
    final long began = System.nanoTime();
    final SnowidException again = assertThrows(SnowidException.class, client::next);
    assertEquals(Code.UNAVAILABLE, again.code());
    assertTrue(millisSince(began) >= emptyWait.toMillis());
    assertTrue(millisSince(began) < bound);
  }

  // With no node up, the first call waits out startWait (no batch has come yet) and later calls
  // emptyWait; each then fails with UNAVAILABLE.
  @Test
  public void noNodeGivesUnavailableWithinStartWaitThenEmptyWait() throws Exception {
    final SnowidClientOptions options =
        SnowidClientOptions.builder()
            .endpoints("http://127.0.0.1:" + freePort(), "http://127.0.0.1:" + freePort())
            .emptyWait(Duration.ofMillis(150))
            .startWait(Duration.ofMillis(600))
            .build();
    final SnowidClient client = SnowidClient.open(options);
    long began = System.nanoTime();
    SnowidException e = assertThrows(SnowidException.class, client::next);
    assertEquals(e.getMessage(), Code.UNAVAILABLE, e.code());
    assertTrue(e.getMessage(), e.getMessage().contains("600 ms of the client's start"));
    assertTrue(millisSince(began) >= 600);
    assertTrue(millisSince(began) < 600 + 300);
    assertEquals(client.stats().toString(), 0, client.stats().idsReceived());
    assertTrue(client.stats().toString(), client.stats().failedCalls() >= 2);
    assertTrue(client.stats().toString(), client.stats().calls() >= client.stats().failedCalls());
    began = System.nanoTime();
    e = assertThrows(SnowidException.class, client::next);
    assertEquals(e.getMessage(), Code.UNAVAILABLE, e.code());
    assertTrue(millisSince(began) >= 600); // still no batch: still startWait
    final SnowidClient started = SnowidClient.open(SnowidClientOptions.builder()
        .endpoints("http://127.0.0.1:" + freePort()).emptyWait(Duration.ofMillis(150))
        .startWait(Duration.ZERO).build());
    began = System.nanoTime();
    assertEquals(Code.UNAVAILABLE, assertThrows(SnowidException.class, started::next).code());
    assertTrue(millisSince(began) >= 150);
    assertTrue(millisSince(began) < 150 + 300);
    started.close();
    assertThrows(SnowidException.class, () -> client.decode(1));
    final long closing = System.nanoTime();
    client.close();
    assertTrue(millisSince(closing) < 2000);
    assertEquals(Code.CLOSED, assertThrows(SnowidException.class, client::next).code());
  }

  @Test
  public void idsOlderThanMaxAgeAreDroppedNotHandedOut() throws Exception {
    try (Snowidd node = new Snowidd(0, 1)) {
      // Kept: the ID is as old as the pause. Dropped: only an ID fetched within maxAge comes out.
      assertTrue(ageAfterPause(node, Duration.ofSeconds(10)) >= 400);
      assertTrue(ageAfterPause(node, Duration.ofMillis(50)) < 50 + 40);
    }
  }

  private static long ageAfterPause(Snowidd node, Duration maxAge) throws Exception {
    try (SnowidClient client =
        SnowidClient.open(patient(node).maxAge(maxAge).build())) {
      client.next();
      Thread.sleep(400);
      final long id = client.next();
      return System.currentTimeMillis() - client.decode(id).timestampMs();
    }
  }

  @Test
  public void aRefusedTokenReachesTheCallerAndTheAgentIsCounted() throws Exception {
    try (Snowidd node = new Snowidd(0, 1, "--bearer-token", "t0ken")) {
      final SnowidClientOptions.Builder options =
          patient(node).agent("billing-7").initialBatch(300);
      try (SnowidClient refused = SnowidClient.open(options.bearerToken("wrong").build())) {
        final SnowidException e = assertThrows(SnowidException.class, refused::next);
        assertEquals(e.getMessage(), Code.UNAUTHENTICATED, e.code());
        assertTrue(e.getMessage(), e.getMessage().contains(node.url()));
        final long began = System.nanoTime();
        assertEquals(Code.UNAUTHENTICATED, assertThrows(SnowidException.class, refused::next).code());
        assertTrue("a refusal is told at once", millisSince(began) < 100);
      }
      try (SnowidClient client =
          SnowidClient.open(options.bearerToken("t0ken").build())) {
        client.next();
        assertEquals(300, node.metric("snowid_ids_issued_total{agent=\"billing-7\"}"));
      }
    }
  }

  // The stats vocabulary of docs/clients.md: calls, failed_calls, invalid_answers, ids_received,
  // ids_served, ids_expired, each counted as it says; nextString() is next() in decimal.
  @Test
  public void statsCountWhatTheClientDid() throws Exception {
    try (Snowidd node = new Snowidd(0, 1)) {
      try (SnowidClient client = SnowidClient.open(patient(node).maxAge(Duration.ofMillis(100))
          .emptyWait(Duration.ofMillis(500)).build())) {
        final long[] ids = new long[1500];
        client.next(ids);
        final String text = client.nextString();
        assertTrue(text, text.matches("[1-9][0-9]*") && Long.parseLong(text) > ids[1499]);
        SnowidClient.Stats stats = client.stats();
        assertEquals(stats.toString(), 1501, stats.idsServed());
        assertTrue(stats.toString(), stats.idsReceived() >= 1501 && stats.calls() >= 2);
        assertEquals(stats.toString(), 0, stats.failedCalls() + stats.invalidAnswers());
        assertEquals(stats.toString(), 0, stats.idsExpired());
        Thread.sleep(300); // every buffered ID expires, and the refill thread drops them
        client.next();
        stats = client.stats();
        assertTrue(stats.toString(), stats.idsExpired() >= 1);
        assertEquals(stats.toString(), 1502, stats.idsServed());
        assertTrue(stats.toString(), stats.idsReceived() >= stats.idsServed() + stats.idsExpired());
        node.kill();
        Thread.sleep(300); // what is buffered expires; the refill calls now fail
        assertThrows(SnowidException.class, client::next);
        stats = client.stats();
        assertTrue(stats.toString(), stats.failedCalls() >= 1 && stats.invalidAnswers() == 0);
      }
    }
  }

  // Both refusals of the token, 401 (none where one is needed) and 403 (a wrong one), are
  // UNAUTHENTICATED and the caller's, not the node's; 400 is INVALID_ARGUMENT, 409
  // FAILED_PRECONDITION (a retired tag); 503 the node's.
  @Test
  public void bothRefusalsOfTheTokenAreUnauthenticated() {
    for (int status : new int[] {401, 403}) {
      final HttpTransport.CallFailure f = HttpTransport.failure("n", status, "m");
      assertEquals(Code.UNAUTHENTICATED, f.code);
      assertTrue(f.refused);
    }
    assertEquals(Code.INVALID_ARGUMENT, HttpTransport.failure("n", 400, "m").code);
    assertEquals(Code.NOT_FOUND, HttpTransport.failure("n", 404, "m").code);
    assertEquals(Code.FAILED_PRECONDITION, HttpTransport.failure("n", 409, "m").code);
    assertTrue(HttpTransport.failure("n", 409, "m").refused);
    assertTrue(!HttpTransport.failure("n", 503, "m").refused);
  }

  @Test
  public void segmentTagsHaveBuffersOfTheirOwn() throws Exception {
    try (Snowidd node = new Snowidd(0, 1, "--segment-auto-create", "true");
        Snowidd strict = new Snowidd(0, 2)) {
      final SnowidClientOptions options =
          patient(node).initialBatch(64).maxBatch(256).build();
      try (SnowidClient client = SnowidClient.open(options)) {
        for (long expected = 1; expected <= 500; expected++) assertEquals(expected, client.next("order"));
        assertEquals(1, client.next("invoices.eu"));
        assertTrue(client.next() > 1_000_000);
        assertEquals(Code.INVALID_ARGUMENT, assertThrows(SnowidException.class, () -> client.next("")).code());
      }
      try (SnowidClient client = SnowidClient.open(patient(strict).build())) {
        final long began = System.nanoTime();
        final SnowidException e = assertThrows(SnowidException.class, () -> client.next("nosuchtag"));
        assertEquals(e.getMessage(), Code.NOT_FOUND, e.code());
        assertTrue("a refusal does not wait out emptyWait", millisSince(began) < 1000);
      }
    }
  }

  @Test
  public void decodeMatchesTheNodesOwnDecode() throws Exception {
    try (Snowidd twitter = new Snowidd(3, 9);
        Snowidd other = new Snowidd(5, 200, "--timestamp-bits", "39", "--datacenter-bits", "4",
            "--worker-bits", "8", "--sequence-bits", "8", "--time-unit-ms", "10",
            "--sequence-position", "high", "--epoch", "2020-01-01T00:00:00Z")) {
      for (Snowidd node : List.of(twitter, other)) {
        try (SnowidClient client =
            SnowidClient.open(patient(node).build())) {
          for (int i = 0; i < 20; i++) {
            final long id = client.next();
            final Decoded mine = client.decode(id);
            assertEquals(node.datacenter, mine.datacenter());
            assertEquals(node.worker, mine.worker());
            assertEquals(serverDecode(node, id), mine);
          }
          assertEquals(Code.INVALID_ARGUMENT, assertThrows(SnowidException.class, () -> client.decode(-1)).code());
        }
      }
    }
  }

  // GET /v1/decode/{id}, read with the client's reader.
  private static Decoded serverDecode(Snowidd node, long id) throws Exception {
    final JsonReader reader = new JsonReader(
        node.get("/v1/decode/" + id).body().getBytes(StandardCharsets.UTF_8));
    long timestamp = -1;
    long datacenter = -1;
    long worker = -1;
    long sequence = -1;
    long echoed = -1;
    reader.beginObject();
    while (reader.hasNext()) {
      switch (reader.nextName()) {
        case "id" -> echoed = reader.nextId();
        case "timestamp_ms" -> timestamp = reader.nextLong();
        case "datacenter" -> datacenter = reader.nextLong();
        case "worker" -> worker = reader.nextLong();
        case "sequence" -> sequence = reader.nextLong();
        default -> reader.skipValue();
      }
    }
    reader.endObject();
    reader.endDocument();
    return new Decoded(echoed, timestamp, java.time.Instant.ofEpochMilli(timestamp), datacenter, worker, sequence);
  }

  // The batch doubles while refills come sooner than refillPeriod / 2: 200,000 IDs cost a few dozen
  // round trips, not the 2,000 that batches of initialBatch would take.
  @Test
  public void batchSizeFollowsConsumption() throws Exception {
    try (Snowidd node = new Snowidd(0, 1, "--max-batch", "12800")) {
      final SnowidClientOptions options =
          patient(node).initialBatch(100).maxBatch(12_800)
              .refillPeriod(Duration.ofSeconds(1)).build();
      try (SnowidClient client = SnowidClient.open(options)) {
        client.next(new long[200_000]);
      }
      final long calls =
          node.metric("snowid_requests_total{protocol=\"http\",call=\"next_ids\",outcome=\"ok\"}");
      assertTrue("round trips: " + calls, calls >= 8 && calls <= 60);
    }
  }

  // A node that hangs (SIGSTOP) rather than dies: the call deadline moves the client on to the
  // next node; a client whose only node hangs fails within emptyWait and closes at once.
  @Test
  public void aHungNodeIsLeftByDeadlineAndCloseAbortsTheCall() throws Exception {
    try (Snowidd hung = new Snowidd(0, 1); Snowidd healthy = new Snowidd(0, 2)) {
      hung.signal("STOP");
      try {
        try (SnowidClient client = SnowidClient.open(SnowidClientOptions.builder()
            .endpoints(hung.url(), healthy.url()).callDeadline(Duration.ofMillis(100))
            .emptyWait(PATIENT).build())) {
          for (int i = 0; i < 5000; i++) assertEquals(2, client.decode(client.next()).worker());
        }
        final SnowidClient stuck = SnowidClient.open(SnowidClientOptions.builder()
            .endpoints(hung.url()).callDeadline(Duration.ofSeconds(30))
            .emptyWait(Duration.ofMillis(100)).startWait(Duration.ZERO).build());
        final long began = System.nanoTime();
        assertEquals(Code.UNAVAILABLE, assertThrows(SnowidException.class, stuck::next).code());
        assertTrue(millisSince(began) < 100 + 300);
        final long closing = System.nanoTime();
        stuck.close(); // the refill thread is inside a 30 s call
        assertTrue("close took " + millisSince(closing) + " ms", millisSince(closing) < 1000);
      } finally {
        hung.signal("CONT");
      }
    }
  }

  private static int freePort() throws IOException {
    try (ServerSocket socket = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      return socket.getLocalPort();
    }
  }
}

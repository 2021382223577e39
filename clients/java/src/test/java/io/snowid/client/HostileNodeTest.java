/*
 * SnowidClient against tests/support/hostile_node.py (HostileNode), the hostile stand-in for a node
 * that every client is tested against: whatever a node or a proxy sends, the client hands out only
 * what docs/clients.md ("What a client accepts") lets it take, counts the rest as invalid answers
 * and moves on to another endpoint. Every bad mode is met twice: asked in binary (the client's
 * way: the mode's binary fault, or the JSON text a proxy that dropped format=binary would pass on)
 * and asked in JSON (the way to a node that refused binary), so both readers are held to the rule.
 */
package io.snowid.client;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import io.snowid.client.SnowidException.Code;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import org.junit.Test;
import org.junit.experimental.runners.Enclosed;
import org.junit.runner.RunWith;

@RunWith(Enclosed.class)
public class HostileNodeTest {
  // The first ID of hostile_node.py's valid sequence.
  private static final long FIRST_ID = 1_000_000;

  // Small batches, so that a few hundred IDs take several refills; short backoffs; emptyWait from
  // the start (startWait is ColdStartTest's).
  private static SnowidClientOptions.Builder options(String... endpoints) {
    return SnowidClientOptions.builder()
        .endpoints(endpoints)
        .startWait(Duration.ZERO)
        .initialBatch(100)
        .backoffInitial(Duration.ofMillis(50))
        .backoffMax(Duration.ofMillis(200))
        .callDeadline(Duration.ofMillis(500))
        .emptyWait(Duration.ofSeconds(5));
  }

  private static long millisSince(long startNanos) {
    return (System.nanoTime() - startNanos) / 1_000_000;
  }

  private static void assertAsked(HostileNode node, long batches) throws Exception {
    final long asked = node.idRequests();
    assertTrue(node.mode + " was asked for " + asked + " batches, not " + batches, asked >= batches);
  }

  private static long[] draw(SnowidClient client, int count) {
    final long[] ids = new long[count];
    for (int i = 0; i < count; i++) ids[i] = client.next();
    return ids;
  }

  // What the valid node gives one buffer: strictly increasing, from its first ID up (below 2^63 as
  // every long that is not negative).
  private static void assertFromTheValidSequence(String what, long[] ids) {
    for (int i = 0; i < ids.length; i++) {
      assertTrue(what + ": ID " + ids[i] + " below the valid node's first", ids[i] >= FIRST_ID);
      assertTrue(what + ": " + ids[i] + " after " + (i > 0 ? ids[i - 1] : 0),
          i == 0 || ids[i] > ids[i - 1]);
    }
  }

  // next() hands out nothing and fails with UNAVAILABLE within emptyWait (and 700 ms for a loaded
  // machine, where eight such cases run at once).
  private static void assertUnavailable(SnowidClient client, Duration emptyWait, String what) {
    final long began = System.nanoTime();
    final SnowidException e = assertThrows(what, SnowidException.class, client::next);
    assertEquals(what + ": " + e.getMessage(), Code.UNAVAILABLE, e.code());
    assertTrue(what + ": failed after " + millisSince(began) + " ms",
        millisSince(began) < emptyWait.toMillis() + 700);
  }

  // The client counts an invalid answer within 5 s: the refill thread counts it when the call ends,
  // which may come just after a caller gave up waiting.
  private static void assertInvalidAnswer(SnowidClient client, String what) throws InterruptedException {
    final long began = System.nanoTime();
    while (client.stats().invalidAnswers() == 0 && millisSince(began) < 5000) Thread.sleep(10);
    assertTrue(what + ": " + client.stats(), client.stats().invalidAnswers() >= 1);
  }

  /**
   * Each mode of hostile_node.py whose every batch a client must refuse, in binary and in JSON, each
   * case with the hostile node beside a valid one and alone. The 80 cases are independent (a client
   * each; one hostile node per mode, shared) and mostly wait (for emptyWait, a deadline, Python), so
   * they run CONCURRENT at a time; a failure names its case.
   */
  public static class EveryBadMode {
    private static final List<String> MODES = List.of("duplicates", "padded", "hex", "blank",
        "floats", "numbers", "negative", "at_2_63", "at_2_64", "leading_zeros", "plus_sign",
        "underscores", "unicode_digits", "too_many", "descending", "truncated_json", "html",
        "slow_body", "endless_body", "huge_body");
    private static final int CONCURRENT = 8;

    /** One check of one mode in one format. */
    private interface Case {
      void check(HostileNode bad, HostileNode valid, boolean json) throws Exception;
    }

    @Test
    public void everyBadBatchIsRefusedInBinaryAndInJson() throws Exception {
      final java.util.concurrent.ExecutorService pool =
          java.util.concurrent.Executors.newFixedThreadPool(Math.max(CONCURRENT, MODES.size()));
      final java.util.Map<String, HostileNode> hostile = new java.util.HashMap<>();
      try (HostileNode valid = new HostileNode("valid")) { // its IDs grow across the cases
        final List<java.util.concurrent.Future<HostileNode>> starting = new java.util.ArrayList<>();
        for (String mode : MODES) starting.add(pool.submit(() -> new HostileNode(mode)));
        for (java.util.concurrent.Future<HostileNode> node : starting) {
          final HostileNode h = node.get();
          hostile.put(h.mode, h);
        }
        final java.util.concurrent.Semaphore slots = new java.util.concurrent.Semaphore(CONCURRENT);
        final java.util.Map<String, java.util.concurrent.Future<?>> cases =
            new java.util.LinkedHashMap<>();
        for (String mode : MODES) {
          for (boolean json : new boolean[] {false, true}) {
            for (boolean alone : new boolean[] {false, true}) {
              final Case check = alone ? EveryBadMode::withOnlyTheHostileNodeNothingIsHandedOut
                  : EveryBadMode::onlyTheValidNodesIdsAreHandedOut;
              final String name = mode + (json ? " in JSON" : " in binary")
                  + (alone ? ", alone" : ", beside a valid node");
              cases.put(name, pool.submit(() -> {
                slots.acquire();
                try {
                  check.check(hostile.get(mode), valid, json);
                } finally {
                  slots.release();
                }
                return null;
              }));
            }
          }
        }
        final List<String> failures = new java.util.ArrayList<>();
        for (java.util.Map.Entry<String, java.util.concurrent.Future<?>> c : cases.entrySet()) {
          try {
            c.getValue().get();
          } catch (java.util.concurrent.ExecutionException e) {
            failures.add(c.getKey() + ": " + e.getCause());
          }
        }
        assertEquals(cases.size() + " cases", List.of(), failures);
      } finally {
        pool.shutdownNow();
        for (HostileNode node : hostile.values()) node.close();
      }
    }

    private static SnowidClientOptions.Builder inFormat(
        SnowidClientOptions.Builder options, boolean json) {
      return json ? options.jsonOnly() : options;
    }

    // Refills of 100 IDs drawn at random between the two nodes, until the hostile node has been
    // asked (each refill a coin toss: 60 refills leave it unasked once in 2^60): its batches are
    // discarded and counted, and every ID handed out comes from the valid node.
    private static void onlyTheValidNodesIdsAreHandedOut(
        HostileNode bad, HostileNode valid, boolean json) throws Exception {
      final long askedBefore = bad.idRequests();
      try (SnowidClient client = SnowidClient.open(
          inFormat(options(bad.url(), valid.url()).maxBatch(100), json).build())) {
        final long began = System.nanoTime();
        while (bad.idRequests() == askedBefore && client.stats().idsServed() < 6000
            && millisSince(began) < 20_000) {
          assertFromTheValidSequence(bad.mode, draw(client, 100));
        }
        assertFromTheValidSequence(bad.mode, draw(client, 300));
        assertInvalidAnswer(client, bad.mode);
        assertAsked(bad, askedBefore + 1);
      }
    }

    private static void withOnlyTheHostileNodeNothingIsHandedOut(
        HostileNode bad, HostileNode valid, boolean json) throws Exception {
      final long askedBefore = bad.idRequests();
      final Duration emptyWait = Duration.ofMillis(300);
      try (SnowidClient client = SnowidClient.open(inFormat(options(bad.url())
          .callDeadline(Duration.ofMillis(200)).emptyWait(emptyWait), json).build())) {
        assertUnavailable(client, emptyWait, bad.mode);
        assertInvalidAnswer(client, bad.mode);
        assertAsked(bad, askedBefore + 1);
      }
    }
  }

  /** The modes that test one rule each. */
  public static class OneRuleEach {
    // A proxy in front of two nodes: every other batch is below the one before, but above the last
    // one of its own issuer. Every batch is taken. (A deadline of seconds: a batch cut short by a
    // loaded machine would count as an invalid answer too.)
    @Test
    public void batchesOfTwoIssuersInTurnAreAllTaken() throws Exception {
      try (HostileNode proxy = new HostileNode("two_issuers");
          SnowidClient client = SnowidClient.open(
              options(proxy.url()).callDeadline(Duration.ofSeconds(5)).build())) {
        final long[] ids = draw(client, 1000); // four batches at least: 100, 200, 400, ...
        final SnowidClient.Stats stats = client.stats();
        assertEquals(stats.toString(), 0, stats.invalidAnswers());
        assertAsked(proxy, 4);
        final long[] sorted = ids.clone();
        Arrays.sort(sorted);
        for (int i = 1; i < sorted.length; i++) {
          assertTrue("ID " + sorted[i] + " twice", sorted[i] != sorted[i - 1]);
        }
        assertTrue("no ID of the second issuer", sorted[sorted.length - 1] >= 5_000_000_000L);
      }
    }

    // Each batch starts again at the first ID, with the same issuer: the first is taken, the
    // second and every later one refused.
    @Test
    public void aBatchNotAboveItsIssuersLastIsRefused() throws Exception {
      final Duration emptyWait = Duration.ofMillis(600);
      try (HostileNode behind = new HostileNode("behind");
          SnowidClient client = SnowidClient.open(options(behind.url()).emptyWait(emptyWait).build())) {
        final long[] first = draw(client, 100);
        assertFromTheValidSequence("the first batch", first);
        assertEquals(FIRST_ID + 99, first[99]);
        assertUnavailable(client, emptyWait, "behind");
        assertInvalidAnswer(client, "behind");
        assertAsked(behind, 2);
      }
    }

    // A node from before format=binary refuses it with 400 naming the format: the client asks it in
    // JSON from then on (one binary request in all) and serves its IDs without an error.
    @Test
    public void anOldNodeIsAskedInJsonFromItsRefusalOn() throws Exception {
      try (HostileNode old = new HostileNode("old_node");
          SnowidClient client = SnowidClient.open(options(old.url()).build())) {
        assertFromTheValidSequence("old_node", draw(client, 1000));
        final SnowidClient.Stats stats = client.stats();
        assertEquals(stats.toString(), 0, stats.failedCalls());
        assertEquals(stats.toString(), 0, stats.invalidAnswers());
        // One binary call beyond the JSON ones (a JSON request sent again on a fresh connection,
        // after the node closed a kept-alive one, is one call to the client and two to the node).
        assertTrue(stats + " against " + old.idRequests() + " JSON requests",
            stats.calls() <= old.idRequests() + 1);
        assertEquals(stats.toString(), 1000, stats.idsServed());
      }
    }

    // A body sent a byte every 0.3 s: the call deadline covers the whole body, so the call ends
    // (an invalid answer: a 200 not taken) at the deadline, in binary and in JSON.
    @Test
    public void aSlowBodyIsLeftAtTheCallDeadline() throws Exception {
      final Duration deadline = Duration.ofMillis(500);
      for (boolean json : new boolean[] {false, true}) {
        final SnowidClientOptions.Builder options = options().callDeadline(deadline);
        try (HostileNode slow = new HostileNode("slow_body")) {
          final long began = System.nanoTime();
          try (SnowidClient client = SnowidClient.open(
              (json ? options.jsonOnly() : options).endpoints(slow.url()).build())) {
            while (client.stats().invalidAnswers() == 0 && millisSince(began) < 5000) {
              Thread.sleep(5);
            }
            final long took = millisSince(began);
            assertEquals(client.stats().toString(), 1, client.stats().invalidAnswers());
            assertTrue("the call ended after " + took + " ms", took >= deadline.toMillis());
            assertTrue("the call ended after " + took + " ms", took < deadline.toMillis() + 1000);
          }
        }
      }
    }

    // An endless chunked body and one that says it is 300 MB, in binary and in JSON: with a call
    // deadline of 20 s only the body's bound can end the call soon, and what the client allocates
    // meanwhile is far below what reading either would take.
    @Test
    public void anEndlessOrHugeBodyFailsAtOnceWithoutFillingTheHeap() throws Exception {
      for (String mode : List.of("endless_body", "huge_body")) {
        for (boolean json : new boolean[] {false, true}) {
          try (HostileNode hostile = new HostileNode(mode)) {
            final SnowidClientOptions.Builder options = options(hostile.url())
                .callDeadline(Duration.ofSeconds(20));
            final long allocatedBefore = allocatedBytes();
            final long began = System.nanoTime();
            try (SnowidClient client =
                SnowidClient.open((json ? options.jsonOnly() : options).build())) {
              while (client.stats().invalidAnswers() == 0 && millisSince(began) < 5000) {
                Thread.sleep(5);
              }
              final long took = millisSince(began);
              final long allocated = allocatedBytes() - allocatedBefore;
              final String what = mode + (json ? " in JSON" : " in binary");
              assertTrue(what + ": " + client.stats(), client.stats().invalidAnswers() >= 1);
              assertTrue(what + ": the call ended after " + took + " ms", took < 2000);
              assertTrue(what + ": " + allocated + " bytes allocated", allocated < 64L << 20);
            }
          }
        }
      }
    }

    // The bytes the live threads of this JVM have allocated (the client's HTTP threads among them).
    private static long allocatedBytes() {
      final com.sun.management.ThreadMXBean threads =
          (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
      long sum = 0;
      for (long bytes : threads.getThreadAllocatedBytes(threads.getAllThreadIds())) {
        if (bytes > 0) sum += bytes;
      }
      return sum;
    }
  }
}

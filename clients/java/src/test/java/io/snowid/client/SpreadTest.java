/*
 * Spread and failover (docs/clients.md): 30 clients in this process (as 30 application instances
 * with the same endpoint list) draw from 3 live nodes; each node's share of the IDs it issued to
 * them (its /metrics, snowid_ids_issued_total of their agent) is within 20% of the mean. Then one
 * node is killed: the two left share what follows within 25% of their mean, and no call fails.
 *
 * Each client refills 1000 IDs at a time (initialBatch = maxBatch = 1000), so that a phase of
 * 3 s makes about 900 refills: a share's random spread is then about 5% (a flake of ±20% is some
 * four standard deviations away). One thread draws for all 30, paced at about 300,000 IDs/s.
 * emptyWait is 1 s, as in the other kill tests (docs/clients.md, "How they are tested"): on 2 cores
 * shared with builds a refill can take longer than the default 200 ms, and this tests failover,
 * not the machine's speed.
 */
package io.snowid.client;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.Test;

public class SpreadTest {
  private static final int CLIENTS = 30;
  private static final String ISSUED = "snowid_ids_issued_total{agent=\"spread\"}";

  @Test
  public void refillsSpreadOverThreeNodesThenOverTheTwoLeft() throws Exception {
    try (Snowidd a = new Snowidd(0, 1); Snowidd b = new Snowidd(0, 2); Snowidd c = new Snowidd(0, 3)) {
      final List<SnowidClient> clients = new ArrayList<>();
      try {
        for (int i = 0; i < CLIENTS; i++) {
          clients.add(SnowidClient.open(SnowidClientOptions.builder()
              .endpoints(a.url(), b.url(), c.url()).agent("spread").emptyWait(Duration.ofSeconds(1))
              .initialBatch(1000).maxBatch(1000).build()));
        }
        final List<String> errors = new ArrayList<>();
        final long[] start = issued(a, b, c);
        draw(clients, 3000, errors);
        final long[] three = minus(issued(a, b, c), start);
        System.out.println("IDs issued by each of 3 nodes: " + Arrays.toString(three));
        assertWithinOfMean(three, 0.20);

        c.kill();
        final long[] killed = issued(a, b);
        draw(clients, 3000, errors);
        final long[] two = minus(issued(a, b), killed);
        System.out.println("IDs issued by each of the 2 nodes left: " + Arrays.toString(two));
        assertWithinOfMean(two, 0.25);
        assertEquals(List.of(), errors);
      } finally {
        for (SnowidClient client : clients) client.close();
      }
    }
  }

  // Round after round, 100 IDs from each client, then 10 ms of sleep, for `millis`.
  private static void draw(List<SnowidClient> clients, long millis, List<String> errors)
      throws InterruptedException {
    final long[] ids = new long[100];
    final long end = System.nanoTime() + millis * 1_000_000;
    while (System.nanoTime() < end) {
      for (SnowidClient client : clients) {
        try {
          client.next(ids);
        } catch (SnowidException e) {
          errors.add("at " + System.currentTimeMillis() + ": " + e);
        }
      }
      Thread.sleep(10);
    }
  }

  private static long[] issued(Snowidd... nodes) throws Exception {
    final long[] issued = new long[nodes.length];
    for (int i = 0; i < nodes.length; i++) issued[i] = nodes[i].metric(ISSUED);
    return issued;
  }

  private static long[] minus(long[] after, long[] before) {
    final long[] difference = new long[after.length];
    for (int i = 0; i < after.length; i++) difference[i] = after[i] - before[i];
    return difference;
  }

  private static void assertWithinOfMean(long[] shares, double tolerance) {
    final double mean = Arrays.stream(shares).average().orElse(0);
    assertTrue("no IDs issued", mean > 0);
    for (long share : shares) {
      assertTrue(Arrays.toString(shares) + ": " + share + " is more than " + (int) (tolerance * 100)
          + "% off the mean " + (long) mean, Math.abs(share - mean) <= tolerance * mean);
    }
  }
}

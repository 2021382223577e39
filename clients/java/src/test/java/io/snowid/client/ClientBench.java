/*
 * ClientBench: the sustained rate of SnowidClient.next() at default options against what it
 * replaces, a plain in-process Snowflake generator, in one run (clients/java/bench.sh):
 *
 *   (a) SnowidClient.next(), default options, endpoints = NODES live snowidd nodes started here
 *       from $SNOWIDD with their default layout (12 sequence bits: at most 4,096 IDs a millisecond
 *       each, sustained; each may run up to 1 s ahead of its clock first, max_drift);
 *   (b) the generator: synchronized, 41-bit ms timestamp, 10-bit worker, 12-bit sequence, and when
 *       a millisecond's 4,096 are used up it spins until the clock reads the next one (Twitter's
 *       Snowflake, Hutool's Snowflake): at most 4,096 IDs a millisecond, whatever the threads.
 *
 * Each is measured with 1 and with 4 threads, every thread calling next() as fast as it can for
 * SECONDS, after a warm-up of the same length (the JIT, the client's batch size and parallel
 * refills). The client's warm-up goes on, a second at a time up to 15 s, until the nodes' lead (the
 * time in the newest ID over the clock) stops growing or passes 900 ms: a client that takes IDs
 * faster than its nodes issue them sustained is then measured at what they issue, not on the 1 s
 * they may run ahead. The lead at the start and the end of the measurement is printed. The rate is
 * all threads' IDs over the wall time; the ratio is (a) / (b). Calls that fail are counted and
 * printed (at default options emptyWait is 200 ms).
 *
 * Usage: java -cp CLASSES io.snowid.client.ClientBench [SECONDS] [NODES]  (default 3 s, 2 nodes)
 */
package io.snowid.client;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

public final class ClientBench {
  /** A call that yields one ID. */
  private interface IdSource {
    long next();
  }

  /** The generator an application would write in place of a client: lock, clock, 12-bit sequence. */
  static final class LockedSnowflake implements IdSource {
    private static final long EPOCH_MS = 1288834974657L;
    private final long worker;
    private long lastMs = -1;
    private long sequence;

    LockedSnowflake(long worker) {
      this.worker = worker;
    }

    @Override
    public synchronized long next() {
      long now = System.currentTimeMillis();
      if (now == lastMs) {
        sequence = (sequence + 1) & 4095;
        if (sequence == 0) {
          while ((now = System.currentTimeMillis()) <= lastMs) Thread.onSpinWait();
        }
      } else {
        sequence = 0;
      }
      if (now < lastMs) throw new IllegalStateException("the clock moved back");
      lastMs = now;
      return ((now - EPOCH_MS) << 22) | (worker << 12) | sequence;
    }
  }

  public static void main(String[] args) throws Exception {
    final double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 3;
    final int nodeCount = args.length > 1 ? Integer.parseInt(args[1]) : 2;
    final List<Snowidd> nodes = new ArrayList<>();
    try {
      final List<String> urls = new ArrayList<>();
      for (int i = 0; i < nodeCount; i++) {
        final Snowidd node = new Snowidd(0, i + 1);
        nodes.add(node);
        urls.add(node.url());
      }
      System.out.printf("%d snowidd nodes, default options, %.1f s per measurement after as long a"
          + " warm-up%n", nodeCount, seconds);
      System.out.printf("%-8s %16s %16s %7s %8s %15s %s%n", "threads", "client IDs/s",
          "generator IDs/s", "ratio", "errors", "node lead, ms", "client stats");
      final SnowidClientOptions options =
          SnowidClientOptions.builder().endpoints(urls.toArray(new String[0])).build();
      for (int threads : new int[] {1, 4}) {
        final LockedSnowflake generator = new LockedSnowflake(1);
        run(generator::next, threads, seconds, new AtomicLong()); // warm-up
        final double generated = run(generator::next, threads, seconds, new AtomicLong());
        try (SnowidClient client = SnowidClient.open(options)) {
          final AtomicLong errors = new AtomicLong();
          run(client::next, threads, seconds, errors); // warm-up
          long lead = lead(client);
          for (int s = 0; s < 15 && lead < 900; s++) {
            run(client::next, threads, 1, errors);
            final long now = lead(client);
            if (now <= lead + 20) break; // stable: the nodes keep up
            lead = now;
          }
          final long leadBefore = lead(client);
          final SnowidClient.Stats before = client.stats();
          final double served = run(client::next, threads, seconds, errors);
          final SnowidClient.Stats after = client.stats();
          System.out.printf("%-8d %,16.0f %,16.0f %7.2f %8d %15s calls %d, failed %d, IDs a call"
              + " %,.0f%n", threads, served, generated, served / generated, errors.get(),
              leadBefore + " → " + lead(client),
              after.calls() - before.calls(), after.failedCalls() - before.failedCalls(),
              (after.idsReceived() - before.idsReceived())
                  / (double) Math.max(1, after.calls() - before.calls()));
        }
      }
    } finally {
      for (Snowidd node : nodes) node.close();
    }
  }

  // How far the newest ID's time is ahead of the clock, in ms.
  private static long lead(SnowidClient client) {
    return client.decode(client.next()).timestampMs() - System.currentTimeMillis();
  }

  // `threads` threads call `source` for `seconds`; all their IDs over the wall time (IDs/s).
  private static double run(IdSource source, int threads, double seconds, AtomicLong errors)
      throws Exception {
    final long durationNs = (long) (seconds * 1e9);
    final long[] counts = new long[threads];
    final long[] sinks = new long[threads];
    final List<Thread> workers = new ArrayList<>();
    final long start = System.nanoTime();
    for (int t = 0; t < threads; t++) {
      final int index = t;
      workers.add(new Thread(() -> {
        long sink = 0;
        long n = 0;
        while (System.nanoTime() - start < durationNs) {
          for (int i = 0; i < 256; i++) {
            try {
              sink ^= source.next();
              n++;
            } catch (SnowidException e) {
              errors.incrementAndGet();
            }
          }
        }
        counts[index] = n;
        sinks[index] = sink;
      }));
    }
    workers.forEach(Thread::start);
    for (Thread w : workers) w.join();
    final double elapsed = (System.nanoTime() - start) / 1e9;
    long total = 0;
    long sink = 0;
    for (int t = 0; t < threads; t++) {
      total += counts[t];
      sink ^= sinks[t];
    }
    if (sink == 42) System.out.print(""); // keeps the JIT from dropping the calls
    return total / elapsed;
  }
}

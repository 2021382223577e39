/*
 * ClientBench: what one ID costs a Java thread, in one run, three ways (clients/java/bench.sh):
 *
 *   (a) SnowidClient.next() from the buffer, refilled over HTTP from a live snowidd;
 *   (b) the fastest in-process Snowflake generator this file can write in Java (the floor): one
 *       compare-and-set on a packed (ms, sequence) state per ID, as snowidd's own generator;
 *   (c) one HTTP round trip per ID: GET /v1/id on a keep-alive connection (java.net.http).
 *
 * Each is warmed up (JIT) before it is measured; (a) and (b) run with 1 and with 2 threads, ns/ID is
 * per thread (a thread's wall time over its IDs). For (a) the node's /metrics give the round trips
 * (GET /v1/ids answered) during the measured window, hence IDs per round trip under steady load.
 * The node is started here from $SNOWIDD with 16 sequence bits (65.5 M IDs/s, so that its cap is not
 * what is measured) and max_batch 1,000,000; the client for (a) fetches batches of 1,000,000. The
 * round trips under steady load are counted with the default options (max_batch 10000), for a
 * paced consumer of 100,000 and of 1,000,000 IDs/s.
 *
 * Usage: java -cp CLASSES io.snowid.client.ClientBench [SECONDS]  (default 3 per measurement)
 */
package io.snowid.client;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

public final class ClientBench {
  private static final String ROUND_TRIPS =
      "snowid_requests_total{protocol=\"http\",call=\"next_ids\",outcome=\"ok\"}";

  /** A call that yields one ID. */
  private interface IdSource {
    long next() throws Exception;
  }

  /**
   * The floor: a Snowflake generator in process. State = (ms since epoch) << 16 | sequence, moved by
   * one CAS per ID; a full millisecond borrows the next one (snowidd's monotonic policy).
   */
  static final class Floor implements IdSource {
    private static final int SEQUENCE_BITS = 16;
    private static final long EPOCH_MS = 1288834974657L;
    private final AtomicLong state = new AtomicLong();
    private final long node = 1L << SEQUENCE_BITS; // worker 1 above the sequence

    @Override
    public long next() {
      final long now = System.currentTimeMillis() - EPOCH_MS;
      for (; ; ) {
        final long old = state.get();
        final long oldMs = old >>> SEQUENCE_BITS;
        long next;
        if (now > oldMs) {
          next = now << SEQUENCE_BITS;
        } else {
          next = old + 1;
          if ((next & ((1L << SEQUENCE_BITS) - 1)) == 0) next = (oldMs + 1) << SEQUENCE_BITS;
        }
        if (state.compareAndSet(old, next)) {
          return ((next >>> SEQUENCE_BITS) << (SEQUENCE_BITS + 6)) | node | (next & 0xffff);
        }
      }
    }
  }

  public static void main(String[] args) throws Exception {
    final double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 3;
    try (Snowidd node = new Snowidd(0, 1, "--timestamp-bits", "41", "--datacenter-bits", "3",
        "--worker-bits", "3", "--sequence-bits", "16", "--max-batch", "1000000")) {
      final SnowidClientOptions options = SnowidClientOptions.builder().endpoints(node.url())
          .initialBatch(1_000_000).maxBatch(1_000_000).callDeadline(Duration.ofSeconds(5))
          .emptyWait(Duration.ofSeconds(5)).build();
      System.out.printf("%-48s %8s %14s%n", "what each thread calls", "threads", "ns/ID/thread");
      try (SnowidClient client = SnowidClient.open(options)) {
        final Floor floor = new Floor();
        for (int threads : new int[] {1, 2}) {
          final double[] side = measureBuffer(client, floor, threads);
          final double a = side[0];
          final double b = side[1];
          System.out.printf("%-48s %8d %14.1f%n", "(a) SnowidClient.next(), from the buffer", threads, a);
          System.out.printf("%-48s %8d %14.1f%n", "(b) in-process generator (the floor)", threads, b);
          System.out.printf("    ratio (a)/(b) with %d thread(s): %.2f%n", threads, a / b);
          final double sustained = measure(client::next, threads, seconds);
          System.out.printf("%-48s %8d %14.1f%n", "(a') next(), draining faster than refills", threads,
              sustained);
        }
      }
      // Steady load through a client with the default options (max_batch 10000, as snowidd's
      // HTTP default), each rate on a fresh client.
      for (long rate : new long[] {100_000, 1_000_000}) {
        try (SnowidClient fresh =
            SnowidClient.open(SnowidClientOptions.builder().endpoints(node.url())
                .emptyWait(Duration.ofSeconds(5)).build())) {
          final double[] steady = steadyLoad(fresh, node, rate, seconds);
          System.out.printf("steady %,d IDs/s, default options: %,.0f IDs, %,.0f round trips, %,.0f"
              + " IDs per round trip%n", rate, steady[0], steady[1], steady[0] / Math.max(1, steady[1]));
        }
      }
      final double c = measureRoundTrips(node, seconds);
      System.out.printf("%-48s %8d %14.1f%n", "(c) GET /v1/id per ID, keep-alive", 1, c);
    }
  }

  // ns/ID per thread of next() served from a full buffer, and of the floor, side by side: each
  // round lets the refill thread fill the ring (batches fixed at 1,000,000, so it keeps at least
  // 500,000 IDs), then the threads take 200,000 in all, so that no call waits and no refill is due; then
  // the floor's threads take as many. Medians of 9 rounds, after 3 that warm the JIT up.
  private static double[] measureBuffer(SnowidClient client, Floor floor, int threads)
      throws Exception {
    final List<Double> buffer = new ArrayList<>();
    final List<Double> generator = new ArrayList<>();
    for (int round = 0; round < 12; round++) {
      Thread.sleep(1000);
      final double a = runCount(client::next, threads, 200_000 / threads);
      final double b = runCount(floor, threads, 200_000 / threads);
      if (round >= 3) {
        buffer.add(a);
        generator.add(b);
      }
    }
    return new double[] {median(buffer), median(generator)};
  }

  private static double median(List<Double> values) {
    values.sort(null);
    return values.get(values.size() / 2);
  }

  // A paced consumer: `rate` IDs/s for `seconds`; the IDs taken and the round trips (GET /v1/ids)
  // the client made meanwhile, after a warm-up of the same length that lets the batch adapt.
  private static double[] steadyLoad(SnowidClient client, Snowidd node, long rate, double seconds)
      throws Exception {
    paced(client, rate, seconds);
    final long before = node.metric(ROUND_TRIPS);
    final long ids = paced(client, rate, seconds);
    return new double[] {ids, node.metric(ROUND_TRIPS) - before};
  }

  private static long paced(SnowidClient client, long rate, double seconds) throws Exception {
    final long start = System.nanoTime();
    final long end = start + (long) (seconds * 1e9);
    long taken = 0;
    for (long now = start; now < end; now = System.nanoTime()) {
      final long due = (long) ((now - start) * 1e-9 * rate);
      for (; taken < due; taken++) client.next();
      Thread.sleep(1);
    }
    return taken;
  }

  private static double measure(IdSource source, int threads, double seconds) throws Exception {
    run(source, threads, seconds); // warm-up
    return run(source, threads, seconds);
  }

  private static double measureRoundTrips(Snowidd node, double seconds) throws Exception {
    final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    final HttpRequest request = HttpRequest.newBuilder(URI.create(node.url() + "/v1/id")).build();
    final IdSource roundTrip = () -> {
      final HttpResponse<byte[]> response = http.send(request, HttpResponse.BodyHandlers.ofByteArray());
      if (response.statusCode() != 200) throw new IllegalStateException("HTTP " + response.statusCode());
      return response.body().length;
    };
    return measure(roundTrip, 1, seconds);
  }

  /** One thread's part of a measurement: its wall ns per ID. */
  private interface Part {
    double run() throws Exception;
  }

  // Each of `threads` threads calls `source` for `seconds`; the mean over threads of ns per ID.
  private static double run(IdSource source, int threads, double seconds) throws Exception {
    final long durationNs = (long) (seconds * 1e9);
    return onThreads(threads, () -> {
      long sink = 0;
      long n = 0;
      final long start = System.nanoTime();
      long now = start;
      while (now - start < durationNs) {
        for (int i = 0; i < 1000; i++) sink ^= source.next();
        n += 1000;
        now = System.nanoTime();
      }
      return keep(sink, (double) (now - start) / n);
    });
  }

  // Each of `threads` threads takes `perThread` IDs; the mean over threads of ns per ID.
  private static double runCount(IdSource source, int threads, long perThread) throws Exception {
    return onThreads(threads, () -> {
      long sink = 0;
      final long start = System.nanoTime();
      for (long i = 0; i < perThread; i++) sink ^= source.next();
      return keep(sink, (double) (System.nanoTime() - start) / perThread);
    });
  }

  // Returns `value`; uses `sink` so that the JIT cannot drop the calls that made it.
  private static double keep(long sink, double value) {
    if (sink == 42) System.out.print("");
    return value;
  }

  private static double onThreads(int threads, Part part) throws Exception {
    final double[] nsPerId = new double[threads];
    final List<Thread> workers = new ArrayList<>();
    final List<Exception> failures = java.util.Collections.synchronizedList(new ArrayList<>());
    for (int t = 0; t < threads; t++) {
      final int index = t;
      workers.add(new Thread(() -> {
        try {
          nsPerId[index] = part.run();
        } catch (Exception e) {
          failures.add(e);
        }
      }));
    }
    workers.forEach(Thread::start);
    for (Thread w : workers) w.join();
    if (!failures.isEmpty()) throw failures.get(0);
    double sum = 0;
    for (double v : nsPerId) sum += v;
    return sum / threads;
  }
}

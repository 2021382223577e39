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
 * what is measured) and max_batch 1,000,000.
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
          .maxBatch(1_000_000).refillPeriod(Duration.ofMillis(20)).build();
      System.out.printf("%-44s %8s %14s %16s%n", "what each thread calls", "threads",
          "ns/ID/thread", "IDs/round trip");
      try (SnowidClient client = SnowidClient.open(options)) {
        final Floor floor = new Floor();
        for (int threads : new int[] {1, 2}) {
          final double[] a = measureClient(client, node, threads, seconds);
          final double b = measure(floor, threads, seconds);
          System.out.printf("%-44s %8d %14.1f %16.0f%n", "(a) SnowidClient.next(), buffer", threads,
              a[0], a[1]);
          System.out.printf("%-44s %8d %14.1f %16s%n", "(b) in-process generator (floor)", threads,
              b, "-");
          System.out.printf("    ratio (a)/(b) with %d thread(s): %.2f%n", threads, a[0] / b);
        }
      }
      final double c = measureRoundTrips(node, seconds);
      System.out.printf("%-44s %8d %14.1f %16d%n", "(c) GET /v1/id, keep-alive", 1, c, 1);
    }
  }

  // ns/ID per thread of the client, and the IDs per round trip during the measured window.
  private static double[] measureClient(SnowidClient client, Snowidd node, int threads,
      double seconds) throws Exception {
    run(client::next, threads, seconds); // warm-up: JIT, and the batch grows to its steady size
    final long tripsBefore = node.metric(ROUND_TRIPS);
    final long[] counts = new long[threads];
    final double nsPerId = run(client::next, threads, seconds, counts);
    final long trips = node.metric(ROUND_TRIPS) - tripsBefore;
    long ids = 0;
    for (long n : counts) ids += n;
    return new double[] {nsPerId, trips == 0 ? ids : (double) ids / trips};
  }

  private static double measure(IdSource source, int threads, double seconds) throws Exception {
    run(source, threads, seconds); // warm-up
    return run(source, threads, seconds, new long[threads]);
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

  private static double run(IdSource source, int threads, double seconds) throws Exception {
    return run(source, threads, seconds, new long[threads]);
  }

  // Runs `source` on `threads` threads for `seconds`; the mean over threads of wall ns per ID.
  private static double run(IdSource source, int threads, double seconds, long[] counts)
      throws Exception {
    final long durationNs = (long) (seconds * 1e9);
    final double[] nsPerId = new double[threads];
    final List<Thread> workers = new ArrayList<>();
    final List<Exception> failures = java.util.Collections.synchronizedList(new ArrayList<>());
    for (int t = 0; t < threads; t++) {
      final int index = t;
      workers.add(new Thread(() -> {
        try {
          long sink = 0;
          long n = 0;
          final long start = System.nanoTime();
          long now = start;
          while (now - start < durationNs) {
            for (int i = 0; i < 1000; i++) sink ^= source.next();
            n += 1000;
            now = System.nanoTime();
          }
          counts[index] = n;
          nsPerId[index] = (double) (now - start) / n;
          if (sink == 42) System.out.print(""); // keeps the IDs alive
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
